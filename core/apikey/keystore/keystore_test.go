package keystore_test

import (
	"testing"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

const now = int64(1_700_000_000_000)

func p[T any](v T) *T { return &v }

// quotaKey is enabled, with 3 units left and a rate limit of 2 a second.
func quotaKey() *keystore.Key {
	return &keystore.Key{ID: 1, Key: "h", Enabled: true, Remaining: p(int64(3)),
		RateLimitEnabled: true, RateLimitTimeWindow: p(int64(1000)), RateLimitMax: p(int64(2)),
		CreatedAt: now - 10_000, UpdatedAt: now - 10_000}
}

// TestApplyDenials checks rules 0 to 6 in their order: each key is denied
// by the first rule it breaks, and a denial changes nothing.
func TestApplyDenials(t *testing.T) {
	perms := `{"files":["read"]}`
	cases := []struct {
		name  string
		edit  func(k *keystore.Key)
		req   keystore.Request
		found bool
		code  keystore.Code
	}{
		{"allowed", func(*keystore.Key) {}, keystore.Request{Now: now, Cost: 1}, true, ""},
		{"unknown hash", func(*keystore.Key) {}, keystore.Request{Now: now, Cost: 1, Hash: "other"}, false, ""},
		{"rerolled hash in grace", func(k *keystore.Key) { k.Rerolled = p(`{"old":` + "1700000000001" + `}`) },
			keystore.Request{Now: now, Cost: 1, Hash: "old"}, true, ""},
		{"rerolled hash after grace", func(k *keystore.Key) { k.Rerolled = p(`{"old":1700000000000}`) },
			keystore.Request{Now: now, Cost: 1, Hash: "old"}, false, ""},
		{"disabled before expired", func(k *keystore.Key) { k.Enabled, k.ExpiresAt = false, p(now) },
			keystore.Request{Now: now, Cost: 1}, true, keystore.Disabled},
		{"expired at its instant", func(k *keystore.Key) { k.ExpiresAt = p(now) },
			keystore.Request{Now: now, Cost: 1}, true, keystore.Expired},
		{"forbidden", func(k *keystore.Key) { k.Permissions = &perms },
			keystore.Request{Now: now, Cost: 1, RequireAll: []keystore.Permission{{Resource: "files", Action: "write"}}}, true, keystore.Forbidden},
		{"any permission held", func(k *keystore.Key) { k.Permissions = &perms },
			keystore.Request{Now: now, Cost: 1, RequireAny: []keystore.Permission{{Resource: "x", Action: "y"}, {Resource: "files", Action: "read"}}}, true, ""},
		{"malformed permissions hold none", func(k *keystore.Key) { k.Permissions = p(`{`) },
			keystore.Request{Now: now, Cost: 1, RequireAny: []keystore.Permission{{Resource: "files", Action: "read"}}}, true, keystore.Forbidden},
		{"quota short without refill", func(k *keystore.Key) { k.Remaining = p(int64(0)) },
			keystore.Request{Now: now, Cost: 1}, true, keystore.UsageExceeded},
		{"rate limited in the window", func(k *keystore.Key) { k.LastRequest, k.RequestCount = p(now-10), 2 },
			keystore.Request{Now: now, Cost: 1}, true, keystore.RateLimited},
		{"cost above the rate limit's max", func(*keystore.Key) {}, keystore.Request{Now: now, Cost: 3}, true, keystore.RateLimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := quotaKey()
			c.edit(k)
			before := *k
			res := keystore.Apply(k, nil, c.req)
			if res.Found != c.found || res.Code != c.code {
				t.Fatalf("Apply = found %v code %q; want found %v code %q", res.Found, res.Code, c.found, c.code)
			}
			if (!c.found || c.code != "") && (k.UpdatedAt != before.UpdatedAt || k.RequestCount != before.RequestCount || *k.Remaining != *before.Remaining) {
				t.Fatalf("a denial changed the key: %+v", k)
			}
		})
	}
}

// TestApplySteps checks rule 7: reset, then increment, a decrement each
// time, a refill once due, and a rate-limit denial's wait.
func TestApplySteps(t *testing.T) {
	k := quotaKey()
	k.RefillInterval, k.RefillAmount = p(int64(60_000)), p(int64(5))
	k.LastRefillAt = p(now)
	res := keystore.Apply(k, nil, keystore.Request{Now: now, Cost: 1})
	if res.Code != "" || k.RequestCount != 1 || *k.LastRequest != now || *k.Remaining != 2 || k.UpdatedAt != now {
		t.Fatalf("first claim: %q, key %+v; want a new window and a decrement", res.Code, k)
	}
	res = keystore.Apply(k, nil, keystore.Request{Now: now + 100, Cost: 1})
	if res.Code != "" || k.RequestCount != 2 || *k.LastRequest != now || *k.Remaining != 1 {
		t.Fatalf("second claim: %q, key %+v; want an increment and a decrement", res.Code, k)
	}
	res = keystore.Apply(k, nil, keystore.Request{Now: now + 400, Cost: 1})
	if res.Code != keystore.RateLimited || res.TryAgainIn != 600 {
		t.Fatalf("third claim: %q, wait %d; want RATE_LIMITED for 600 ms", res.Code, res.TryAgainIn)
	}
	res = keystore.Apply(k, nil, keystore.Request{Now: now + 60_000, Cost: 2})
	if res.Code != "" || *k.Remaining != 3 || *k.LastRefillAt != now+60_000 || k.RequestCount != 2 {
		t.Fatalf("claim after the interval: %q, key %+v; want a refill to 5 less 2, a new window of 2", res.Code, k)
	}
	res = keystore.Apply(k, nil, keystore.Request{Now: now + 60_001, Cost: 0})
	if res.Code != keystore.RateLimited {
		t.Fatalf("a check of cost 0 in a full window: %q; want RATE_LIMITED (it needs one unit)", res.Code)
	}
}

// TestDecideOwnerLimits checks rule 5b and the bits of Plan.Opens: the
// key's limits first, then the owner's; Decide changes nothing and Apply
// writes both records' counters.
func TestDecideOwnerLimits(t *testing.T) {
	k := quotaKey()
	k.Remaining, k.RateLimitEnabled = nil, false
	k.SetLimitConfigs(map[string]keystore.LimitConfig{"tokens": {Max: 10, Window: 1000}})
	k.SetLimitCounters(map[string]keystore.LimitCount{"tokens": {Count: 4, Start: now - 100}})
	owner := new(keystore.Key)
	owner.SetLimitConfigs(map[string]keystore.LimitConfig{"requests": {Max: 1, Window: 1000}, "tokens": {Max: 100, Window: 1000}})
	req := keystore.Request{Now: now, Cost: 1, Limits: []keystore.LimitSpend{{Name: "requests", Cost: 1}, {Name: "tokens", Cost: 6}}}

	before, ownerBefore := *k.LimitCounts, owner.LimitCounts
	plan := keystore.Decide(k, owner, req)
	// Bits: 0 key/requests (absent), 1 key/tokens (open window: add),
	// 2 owner/requests (opens), 3 owner/tokens (opens).
	if plan.Code != "" || plan.Opens != 0b1100 {
		t.Fatalf("Decide = %+v; want allowed, opening bits 2 and 3", plan)
	}
	if *k.LimitCounts != before || owner.LimitCounts != ownerBefore {
		t.Fatal("Decide changed a record")
	}
	res := keystore.Apply(k, owner, req)
	if res.Code != "" {
		t.Fatalf("Apply = %q; want allowed", res.Code)
	}
	if got := k.LimitCounters()["tokens"]; got != (keystore.LimitCount{Count: 10, Start: now - 100}) {
		t.Fatalf("key's tokens = %+v; want 10 in the window opened before", got)
	}
	oc := owner.LimitCounters()
	if oc["requests"] != (keystore.LimitCount{Count: 1, Start: now}) || oc["tokens"] != (keystore.LimitCount{Count: 6, Start: now}) {
		t.Fatalf("owner's counters = %+v; want windows opened at now", oc)
	}
	res = keystore.Apply(k, owner, keystore.Request{Now: now + 1, Limits: []keystore.LimitSpend{{Name: "requests", Cost: 1}}})
	if res.Code != keystore.RateLimited || res.Limit != "requests" || !res.OwnerLimit || res.TryAgainIn != 999 {
		t.Fatalf("second request = %+v; want the owner's requests limit to deny for 999 ms", res)
	}
}

// TestLimitTextRoundTrips checks that the JSON text of limits is decoded
// as encoded, that empty maps store nil, and that malformed text holds
// nothing.
func TestLimitTextRoundTrips(t *testing.T) {
	var k keystore.Key
	k.SetLimitConfigs(map[string]keystore.LimitConfig{"a": {Max: 1, Window: 2}})
	if *k.Limits != `{"a":{"max":1,"window":2}}` {
		t.Fatalf("Limits = %s", *k.Limits)
	}
	if got := k.LimitConfigs()["a"]; got != (keystore.LimitConfig{Max: 1, Window: 2}) {
		t.Fatalf("decoded %+v", got)
	}
	k.SetLimitCounters(nil)
	if k.LimitCounts != nil {
		t.Fatal("an empty map must store nil")
	}
	k.Limits = p("[1]")
	if k.LimitConfigs() != nil {
		t.Fatal("malformed text must hold no limit")
	}
}
