package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
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

// mustGet reads key, failing the test on an error.
func mustGet(t testing.TB, f *storageFixture, key string) (string, bool) {
	t.Helper()
	v, ok, err := f.s.Get(f.ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v, ok
}

func wantValue(t testing.TB, f *storageFixture, key, want string) {
	t.Helper()
	if v, ok := mustGet(t, f, key); !ok || v != want {
		t.Fatalf("Get(%q) = %s, present %v; want %s", key, short(v), ok, short(want))
	}
}

func wantAbsent(t testing.TB, f *storageFixture, key, why string) {
	t.Helper()
	if v, ok := mustGet(t, f, key); ok {
		t.Fatalf("Get(%q) = %s; want no value: %s", short(key), short(v), why)
	}
}

// short quotes s, cut to a readable length.
func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q… (%d bytes)", s[:60], len(s))
	}
	return strconv.Quote(s)
}

const ruleGetSetDelete = "Get returns the value at key and ok == false when there is none; Set stores value at key, replacing what was there; Delete removes key; a missing key is not an error"

func storageGetSetDelete(t testing.TB, f *storageFixture) {
	ctx := f.ctx
	if v, ok, err := f.s.Get(ctx, "k"); v != "" || ok || err != nil {
		t.Fatalf("Get of a missing key = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	if err := f.s.Set(ctx, "k", "v1", 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	wantValue(t, f, "k", "v1")
	if err := f.s.Set(ctx, "k", "v2", f.ttl()); err != nil {
		t.Fatalf("Set over a value: %v", err)
	}
	wantValue(t, f, "k", "v2")
	if err := f.s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, f, "k", "it was deleted")
	if err := f.s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete of a missing key: %v; want nil", err)
	}
	if err := f.s.Delete(ctx, "never-there"); err != nil {
		t.Fatalf("Delete of a key never written: %v; want nil", err)
	}
	// A counter is a value like another: Set replaces it, Delete removes it.
	if _, err := f.s.Increment(ctx, "c", 5, f.ttl()); err != nil {
		t.Fatalf("Increment: %v", err)
	}
	if err := f.s.Set(ctx, "c", "text", 0); err != nil {
		t.Fatalf("Set over a counter: %v", err)
	}
	wantValue(t, f, "c", "text")
	if err := f.s.Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if c, err := f.s.Increment(ctx, "c", 1, f.ttl()); err != nil || c.Value != 1 {
		t.Fatalf("Increment after Delete = %+v, %v; want a new counter holding 1", c, err)
	}
}

const ruleSetExpires = "Set stores value at key; ttl 0 means no expiry: a value with a TTL is there until the TTL ends and gone from then on, one set with ttl 0 (over one that had a TTL, too) never expires"

func storageSetExpires(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	written := f.now()
	for _, k := range []string{"brief", "renewed"} {
		if err := f.s.Set(ctx, k, "v", ttl); err != nil {
			t.Fatalf("Set(%q) with TTL %v: %v", k, ttl, err)
		}
	}
	for _, k := range []string{"forever", "renewed"} {
		if err := f.s.Set(ctx, k, "w", 0); err != nil {
			t.Fatalf("Set(%q) with ttl 0: %v", k, err)
		}
	}
	if _, ok := mustGet(t, f, "brief"); !ok && !f.stalled(t, written, ttl) {
		t.Fatalf("Get(brief) right after Set with TTL %v: gone after %v", ttl, f.now()-written)
	}
	f.expires(t, written, ttl, "brief")
	if f.caps.ManualClock {
		f.advance(365 * 24 * time.Hour)
	}
	wantValue(t, f, "forever", "w")
	wantValue(t, f, "renewed", "w")
}

const ruleIncrementCreatesAndAdds = "Increment adds by to the counter at key in one atomic step; when the counter does not exist it is created with value by and expiry ttl; Get reads a counter in decimal"

func storageIncrementCreatesAndAdds(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	c, err := f.s.Increment(ctx, "n", 3, ttl)
	if err != nil || c.Value != 3 {
		t.Fatalf("Increment of a missing counter = %+v, %v; want value 3", c, err)
	}
	f.checkTTL(t, "a new counter", c.TTL, ttl)
	wantValue(t, f, "n", "3")
	for _, step := range []struct{ by, want int64 }{{4, 7}, {-10, -3}, {0, -3}, {1 << 40, 1<<40 - 3}} {
		c, err := f.s.Increment(ctx, "n", step.by, ttl)
		if err != nil || c.Value != step.want {
			t.Fatalf("Increment by %d = %+v, %v; want value %d", step.by, c, err, step.want)
		}
	}
	wantValue(t, f, "n", strconv.FormatInt(1<<40-3, 10))
	if c, err := f.s.Increment(ctx, "neg", -2, ttl); err != nil || c.Value != -2 {
		t.Fatalf("Increment by -2 of a missing counter = %+v, %v; want -2", c, err)
	}
	wantValue(t, f, "neg", "-2")
}

const ruleIncrementKeepsExpiry = "an existing counter's expiry is never extended (a fixed window): it ends ttl after its creation whatever later increments ask, and the next increment creates it afresh"

func storageIncrementKeepsExpiry(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	written := f.now()
	c, err := f.s.Increment(ctx, "n", 2, ttl)
	if err != nil || c.Value != 2 {
		t.Fatalf("first Increment = %+v, %v; want 2", c, err)
	}
	f.checkTTL(t, "the first Increment", c.TTL, ttl)
	left := ttl
	if f.caps.ManualClock {
		f.advance(ttl * 2 / 5)
		left = ttl - ttl*2/5
	}
	// A far longer ttl on an existing counter must change nothing.
	c, err = f.s.Increment(ctx, "n", 3, time.Hour)
	if err != nil || c.Value != 5 {
		if f.stalled(t, written, ttl) {
			return
		}
		t.Fatalf("second Increment = %+v, %v; want 5", c, err)
	}
	f.checkTTL(t, "an Increment asking for an hour on an existing counter", c.TTL, left)
	f.expires(t, written, ttl, "n")
	c, err = f.s.Increment(ctx, "n", 1, ttl)
	if err != nil || c.Value != 1 {
		t.Fatalf("Increment after the counter expired = %+v, %v; want a new counter holding 1", c, err)
	}
	f.checkTTL(t, "the counter created afresh", c.TTL, ttl)
}

const ruleIncrementTTLMustBePositive = "Increment: ttl must be positive; a ttl of 0 or below is core.ErrInvalid and creates nothing (IncrementBounded alike)"

func storageIncrementTTLMustBePositive(t testing.TB, f *storageFixture) {
	b, bounded := f.s.(driver.BoundedIncrementer)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if _, err := f.s.Increment(f.ctx, "n", 1, ttl); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Increment with ttl %v: err = %v; want core.ErrInvalid", ttl, err)
		}
		if bounded {
			if _, _, err := b.IncrementBounded(f.ctx, "n", 1, 10, ttl); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("IncrementBounded with ttl %v: err = %v; want core.ErrInvalid", ttl, err)
			}
		}
	}
	wantAbsent(t, f, "n", "every increment was refused")
}

const ruleIncrementOfText = "Increment adds to a counter: a value set with Set counts as one when it is a decimal integer; any other value is an error and stays as it was"

func storageIncrementOfText(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	if err := f.s.Set(ctx, "num", "41", 0); err != nil {
		t.Fatal(err)
	}
	if c, err := f.s.Increment(ctx, "num", 1, ttl); err != nil || c.Value != 42 {
		t.Fatalf("Increment of a value set as \"41\" = %+v, %v; want 42", c, err)
	}
	wantValue(t, f, "num", "42")
	for _, text := range []string{"hello", "", "1.5", "12abc"} {
		if err := f.s.Set(ctx, "text", text, 0); err != nil {
			t.Fatal(err)
		}
		if c, err := f.s.Increment(ctx, "text", 1, ttl); err == nil {
			t.Errorf("Increment of %q succeeded with %+v; want an error", text, c)
		}
		if b, ok := f.s.(driver.BoundedIncrementer); ok {
			if c, ok, err := b.IncrementBounded(ctx, "text", 1, 100, ttl); err == nil {
				t.Errorf("IncrementBounded of %q = %+v, %v, nil; want an error", text, c, ok)
			}
		}
		wantValue(t, f, "text", text)
	}
}

const ruleBoundedUpToMax = "driver.BoundedIncrementer: add by only when the result stays at or below max; ok is false when it would not fit, and c then holds the current, unchanged counter"

func storageBoundedUpToMax(t testing.TB, f *storageFixture) {
	b := f.s.(driver.BoundedIncrementer)
	for i, step := range []struct {
		by, max, value int64
		ok             bool
	}{
		{2, 5, 2, true},
		{2, 5, 4, true},
		{2, 5, 4, false}, // 6 > 5
		{1, 5, 5, true},  // at max fits
		{1, 5, 5, false},
		{1, 7, 6, true}, // max is per call
		{-6, 7, 0, true},
	} {
		c, ok, err := b.IncrementBounded(f.ctx, "b", step.by, step.max, f.ttl())
		if err != nil || ok != step.ok || c.Value != step.value {
			t.Fatalf("step %d: IncrementBounded(by %d, max %d) = %+v, %v, %v; want value %d, ok %v", i, step.by, step.max, c, ok, err, step.value, step.ok)
		}
	}
	wantValue(t, f, "b", "0")
}

const ruleBoundedRefusal = "driver.BoundedIncrementer: a denied request leaves the counter as it was, value and expiry (Value 0 when absent, and an absent counter is not created); a bounded increment of 0 with max -1 therefore reads the counter and its TTL"

func storageBoundedRefusal(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	b := f.s.(driver.BoundedIncrementer)
	for _, call := range []struct{ by, max int64 }{{5, 4}, {0, -1}} {
		c, ok, err := b.IncrementBounded(ctx, "fresh", call.by, call.max, ttl)
		if err != nil || ok || c != (driver.Counter{}) {
			t.Fatalf("IncrementBounded(by %d, max %d) of a missing counter = %+v, %v, %v; want the zero Counter, false, nil", call.by, call.max, c, ok, err)
		}
		wantAbsent(t, f, "fresh", "a refused increment must not create the counter")
	}
	written := f.now()
	if _, ok, err := b.IncrementBounded(ctx, "b", 3, 3, ttl); !ok || err != nil {
		t.Fatalf("IncrementBounded(by 3, max 3) of a missing counter: ok %v, err %v; want admitted", ok, err)
	}
	left := ttl
	if f.caps.ManualClock {
		f.advance(time.Second)
		left = ttl - time.Second
	}
	for _, call := range []struct{ by, max int64 }{{1, 3}, {0, -1}, {10, 12}} {
		c, ok, err := b.IncrementBounded(ctx, "b", call.by, call.max, time.Hour)
		if err != nil || ok || c.Value != 3 {
			if f.stalled(t, written, ttl) {
				return
			}
			t.Fatalf("IncrementBounded(by %d, max %d) of a counter at 3 = %+v, %v, %v; want value 3, false, nil", call.by, call.max, c, ok, err)
		}
		f.checkTTL(t, fmt.Sprintf("a refused IncrementBounded(by %d, max %d)", call.by, call.max), c.TTL, left)
		wantValue(t, f, "b", "3")
	}
}

const ruleBoundedKeepsExpiry = "driver.BoundedIncrementer creates the counter with expiry ttl and, as Increment, never extends an existing counter's expiry; a refusal leaves it as it was"

func storageBoundedKeepsExpiry(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	b := f.s.(driver.BoundedIncrementer)
	written := f.now()
	c, ok, err := b.IncrementBounded(ctx, "b", 1, 10, ttl)
	if err != nil || !ok || c.Value != 1 {
		t.Fatalf("first IncrementBounded = %+v, %v, %v; want 1 admitted", c, ok, err)
	}
	f.checkTTL(t, "the counter IncrementBounded created", c.TTL, ttl)
	left := ttl
	if f.caps.ManualClock {
		f.advance(ttl / 2)
		left = ttl - ttl/2
	}
	c, ok, err = b.IncrementBounded(ctx, "b", 1, 10, time.Hour)
	if err != nil || !ok || c.Value != 2 {
		if f.stalled(t, written, ttl) {
			return
		}
		t.Fatalf("second IncrementBounded = %+v, %v, %v; want 2 admitted", c, ok, err)
	}
	f.checkTTL(t, "an IncrementBounded asking for an hour on an existing counter", c.TTL, left)
	// Refusals, a peek among them, must leave the expiry alone too.
	for _, call := range []struct{ by, max int64 }{{100, 10}, {0, -1}} {
		if c, ok, err := b.IncrementBounded(ctx, "b", call.by, call.max, time.Hour); err != nil || ok || c.Value != 2 {
			if f.stalled(t, written, ttl) {
				return
			}
			t.Fatalf("IncrementBounded(by %d, max %d) of a counter at 2 = %+v, %v, %v; want 2, refused", call.by, call.max, c, ok, err)
		}
	}
	f.expires(t, written, ttl, "b")
	if c, ok, err := b.IncrementBounded(ctx, "b", 1, 10, ttl); err != nil || !ok || c.Value != 1 {
		t.Fatalf("IncrementBounded after the counter expired = %+v, %v, %v; want a new counter holding 1", c, ok, err)
	}
}

// hostileKeys are keys a storage must keep apart and give back byte for
// byte. The pairs that differ only by trailing space, case or Unicode
// normalisation would merge under a collation or a normalising layer.
func hostileKeys() []string {
	return []string{
		"", " ", "a", "a ", "A", "\u00e9", "e\u0301", "\uff4b", "k",
		"\x00", "a\x00b", "\xff\xfe\xfd", "\xc3", "line\nbreak\r\n", "tab\t",
		"{tag}x", "{tag}y", "*?[a-z]\\", "ratelimit:x", "../x", "%s%d", "'; DROP TABLE x; --",
		"🔑 ключ 鍵 مفتاح", "\u202eRTL", strings.Repeat("long", 16*1024),
	}
}

// hostileValue is the distinct value stored at hostileKeys()[i].
func hostileValue(i int) string {
	switch i % 5 {
	case 0:
		return "" // present and empty, not absent
	case 1:
		return fmt.Sprintf("\x00%d\xff\xfe", i)
	case 2:
		return fmt.Sprintf("%d:%s", i, strings.Repeat("\u00e9\x00", 32*1024))
	default:
		return fmt.Sprintf("value %d 🔑 \"quoted\"", i)
	}
}

const ruleHostileKeysAndValues = "a key or value is any string, byte for byte: empty, binary (NUL, invalid UTF-8), 64 KiB long, Unicode, glob and hash-tag characters; keys that differ only by trailing spaces, case or Unicode normalisation stay distinct"

func storageHostileKeys(t testing.TB, f *storageFixture) {
	ctx, ttl := f.ctx, f.ttl()
	keys := hostileKeys()
	for i, k := range keys {
		if err := f.s.Set(ctx, k, hostileValue(i), 0); err != nil {
			t.Fatalf("Set(%s): %v", short(k), err)
		}
	}
	for i, k := range keys {
		wantValue(t, f, k, hostileValue(i))
	}
	for i, k := range keys {
		if i%2 == 0 {
			if err := f.s.Delete(ctx, k); err != nil {
				t.Fatalf("Delete(%s): %v", short(k), err)
			}
		}
	}
	for i, k := range keys {
		if i%2 == 0 {
			wantAbsent(t, f, k, "it was deleted")
		} else {
			wantValue(t, f, k, hostileValue(i))
		}
	}
	for i, k := range keys {
		if err := f.s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%s): %v", short(k), err)
		}
		by := int64(i + 1)
		if c, err := f.s.Increment(ctx, k, by, ttl); err != nil || c.Value != by {
			t.Fatalf("Increment(%s) by %d = %+v, %v; want a new counter holding %d", short(k), by, c, err, by)
		}
	}
	for i, k := range keys {
		wantValue(t, f, k, strconv.Itoa(i+1))
	}
}

const ruleContextDone = "a call whose context is already cancelled or past its deadline returns an error wrapping the context's error and changes nothing"

func storageContextDone(t testing.TB, f *storageFixture) {
	ttl := f.ttl()
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(f.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	if err := f.s.Set(f.ctx, "kept", "v", 0); err != nil {
		t.Fatal(err)
	}
	record := `{"enabled":true,"remaining":5}`
	if err := f.s.Set(f.ctx, "record", record, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, c.want) {
				t.Errorf("%s on a context that is done: err = %v; want one wrapping %v", op, err, c.want)
			}
		}
		_, _, err := f.s.Get(c.ctx, "kept")
		check("Get", err)
		check("Set", f.s.Set(c.ctx, "new", "v", 0))
		check("Set", f.s.Set(c.ctx, "kept", "changed", 0))
		check("Delete", f.s.Delete(c.ctx, "kept"))
		_, err = f.s.Increment(c.ctx, "counter", 1, ttl)
		check("Increment", err)
		if b, ok := f.s.(driver.BoundedIncrementer); ok {
			_, _, err = b.IncrementBounded(c.ctx, "counter", 1, 10, ttl)
			check("IncrementBounded", err)
		}
		if cl, ok := f.s.(keystore.Claimer); ok {
			_, err = cl.Claim(c.ctx, "record", keystore.Request{Now: claimBase, Cost: 1})
			check("Claim", err)
			_, _, err = cl.Patch(c.ctx, "record", map[string]any{"remaining": int64(1)})
			check("Patch", err)
		}
	}
	wantAbsent(t, f, "new", "Set was called on a context that was done")
	wantAbsent(t, f, "counter", "Increment was called on a context that was done")
	wantValue(t, f, "kept", "v")
	wantValue(t, f, "record", record)
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

const ruleClaimSharesOwnerLimits = "keystore.OwnerSharing: a claim naming limits with req.Owner answers and writes as keystore.Apply does with the owner's record (rule 5b): the key's limits, then the owner's, all spent or none; a denial on the owner's side sets OwnerLimit; a missing owner record holds no limits and is not created"

func storageClaimSharesOwnerLimits(t testing.TB, f *storageFixture) {
	ownerLimits := []*string{
		ptrString(`{"requests":{"max":2,"window":1000},"tokens":{"max":15,"window":5000}}`),
		ptrString(`{"tokens":{"max":"15"}}`), // malformed: holds nothing
		nil,
	}
	ownerCounts := []*string{
		nil,
		ptrString(fmt.Sprintf(`{"tokens":{"count":12,"start":%d}}`, claimBase)),
	}
	keyLimits := []*string{nil, ptrString(`{"tokens":{"max":10,"window":5000}}`)}
	spends := [][]keystore.LimitSpend{
		{{Name: "tokens", Cost: 4}},
		{{Name: "requests", Cost: 1}, {Name: "tokens", Cost: 2}},
		{{Name: "tokens", Cost: 11}},
		{{Name: "requests", Cost: 2}, {Name: "tokens", Cost: 0}},
		{{Name: "images", Cost: 1}},
	}
	codes := map[string]int{}
	n := 0
	for _, ol := range ownerLimits {
		for _, oc := range ownerCounts {
			for _, kl := range keyLimits {
				for _, stored := range []bool{true, false} {
					n++
					rec := claimKey(int64(300+n), ptr64(3))
					rec.Limits = kl
					// One hash tag for the key and its owner's record, as
					// storage-only managers make them.
					key, ownerKey := fmt.Sprintf("{shared-%d}key", n), fmt.Sprintf("{shared-%d}owner", n)
					storeRecord(t, f, key, rec, 0)
					want := rec
					var owner *keystore.Key
					if stored {
						owner = &keystore.Key{ReferenceID: "owner", Limits: ol, LimitCounts: oc}
						storeRecord(t, f, ownerKey, *owner, 0)
					}
					for j, sp := range spends {
						for _, cost := range []int64{1, 0} {
							req := keystore.Request{Now: claimBase + int64(700*j), Cost: cost, Limits: sp, Owner: ownerKey}
							res := claimAsApplyClaim(t, f, key, &want, owner, req, fmt.Sprintf("owner limits %s, counts %s, key limits %s, owner stored %v", show(ol), show(oc), show(kl), stored))
							codes[fmt.Sprintf("%s/%v", res.Code, res.OwnerLimit)]++
						}
					}
					if !stored {
						wantAbsent(t, f, ownerKey, "a claim must not create the owner's record")
					}
				}
			}
		}
	}
	for _, c := range []string{"/false", "RATE_LIMITED/true", "RATE_LIMITED/false", "USAGE_EXCEEDED/false"} {
		if codes[c] == 0 {
			t.Errorf("outcomes %v: the claims must reach %s (code/owner's limit)", codes, c)
		}
	}
}

const ruleClaimSpendsNamedLimits = "keystore.Claimer: a claim that names limits answers and writes as keystore.Apply does (rule 5b): each named limit the key holds opens a window or adds its cost to its counter in limitCounts, and one without room answers RATE_LIMITED naming it, spending nothing anywhere"

func storageClaimSpendsNamedLimits(t testing.TB, f *storageFixture) {
	limits := []*string{
		ptrString(`{"requests":{"max":3,"window":1000},"tokens":{"max":10,"window":5000}}`),
		nil,
		ptrString(`{"tokens":null}`),
		ptrString(`{"tokens":{"max":10}}`),
		ptrString(`{"tokens":{"max":"10","window":5000}}`), // malformed: holds nothing
		ptrString(`not JSON`),
	}
	counts := []*string{
		nil,
		ptrString(fmt.Sprintf(`{"tokens":{"count":8,"start":%d}}`, claimBase)),
		ptrString(fmt.Sprintf(`{"requests":{"count":3,"start":%d},"tokens":null}`, claimBase-500)),
		ptrString(`{"tokens":{"count":1.5}}`), // malformed: counts nothing, and is rewritten
	}
	spends := [][]keystore.LimitSpend{
		{{Name: "tokens", Cost: 4}},
		{{Name: "requests", Cost: 1}, {Name: "tokens", Cost: 2}},
		{{Name: "images", Cost: 1}, {Name: "tokens", Cost: 0}},
		{{Name: "tokens", Cost: 11}},
		{{Name: "tokens", Cost: 10}},
		{{Name: "requests", Cost: 3}, {Name: "tokens", Cost: 1}},
	}
	codes := map[keystore.Code]int{}
	n := 0
	for _, lim := range limits {
		for _, cnt := range counts {
			n++
			rec := claimKey(int64(100+n), ptr64(100))
			rec.Limits, rec.LimitCounts = lim, cnt
			key := fmt.Sprintf("limits:%d", rec.ID)
			storeRecord(t, f, key, rec, 0)
			want := rec
			for j, sp := range spends {
				for _, cost := range []int64{1, 0} {
					req := keystore.Request{Now: claimBase + int64(400*j), Cost: cost, Limits: sp}
					codes[claimAsApplyClaim(t, f, key, &want, nil, req, fmt.Sprintf("limits %s, counts %s", show(lim), show(cnt))).Code]++
				}
			}
		}
	}
	if codes[""] == 0 || codes[keystore.RateLimited] == 0 {
		t.Errorf("outcomes %v: the claims must reach both an allowed claim and RATE_LIMITED", codes)
	}
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
