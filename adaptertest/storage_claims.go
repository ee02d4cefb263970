package adaptertest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

const ruleCreate = "keystore.Creator: Create stores the value, without expiry, where no live value is and reports true; where a value is, with or without a TTL, it reports false and changes nothing"

func storageCreate(t testing.TB, f *storageFixture) {
	c := f.s.(keystore.Creator)
	created, err := c.Create(f.ctx, "made", "first")
	if err != nil || !created {
		t.Fatalf("Create on an absent key = %v, %v; want true", created, err)
	}
	if created, err = c.Create(f.ctx, "made", "second"); err != nil || created {
		t.Fatalf("Create on a stored key = %v, %v; want false", created, err)
	}
	if v, ok, err := f.s.Get(f.ctx, "made"); err != nil || !ok || v != "first" {
		t.Fatalf("Get after two Creates = %q, %v, %v; want the first value", v, ok, err)
	}
	if err := f.s.Set(f.ctx, "timed", "kept", time.Hour); err != nil {
		t.Fatal(err)
	}
	if created, err = c.Create(f.ctx, "timed", "other"); err != nil || created {
		t.Fatalf("Create on a key with a TTL = %v, %v; want false", created, err)
	}
	if v, _, _ := f.s.Get(f.ctx, "timed"); v != "kept" {
		t.Fatalf("Create changed a stored value to %q", v)
	}
}

// claimBase is the claims' clock: epoch milliseconds in 2027, which every
// storage computes exactly (Redis's scripts need values below 2^51).
const claimBase = int64(1_800_000_000_000)

func ptr64(v int64) *int64 { return &v }

// storeRecord writes k's JSON at key with ttl (0: none).
func storeRecord(t testing.TB, f *storageFixture, key string, k keystore.Key, ttl time.Duration) {
	t.Helper()
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.Set(f.ctx, key, string(b), ttl); err != nil {
		t.Fatalf("Set(%q) of a stored key: %v", key, err)
	}
}

// loadRecord reads the stored key at key.
func loadRecord(t testing.TB, f *storageFixture, key string) keystore.Key {
	t.Helper()
	v, ok := mustGet(t, f, key)
	if !ok {
		t.Fatalf("the stored key at %q is gone", key)
	}
	var k keystore.Key
	if err := json.Unmarshal([]byte(v), &k); err != nil {
		t.Fatalf("the stored key at %q: %v in %s", key, err, short(v))
	}
	return k
}

// claimKey is a stored key with the quota, rate limit and refill given.
func claimKey(id int64, remaining *int64) keystore.Key {
	return keystore.Key{
		ID: id, ConfigID: "default", Key: fmt.Sprintf("hash-%d", id), ReferenceID: "owner",
		Enabled: true, Remaining: remaining, CreatedAt: claimBase, UpdatedAt: claimBase,
	}
}

// jsonText is v's JSON encoding.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// jsonValue decodes the JSON text s into v.
func jsonValue(s string, v any) error {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("decoding %s: %w", short(s), err)
	}
	return nil
}

// show is v's JSON encoding, pointers followed, for messages.
func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const ruleClaimMissing = "keystore.Claimer: a missing key answers Found == false (and Patch ok == false), and neither creates it"

func storageClaimMissing(t testing.TB, f *storageFixture) {
	cl := f.s.(keystore.Claimer)
	res, err := cl.Claim(f.ctx, "missing", keystore.Request{Now: claimBase, Cost: 1})
	if err != nil || res.Found {
		t.Fatalf("Claim of a missing key = %s, %v; want Found false, nil", show(res), err)
	}
	if _, ok, err := cl.Patch(f.ctx, "missing", map[string]any{"enabled": false}); err != nil || ok {
		t.Fatalf("Patch of a missing key: ok %v, err %v; want false, nil", ok, err)
	}
	wantAbsent(t, f, "missing", "Claim and Patch must not create a key")
}

const ruleClaimFollowsApplyClaim = "keystore.Claimer: Claim reads the stored key and decides and applies the verification exactly as keystore.Apply does, writing the key back when it changed"

func storageClaimFollowsApplyClaim(t testing.TB, f *storageFixture) {
	quota := claimKey(1, ptr64(2))
	limited := claimKey(2, ptr64(10))
	limited.RateLimitEnabled, limited.RateLimitTimeWindow, limited.RateLimitMax = true, ptr64(1000), ptr64(2)
	refill := claimKey(3, ptr64(0))
	refill.RefillInterval, refill.RefillAmount = ptr64(500), ptr64(3)
	disabled := claimKey(4, nil)
	disabled.Enabled = false
	expiring := claimKey(5, nil)
	expiring.ExpiresAt = ptr64(claimBase + 300)
	records := []keystore.Key{quota, limited, refill, disabled, expiring}
	// The clock moves through every rule: windows ending, refills coming
	// due, expiry; costs 0 (a check), 1 and more.
	steps := []keystore.Request{
		{Now: claimBase, Cost: 1}, {Now: claimBase, Cost: 0}, {Now: claimBase + 10, Cost: 1},
		{Now: claimBase + 20, Cost: 1}, {Now: claimBase + 400, Cost: 2}, {Now: claimBase + 600, Cost: 1},
		{Now: claimBase + 1100, Cost: 3}, {Now: claimBase + 1200, Cost: 1}, {Now: claimBase + 2500, Cost: 2},
	}
	codes := map[keystore.Code]int{}
	for _, rec := range records {
		key := fmt.Sprintf("key:%d", rec.ID)
		storeRecord(t, f, key, rec, 0)
		want := rec
		for i, req := range steps {
			codes[claimAsApplyClaim(t, f, key, &want, nil, req, fmt.Sprintf("key %d step %d", rec.ID, i)).Code]++
		}
	}
	// The steps must reach every outcome, or the comparison proves little.
	for _, c := range []keystore.Code{"", keystore.Disabled, keystore.Expired, keystore.UsageExceeded, keystore.RateLimited} {
		if codes[c] == 0 {
			t.Errorf("the steps never reached outcome %q (reached: %v): the case is too weak", c, codes)
		}
	}
}

const ruleClaimChecksPermissions = "keystore.Claimer: a claim that requires permissions answers as keystore.Apply does: INSUFFICIENT_PERMISSIONS, spending nothing, when the stored permissions (JSON text of resource → actions, none when malformed) lack one of RequireAll or hold none of RequireAny"

func storageClaimChecksPermissions(t testing.TB, f *storageFixture) {
	texts := []*string{
		ptrString(`{"files":["read","write"],"admin":["view"]}`),
		nil,
		ptrString(`{"files":null,"admin":["view",null]}`), // null actions: none, and the empty one
		ptrString(`{"files":["read",1]}`),                 // malformed: holds nothing
		ptrString(`["files"]`),
		ptrString(`{"files":{"0":"read"}}`),
		ptrString(`not JSON`),
		ptrString(``),
		ptrString(`{"a\u0000b":["c"],"x":["y"]}`), // names holding NUL must not run together
	}
	perm := func(r, a string) keystore.Permission { return keystore.Permission{Resource: r, Action: a} }
	reqs := []keystore.Request{
		{},
		{RequireAll: []keystore.Permission{perm("files", "read")}},
		{RequireAll: []keystore.Permission{perm("admin", "view"), perm("files", "read")}},
		{RequireAll: []keystore.Permission{perm("files", "delete")}},
		{RequireAny: []keystore.Permission{perm("billing", "x"), perm("admin", "view")}},
		{RequireAny: []keystore.Permission{perm("billing", "x")}},
		{RequireAll: []keystore.Permission{perm("files", "write")}, RequireAny: []keystore.Permission{perm("admin", "view"), perm("x", "y")}},
		{RequireAll: []keystore.Permission{perm("files", "write")}, RequireAny: []keystore.Permission{perm("x", "y")}},
		{RequireAll: []keystore.Permission{perm("a\x00b", "c")}},
		{RequireAll: []keystore.Permission{perm("a", "b\x00c")}},
	}
	codes := map[keystore.Code]int{}
	for i, text := range texts {
		rec := claimKey(int64(20+i), ptr64(100))
		rec.Permissions = text
		key := fmt.Sprintf("perm:%d", rec.ID)
		storeRecord(t, f, key, rec, 0)
		want := rec
		for j, req := range reqs {
			req.Now, req.Cost = claimBase+int64(j), 1
			codes[claimAsApplyClaim(t, f, key, &want, nil, req, fmt.Sprintf("permissions %s, request %d", show(text), j)).Code]++
		}
	}
	if codes[""] == 0 || codes[keystore.Forbidden] == 0 {
		t.Errorf("outcomes %v: the requests must reach both an allowed claim and INSUFFICIENT_PERMISSIONS", codes)
	}
}

func ptrString(s string) *string { return &s }

// claimAsApplyClaim claims req on the key stored at key and checks that
// the storage answers, and leaves the key (and the owner's record at
// req.Owner), as keystore.Apply does on want (and owner, nil when no
// record is stored there), which it updates; what names the step in a
// failure. It returns the reference answer.
func claimAsApplyClaim(t testing.TB, f *storageFixture, key string, want, owner *keystore.Key, req keystore.Request, what string) keystore.Result {
	t.Helper()
	got, err := f.s.(keystore.Claimer).Claim(f.ctx, key, req)
	if err != nil {
		t.Fatalf("%s: Claim %+v: %v", what, req, err)
	}
	ref := keystore.Apply(want, owner, req)
	if !reflect.DeepEqual(got, ref) {
		t.Fatalf("%s: Claim %+v answered\n%s\nwant, as keystore.Apply,\n%s", what, req, show(got), show(ref))
	}
	if stored := loadRecord(t, f, key); !reflect.DeepEqual(stored, *want) {
		t.Fatalf("%s: after Claim %+v the stored key is\n%s\nwant\n%s", what, req, show(stored), show(*want))
	}
	if owner != nil {
		if stored := loadRecord(t, f, req.Owner); !reflect.DeepEqual(stored, *owner) {
			t.Fatalf("%s: after Claim %+v the owner's record is\n%s\nwant\n%s", what, req, show(stored), show(*owner))
		}
	}
	return ref
}

const ruleClaimChecksHash = "keystore.Rerollable: a claim answers as keystore.Apply does on the hash presented (rule 0): found only for the key's hash, \"\", or an earlier hash whose grace in the rerolled JSON text ends after now; otherwise as if no key were stored, spending nothing"

func storageClaimChecksHash(t testing.TB, f *storageFixture) {
	texts := []*string{
		nil,
		ptrString(fmt.Sprintf(`{"old":%d,"older":%d}`, claimBase+5, claimBase-1)),
		ptrString(`{"old":null}`),
		ptrString(`{}`),
		ptrString(``),
		ptrString(`not JSON`),
		ptrString(`["old"]`),
		ptrString(fmt.Sprintf(`{"old":%d,"bad":"x"}`, claimBase+5)), // malformed: opens nothing
	}
	codes := map[bool]int{}
	for i, text := range texts {
		rec := claimKey(int64(40+i), ptr64(100))
		rec.Rerolled = text
		key := fmt.Sprintf("hash:%d", rec.ID)
		storeRecord(t, f, key, rec, 0)
		want := rec
		for j, hash := range []string{"", rec.Key, "old", "older", "other", "old", "old"} {
			req := keystore.Request{Now: claimBase + int64(2*j), Cost: 1, Hash: hash}
			codes[claimAsApplyClaim(t, f, key, &want, nil, req, "rerolled "+show(text)).Found]++
		}
	}
	if codes[true] == 0 || codes[false] == 0 {
		t.Errorf("found %d times, not found %d times: the hashes must reach both", codes[true], codes[false])
	}
}

const rulePatch = "keystore.Claimer: Patch sets the named fields (int64, bool, string or nil) and every other field, counters included, keeps its value; it returns the key after the change"

func storagePatch(t testing.TB, f *storageFixture) {
	cl := f.s.(keystore.Claimer)
	rec := claimKey(7, ptr64(5))
	rec.RateLimitEnabled, rec.RateLimitTimeWindow, rec.RateLimitMax = true, ptr64(60_000), ptr64(100)
	rec.ExpiresAt = ptr64(claimBase + 1_000_000)
	storeRecord(t, f, "k", rec, 0)
	if res, err := cl.Claim(f.ctx, "k", keystore.Request{Now: claimBase, Cost: 1}); err != nil || res.Code != "" {
		t.Fatalf("Claim = %s, %v; want allowed", show(res), err)
	}
	before := loadRecord(t, f, "k")
	after, ok, err := cl.Patch(f.ctx, "k", map[string]any{
		"enabled": false, "name": `renamed "é"`, "refillAmount": int64(9), "expiresAt": nil, "updatedAt": claimBase + 5,
	})
	if err != nil || !ok {
		t.Fatalf("Patch: ok %v, err %v", ok, err)
	}
	name := "renamed \"é\""
	want := before
	want.Enabled, want.Name, want.RefillAmount, want.ExpiresAt, want.UpdatedAt = false, &name, ptr64(9), nil, claimBase+5
	if !reflect.DeepEqual(after, want) {
		t.Fatalf("Patch returned\n%s\nwant\n%s", show(after), show(want))
	}
	if stored := loadRecord(t, f, "k"); !reflect.DeepEqual(stored, want) {
		t.Fatalf("after Patch the stored key is\n%s\nwant\n%s", show(stored), show(want))
	}
	if before.RequestCount != 1 || *before.Remaining != 4 {
		t.Fatalf("before Patch: requestCount %d, remaining %d; want 1 and 4", before.RequestCount, *before.Remaining)
	}
}

const ruleClaimKeepsExpiry = "keystore.Claimer: Claim writes the key back keeping its expiry, and so does Patch (a rewrite that dropped it would keep a stored key past its TTL)"

func storageClaimKeepsExpiry(t testing.TB, f *storageFixture) {
	cl := f.s.(keystore.Claimer)
	ttl := f.ttl()
	written := f.now()
	storeRecord(t, f, "claimed", claimKey(8, ptr64(5)), ttl)
	storeRecord(t, f, "patched", claimKey(9, ptr64(5)), ttl)
	if f.caps.ManualClock {
		f.advance(ttl / 2)
	}
	res, err := cl.Claim(f.ctx, "claimed", keystore.Request{Now: claimBase, Cost: 1})
	if (err != nil || !res.Found) && f.stalled(t, written, ttl) {
		return
	}
	if err != nil || res.Code != "" || *res.Key.Remaining != 4 {
		t.Fatalf("Claim = %s, %v; want allowed with 4 left", show(res), err)
	}
	after, ok, err := cl.Patch(f.ctx, "patched", map[string]any{"remaining": int64(9)})
	if (err != nil || !ok) && f.stalled(t, written, ttl) {
		return
	}
	if err != nil || !ok || *after.Remaining != 9 {
		t.Fatalf("Patch = %s, %v, %v; want 9 left", show(after), ok, err)
	}
	f.expires(t, written, ttl, "claimed", "patched")
}
