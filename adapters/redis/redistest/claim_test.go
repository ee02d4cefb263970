package redistest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// base is the clock's origin in the differential tests: epoch ms in 2027,
// 13 digits, beyond cjson's 14-significant-digit encoding only for ids.
const base = int64(1_800_000_000_000)

// pair drives one storage key through the Redis scripts and through
// core/memory's Storage, whose Claim is keystore.Apply on a JSON record.
type pair struct {
	t     *testing.T
	redis keystore.Claimer
	get   func(key string) (string, bool)
	mem   *memory.Storage
}

func newPair(t *testing.T) *pair {
	s, _, _ := newStorage(t)
	return &pair{t: t, redis: s, mem: memory.NewStorage(), get: func(key string) (string, bool) {
		v, ok, err := s.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return v, ok
	}}
}

func (p *pair) store(key, raw string) {
	p.t.Helper()
	ctx := context.Background()
	if err := p.redis.(driver.SecondaryStorage).Set(ctx, key, raw, 0); err != nil {
		p.t.Fatal(err)
	}
	if err := p.mem.Set(ctx, key, raw, 0); err != nil {
		p.t.Fatal(err)
	}
}

// claim runs req on both and fails unless they answer the same, errors
// included, and hold the same key afterwards.
func (p *pair) claim(key string, req keystore.Request, trace string) keystore.Result {
	p.t.Helper()
	ctx := context.Background()
	got, gerr := p.redis.Claim(ctx, key, req)
	want, werr := p.mem.Claim(ctx, key, req)
	if (gerr != nil) != (werr != nil) {
		p.t.Fatalf("%s\nclaim %+v: redis err %v, reference err %v", trace, req, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		p.t.Fatalf("%s\nclaim %+v:\nredis     %s\nreference %s", trace, req, show(got), show(want))
	}
	p.sameState(key, trace)
	return got
}

// show prints a value with its pointers followed.
func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (p *pair) patch(key string, fields map[string]any, trace string) {
	p.t.Helper()
	ctx := context.Background()
	got, gok, gerr := p.redis.Patch(ctx, key, fields)
	want, wok, werr := p.mem.Patch(ctx, key, fields)
	if (gerr != nil) != (werr != nil) || gok != wok || !reflect.DeepEqual(got, want) {
		p.t.Fatalf("%s\npatch %v:\nredis     %s %v %v\nreference %s %v %v", trace, fields, show(got), gok, gerr, show(want), wok, werr)
	}
	p.sameState(key, trace)
}

// sameState compares the stored records as Go reads them.
func (p *pair) sameState(key, trace string) {
	p.t.Helper()
	graw, gok := p.get(key)
	wraw, wok, _ := p.mem.Get(context.Background(), key)
	if gok != wok {
		p.t.Fatalf("%s\nstored: redis has it %v, reference %v", trace, gok, wok)
	}
	if !gok {
		return
	}
	var g, w keystore.Key
	gerr, werr := json.Unmarshal([]byte(graw), &g), json.Unmarshal([]byte(wraw), &w)
	if (gerr != nil) != (werr != nil) || !reflect.DeepEqual(g, w) {
		p.t.Fatalf("%s\nstored:\nredis     %s (%v)\nreference %s (%v)", trace, graw, gerr, wraw, werr)
	}
}

func opt(r *rand.Rand, lo, hi int64) *int64 {
	if r.Intn(5) == 0 {
		return nil
	}
	v := lo + r.Int63n(hi-lo+1)
	return &v
}

func optString(r *rand.Rand) *string {
	choices := []string{"", "plain", `quote " and \ backslash`, "slash / <tag> & amp", "é ü 中文 \u2028", "{\"json\":[1,2]}"}
	if r.Intn(4) == 0 {
		return nil
	}
	s := choices[r.Intn(len(choices))]
	return &s
}

// randomRecord returns the JSON of a random stored key with small windows,
// quotas and intervals so that every branch of the claim is reached, and
// sometimes fields left out, non-pointer fields set to null, and fields
// apikey does not know (which the script must keep as they are).
func randomRecord(r *rand.Rand) (string, map[string]any) {
	k := keystore.Key{
		ID:                  r.Int63n(1<<53-1) + 1,
		ConfigID:            "default",
		Name:                optString(r),
		Start:               optString(r),
		Prefix:              optString(r),
		Key:                 fmt.Sprintf("hash-%d", r.Int63()),
		ReferenceID:         "user-1",
		Enabled:             r.Intn(8) != 0,
		RateLimitEnabled:    r.Intn(3) != 0,
		RateLimitTimeWindow: opt(r, -5, 60),
		RateLimitMax:        opt(r, 0, 6),
		RequestCount:        r.Int63n(8),
		Remaining:           opt(r, 0, 6),
		RefillInterval:      opt(r, -2, 50),
		RefillAmount:        opt(r, 0, 6),
		LastRefillAt:        opt(r, base-60, base+10),
		LastRequest:         opt(r, base-60, base+10),
		CreatedAt:           base - r.Int63n(100),
		UpdatedAt:           base,
		Permissions:         optString(r),
		Metadata:            optString(r),
	}
	if r.Intn(3) == 0 {
		k.ExpiresAt = opt(r, base, base+300)
	}
	b, _ := json.Marshal(k)
	var obj map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		panic(err)
	}
	for name := range obj {
		switch n := r.Intn(10); {
		case n == 0 && name != "enabled":
			delete(obj, name) // absent reads as zero or nil, like null
		case n == 1 && (name == "requestCount" || name == "createdAt" || name == "configId"):
			obj[name] = nil // Go leaves a non-pointer field zero on null
		}
	}
	extra := map[string]any{}
	if r.Intn(2) == 0 {
		extra = map[string]any{
			"unknownText":  "kept \"as\" is",
			"unknownInt":   json.Number("9007199254740991"),
			"unknownFloat": json.Number("0.1"),
			"unknownNull":  nil,
			"unknownTree":  map[string]any{"list": []any{json.Number("1"), "two", map[string]any{"three": true}}},
		}
		for n, v := range extra {
			obj[n] = v
		}
	}
	b, _ = json.Marshal(obj)
	return string(b), extra
}

func randomCost(r *rand.Rand) int64 {
	return []int64{0, 1, 1, 1, 1, 1, 2, 2, 3, 7}[r.Intn(10)]
}

// randomPatch returns fields as Manager.Update sends them.
func randomPatch(r *rand.Rand, now int64) map[string]any {
	f := map[string]any{"updatedAt": now}
	switch r.Intn(7) {
	case 0:
		f["enabled"] = r.Intn(2) == 0
	case 1:
		f["remaining"] = r.Int63n(5)
	case 2:
		f["remaining"], f["refillInterval"], f["refillAmount"] = nil, nil, nil
	case 3:
		f["refillInterval"], f["refillAmount"] = r.Int63n(40)+1, r.Int63n(5)+1
	case 4:
		f["rateLimitEnabled"], f["rateLimitTimeWindow"], f["rateLimitMax"] = r.Intn(2) == 0, r.Int63n(40)+1, r.Int63n(5)
	case 5:
		f["expiresAt"] = nil
		if r.Intn(2) == 0 {
			f["expiresAt"] = now + r.Int63n(50) - 10
		}
	case 6:
		f["name"], f["metadata"] = nil, `{"plan":"pro","quote":"\""}`
	}
	return f
}

// TestClaimMatchesApplyClaim drives random claim and patch sequences
// through the Redis scripts and through keystore.Apply (by way of
// core/memory's Storage) and requires the same answers and stored keys.
func TestClaimMatchesApplyClaim(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewSource(1))
	codes := map[keystore.Code]int{}
	var writes int
	for seq := 0; seq < 200; seq++ {
		key := fmt.Sprintf("key:%d", seq)
		raw, extra := randomRecord(r)
		p.store(key, raw)
		now := base + r.Int63n(40) - 20
		trace := "record " + raw
		for step := 0; step < 25; step++ {
			switch r.Intn(10) {
			case 0:
				f := randomPatch(r, now)
				trace += fmt.Sprintf("\npatch %v", f)
				p.patch(key, f, trace)
			default:
				req := keystore.Request{Now: now, Cost: randomCost(r)}
				trace += fmt.Sprintf("\nclaim %+v", req)
				res := p.claim(key, req, trace)
				codes[res.Code]++
				if res.Code == "" && req.Cost > 0 {
					writes++
				}
			}
			now += []int64{0, 0, 1, 3, int64(r.Intn(20)), int64(r.Intn(80)), -int64(r.Intn(5))}[r.Intn(7)]
		}
		checkExtraKept(t, p, key, extra)
	}
	// The sequences must reach every outcome, or the comparison proves little.
	for _, c := range []keystore.Code{"", keystore.Disabled, keystore.Expired, keystore.UsageExceeded, keystore.RateLimited} {
		if codes[c] < 20 {
			t.Errorf("outcome %q reached %d times; the generator should reach each at least 20 times (all: %v)", c, codes[c], codes)
		}
	}
	t.Logf("outcomes %v, %d writes", codes, writes)
}

// checkExtraKept: fields apikey does not know survive the script's rewrite
// with their exact values (memory.Storage's Claim drops them, so the
// comparison with it cannot show this).
func checkExtraKept(t *testing.T, p *pair, key string, extra map[string]any) {
	t.Helper()
	raw, _ := p.get(key)
	var obj map[string]any
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		t.Fatalf("stored record %s: %v", raw, err)
	}
	for n, want := range extra {
		if got, ok := obj[n]; !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("unknown field %q = %#v (present %v); want %#v kept, record %s", n, got, ok, want, raw)
		}
	}
}

// TestClaimRecordForms compares hand-written records that Go's decoder and
// Lua's cjson read differently unless the script takes care: null against
// absent fields, a JSON null record, wrong types, malformed JSON.
func TestClaimRecordForms(t *testing.T) {
	p := newPair(t)
	rl := `"rateLimitEnabled":true,"rateLimitTimeWindow":10,"rateLimitMax":2`
	records := []string{
		`null`,
		`{}`,
		`{"enabled":true}`,
		`{"enabled":true,"remaining":null,"refillInterval":null,"refillAmount":null}`,
		`{"enabled":true,"requestCount":null,"lastRequest":null,` + rl + `}`,
		`{"enabled":true,"requestCount":1,"lastRequest":` + fmt.Sprint(base) + `,` + rl + `}`,
		`{"enabled":true,"remaining":0,"refillInterval":5,"refillAmount":3,"lastRefillAt":null,"createdAt":null}`,
		`{"enabled":true,"remaining":0,"refillInterval":5,"refillAmount":3,"createdAt":` + fmt.Sprint(base) + `}`,
		`{"enabled":true,"rateLimitEnabled":true,"rateLimitTimeWindow":10,"rateLimitMax":null}`,
		`{"enabled":true,"expiresAt":` + fmt.Sprint(base) + `}`,
		`{"enabled":false,"remaining":0}`,
		`{"enabled":true,"id":9007199254740991,"updatedAt":null}`,
		` {"enabled" : true , "remaining" : 3 } `,
		// Malformed: both must fail.
		`[]`,
		`"text"`,
		`7`,
		`not json`,
		`{"enabled":"yes"}`,
		`{"enabled":true,"remaining":1.5}`,
		`{"enabled":true,"name":5}`,
		`{"enabled":true,"requestCount":"1"}`,
	}
	for i, raw := range records {
		for _, cost := range []int64{0, 1, 3} {
			key := fmt.Sprintf("form:%d:%d", i, cost)
			p.store(key, raw)
			for _, now := range []int64{base, base + 4, base + 10} {
				p.claim(key, keystore.Request{Now: now, Cost: cost}, "record "+raw)
			}
		}
	}
	p.claim("absent", keystore.Request{Now: base, Cost: 1}, "no record")
	p.patch("absent", map[string]any{"enabled": true}, "no record")
}

// TestClaimBeyondExactRange: the scripts compute in doubles, so a record
// with an integer they cannot handle exactly is an error, never a silently
// wrong answer, and so is such a request, before any I/O.
func TestClaimBeyondExactRange(t *testing.T) {
	s, _, _ := newStorage(t)
	ctx := context.Background()
	for _, raw := range []string{
		`{"enabled":true,"remaining":2251799813685248}`, // 2^51
		`{"enabled":true,"id":9007199254740992}`,        // 2^53
		`{"enabled":true,"remaining":1e300}`,
	} {
		if err := s.Set(ctx, "big", raw, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, "big", keystore.Request{Now: base, Cost: 1}); err == nil || !strings.Contains(err.Error(), "not an integer within") {
			t.Errorf("claim on %s: err = %v; want the field named as out of range", raw, err)
		}
	}
	if err := s.Set(ctx, "big", `{"enabled":true,"unknown":9007199254740993}`, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "big", keystore.Request{Now: base, Cost: 1}); err == nil || !strings.Contains(err.Error(), "cannot be rewritten exactly") {
		t.Errorf("claim rewriting an unknown integer beyond 2^53: err = %v; want an error", err)
	}
	for _, req := range []keystore.Request{{Now: base, Cost: -1}, {Now: base, Cost: 1 << 51}, {Now: -1, Cost: 1}, {Now: 1 << 51, Cost: 1}} {
		if _, err := s.Claim(ctx, "big", req); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("claim %+v: err = %v; want ErrInvalid", req, err)
		}
	}
}

// TestPatchRefusesBadFields: unknown names and wrong types are errors that
// name the field, before any I/O (the address is unreachable).
func TestPatchRefusesBadFields(t *testing.T) {
	s := unreachable(t)
	for _, f := range []map[string]any{
		{},
		{"nope": int64(1)},
		{"enabled": "true"},
		{"enabled": nil},
		{"remaining": "3"},
		{"remaining": 1.5},
		{"remaining": int64(1) << 51},
		{"id": int64(1) << 53},
		{"name": int64(3)},
		{"requestCount": nil},
	} {
		_, _, err := s.Patch(context.Background(), "k", f)
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Patch(%v): err = %v; want ErrInvalid", f, err)
			continue
		}
		for name := range f {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("Patch(%v): error %q does not name the field", f, err)
			}
		}
	}
}

// TestClaimRefusesSplitHashTags: a claim whose key and owner's record
// would hash to different slots (a storage prefix with an unclosed '{')
// is refused before any I/O, rather than run on a node that cannot see
// the owner's limits.
func TestClaimRefusesSplitHashTags(t *testing.T) {
	s, err := sluiceredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), sluiceredis.WithPrefix("app{"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(context.Background(), "key:{o1}h", keystore.Request{Now: base, Cost: 1, Owner: "owner:{o1}",
		Limits: []keystore.LimitSpend{{Name: "tokens", Cost: 1}}})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "hash tags") {
		t.Fatalf("Claim under a prefix with an open '{': err = %v, want ErrInvalid about hash tags", err)
	}
}
