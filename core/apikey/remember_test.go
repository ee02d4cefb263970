package apikey

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/memory"
)

// newCountingEnv returns an env whose adapter counts its calls.
func newCountingEnv(t *testing.T, opts ...Option) (*env, *countingAdapter) {
	t.Helper()
	mem := memory.New()
	c := &countingAdapter{Memory: mem}
	return newEnvOn(t, mem, c, opts...), c
}

// steadyKeys are keys whose verifications all pass, each taking a
// different branch of the rules as the clock advances a minute at a time.
var steadyKeys = map[string]CreateParams{
	"quota and rate limit": {Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 100}},
	"window resets":        {Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 1}},
	"refill due":           {Remaining: quota(0), Refill: Refill{Interval: time.Minute, Amount: 100}},
	"refill not due":       {Remaining: quota(100), Refill: Refill{Interval: time.Hour, Amount: 100}},
	"expiring":             {ExpiresIn: time.Hour, RateLimit: noRateLimit()},
	"unlimited":            {RateLimit: noRateLimit()},
}

// TestSteadyStateIsOneWrite counts adapter calls: a verification of a key
// the manager has seen is one guarded IncrementOne and no read; a key it
// has not seen costs one read first; with the key-state cache off, every
// verification reads and writes.
func TestSteadyStateIsOneWrite(t *testing.T) {
	for name, p := range steadyKeys {
		t.Run(name, func(t *testing.T) {
			e, c := newCountingEnv(t)
			key, _ := e.create(t, p)
			for i := range 5 {
				e.clock.Advance(time.Minute)
				before := c.calls()
				wantCode(t, e.verify(t, key), "")
				if got := sub(c.calls(), before); got != [3]int64{0, 1, 0} {
					t.Fatalf("verification %d: FindOne, IncrementOne, others = %v, want [0 1 0]", i, got)
				}
			}
		})
		t.Run(name+"/seen by another manager", func(t *testing.T) {
			e, c := newCountingEnv(t)
			other, err := New(e.db, WithClock(e.clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			key, _, err := other.Create(context.Background(), withOwner(p))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range [][3]int64{{1, 1, 0}, {0, 1, 0}, {0, 1, 0}} {
				e.clock.Advance(time.Minute)
				before := c.calls()
				wantCode(t, e.verify(t, key), "")
				if got := sub(c.calls(), before); got != want {
					t.Fatalf("verification %d: FindOne, IncrementOne, others = %v, want %v", i, got, want)
				}
			}
		})
		t.Run(name+"/cache off", func(t *testing.T) {
			e, c := newCountingEnv(t, WithKeyStateCache(0))
			key, _ := e.create(t, p)
			for i := range 3 {
				e.clock.Advance(time.Minute)
				before := c.calls()
				wantCode(t, e.verify(t, key), "")
				if got := sub(c.calls(), before); got != [3]int64{1, 1, 0} {
					t.Fatalf("verification %d: FindOne, IncrementOne, others = %v, want [1 1 0]", i, got)
				}
			}
		})
	}
}

// TestDenialsAreRead checks that a denial is never answered from the
// remembered state: it costs one read, and no write.
func TestDenialsAreRead(t *testing.T) {
	e, c := newCountingEnv(t)
	key, _ := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
	wantCode(t, e.verify(t, key), "")
	before := c.calls()
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	if got := sub(c.calls(), before); got != [3]int64{1, 0, 0} {
		t.Fatalf("denial: FindOne, IncrementOne, others = %v, want [1 0 0]", got)
	}
}

func sub(a, b [3]int64) [3]int64 { return [3]int64{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }

func withOwner(p CreateParams) CreateParams {
	p.ReferenceID = "user-1"
	return p
}

// exactnessRace creates a key, verifies it warm times, then runs 50
// concurrent verifications, all planned from the same state before any
// writes, and returns their outcomes and the key as stored afterwards.
func exactnessRace(t *testing.T, e *env, p CreateParams, warm int) (map[Code]int, *Key) {
	t.Helper()
	key, k := e.create(t, p)
	for range warm {
		wantCode(t, e.verify(t, key), "")
	}
	got := verifyAll(t, e, key, 50)
	return got, e.get(t, k.ID)
}

// exactnessCases each allow exactly 10 of 50 verifications.
var exactnessCases = []struct {
	name       string
	params     CreateParams
	warm       int // verifications before the race: 1 opens the rate-limit window
	denial     Code
	wantRemain int64
	wantCount  int64
}{
	{"quota 10, rate limit 10", CreateParams{Remaining: quota(10), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 10}}, 0, CodeUsageExceeded, 0, 10},
	{"quota 20, rate limit 10", CreateParams{Remaining: quota(20), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 10}}, 0, CodeRateLimited, 10, 10},
	{"window open, 10 left of both", CreateParams{Remaining: quota(11), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 11}}, 1, CodeUsageExceeded, 0, 11},
}

// TestConcurrentExactness: 50 concurrent verifications of a key that
// allows 10 admit exactly 10, and the stored counters say so, in every
// configuration.
func TestConcurrentExactness(t *testing.T) {
	for name, mk := range concurrentEnvs(t) {
		for _, c := range exactnessCases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				got, after := exactnessRace(t, mk(), c.params, c.warm)
				if got[""] != 10 || got[c.denial] != 40 {
					t.Fatalf("outcomes %v, want 10 successes and 40 %q", got, c.denial)
				}
				if remaining(t, after) != c.wantRemain || after.RequestCount != c.wantCount {
					t.Fatalf("stored remaining %d requestCount %d, want %d and %d", remaining(t, after), after.RequestCount, c.wantRemain, c.wantCount)
				}
			})
		}
	}
}

// TestConcurrentExactnessCatchesAMissingGuard runs the race of
// TestConcurrentExactness, with the key remembered, on a database that
// ignores the guards on the counters and the window start, and checks that
// it over-admits: the race test can fail.
func TestConcurrentExactnessCatchesAMissingGuard(t *testing.T) {
	for _, c := range exactnessCases {
		t.Run(c.name, func(t *testing.T) {
			g := &gates{}
			mem := memory.New()
			e := newEnvOn(t, mem, gatedIncrementer{gatedAdapter{unguarded{mem, []string{"remaining", "requestCount", "lastRequest"}}, g, true}})
			e.gates = g
			got, after := exactnessRace(t, e, c.params, c.warm)
			if got[""] <= 10 {
				t.Fatalf("outcomes %v: without the guards the race should admit more than 10", got)
			}
			t.Logf("without the guards: outcomes %v, stored remaining %d requestCount %d", got, remaining(t, after), after.RequestCount)
		})
	}
}

// otherManager returns a second manager on e's database and clock: another
// server, whose changes e's manager is not told of.
func (e *env) otherManager(t *testing.T) *Manager {
	t.Helper()
	other, err := New(e.db, WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return other
}

// changeCases are changes to a key, each with the code the next
// verification must answer ("" for success) and, where the counters matter,
// a check of the key as stored before the change and after the verification.
var changeCases = []struct {
	name   string
	params CreateParams
	change UpdateParams
	want   Code
	check  func(t *testing.T, before, after *Key)
}{
	{
		name:   "disabled",
		params: CreateParams{Remaining: quota(100)},
		change: UpdateParams{Enabled: ptr(false)},
		want:   CodeDisabled,
	},
	{
		name:   "expired",
		params: CreateParams{Remaining: quota(100)},
		change: UpdateParams{ExpiresAt: ptr(epoch.Add(-time.Second))},
		want:   CodeExpired,
	},
	{
		name:   "quota set to zero",
		params: CreateParams{Remaining: quota(100)},
		change: UpdateParams{Remaining: quota(0)},
		want:   CodeUsageExceeded,
	},
	{
		// The remembered plan (room under a max of 100) would pass a
		// guard on the counter alone: only the guard on the setting
		// catches it.
		name:   "rate limit lowered",
		params: CreateParams{Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 100}},
		change: UpdateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 3}},
		want:   CodeRateLimited,
	},
	{
		name:   "rate limit turned off",
		params: CreateParams{Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 100}},
		change: UpdateParams{RateLimit: &RateLimit{}},
		check: func(t *testing.T, before, after *Key) {
			if after.RequestCount != before.RequestCount {
				t.Errorf("requestCount %d → %d: a key without a rate limit must not count", before.RequestCount, after.RequestCount)
			}
		},
	},
	{
		// The remembered plan is a decrement; with the shorter
		// interval a refill is due and must win.
		name:   "refill made due",
		params: CreateParams{Remaining: quota(100), Refill: Refill{Interval: time.Hour, Amount: 50}, RateLimit: noRateLimit()},
		change: UpdateParams{Refill: &Refill{Interval: time.Second, Amount: 50}},
		check: func(t *testing.T, _, after *Key) {
			if remaining(t, after) != 49 {
				t.Errorf("remaining %d, want 49 (refilled to 50, less one)", remaining(t, after))
			}
		},
	},
	{
		name:   "made unlimited",
		params: CreateParams{Remaining: quota(100), RateLimit: noRateLimit()},
		change: UpdateParams{Unlimited: true},
		check: func(t *testing.T, _, after *Key) {
			if after.Remaining != nil {
				t.Errorf("remaining %d, want unlimited", *after.Remaining)
			}
		},
	},
	{
		name:   "re-enabled",
		params: CreateParams{Remaining: quota(100), Disabled: true},
		change: UpdateParams{Enabled: ptr(true)},
	},
}

// TestChangesTakeEffectAtOnce changes a key that a manager remembers,
// through another manager (another server: this one's memory is not told),
// and checks that the very next verification answers as the key now is,
// with the counters the rules give on the key as it now is.
func TestChangesTakeEffectAtOnce(t *testing.T) {
	for _, c := range changeCases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newCountingEnv(t)
			other := e.otherManager(t)
			key, k := e.create(t, c.params)
			for range 3 {
				e.verify(t, key) // remembered, and some counters spent
			}
			e.clock.Advance(2 * time.Second)
			before := e.get(t, k.ID)
			if _, err := other.Update(context.Background(), k.ID, c.change); err != nil {
				t.Fatal(err)
			}
			wantCode(t, e.verify(t, key), c.want)
			if c.check != nil {
				c.check(t, before, e.get(t, k.ID))
			}
		})
	}
	t.Run("deleted", testDeletionTakesEffectAtOnce)
}

// testDeletionTakesEffectAtOnce deletes a remembered key through another
// manager: from the next verification on, the key is invalid.
func testDeletionTakesEffectAtOnce(t *testing.T) {
	e, _ := newCountingEnv(t)
	other := e.otherManager(t)
	key, k := e.create(t, CreateParams{Remaining: quota(100)})
	wantCode(t, e.verify(t, key), "")
	if ok, err := other.Delete(context.Background(), k.ID); !ok || err != nil {
		t.Fatal(ok, err)
	}
	wantCode(t, e.verify(t, key), CodeInvalid)
	wantCode(t, e.verify(t, key), CodeInvalid)
}

// TestUpdateRefreshesTheRememberedKey: after a change through the same
// manager, the next verification is still one write, planned on the new
// settings.
func TestUpdateRefreshesTheRememberedKey(t *testing.T) {
	e, c := newCountingEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 100}})
	wantCode(t, e.verify(t, key), "")
	if _, err := e.m.Update(context.Background(), k.ID, UpdateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 50}}); err != nil {
		t.Fatal(err)
	}
	before := c.calls()
	r := e.verify(t, key)
	wantCode(t, r, "")
	if got := sub(c.calls(), before); got != [3]int64{0, 1, 0} {
		t.Fatalf("FindOne, IncrementOne, others = %v, want [0 1 0]", got)
	}
	if r.Key.RateLimit.Max != 50 || r.Key.RequestCount != 2 {
		t.Fatalf("key after: %+v", r.Key)
	}
}

// TestKeyStateCacheIsBounded fills a small cache with more keys than it
// holds: it keeps no more than its bound, and every verification stays
// right.
func TestKeyStateCacheIsBounded(t *testing.T) {
	e, _ := newCountingEnv(t, WithKeyStateCache(16))
	for i := range 100 {
		key, _ := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
		wantCode(t, e.verify(t, key), "")
		wantCode(t, e.verify(t, key), CodeUsageExceeded)
		if n := e.m.store.(*dbStore).keys.len(); n > 16 || int64(n) != e.m.store.(*dbStore).keys.count.Load() {
			t.Fatalf("after %d keys the cache holds %d and counts %d, want at most 16, counted right", i+1, n, e.m.store.(*dbStore).keys.count.Load())
		}
	}
}

// TestWithKeyStateCacheRefusesBadInput: a negative size, or the option in
// storage-only mode, is an error naming it.
func TestWithKeyStateCacheRefusesBadInput(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(db, WithKeyStateCache(-1)); !isInvalidNaming(err, "WithKeyStateCache") {
		t.Fatalf("New(WithKeyStateCache(-1)): %v", err)
	}
	if _, err := NewStorageOnly(memory.NewStorage(), WithKeyStateCache(10)); !isInvalidNaming(err, "WithKeyStateCache") {
		t.Fatalf("NewStorageOnly(WithKeyStateCache(10)): %v", err)
	}
}

// isInvalidNaming reports whether err wraps core.ErrInvalid and names what.
func isInvalidNaming(err error, what string) bool {
	return errors.Is(err, core.ErrInvalid) && strings.Contains(err.Error(), what)
}

// len counts the keys the cache holds.
func (c *keyCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// TestGuardValuesFollowSettings checks that the boxed guard values a
// remembered key carries are reused only while its settings stay the same,
// and always equal the settings of the key they are remembered with.
func TestGuardValuesFollowSettings(t *testing.T) {
	c := newKeyCache(4)
	w, m1, m2 := int64(3_600_000), int64(1<<40), int64(1<<41)
	s1 := &keystore.Key{Key: "h", RateLimitTimeWindow: &w, RateLimitMax: &m1, RequestCount: 1}
	c.put(s1)
	_, g1 := c.get("h")
	s2 := &keystore.Key{Key: "h", RateLimitTimeWindow: &w, RateLimitMax: &m1, RequestCount: 2}
	c.put(s2)
	got, g2 := c.get("h")
	if got != s2 || g2 != g1 {
		t.Fatalf("same settings: got key %p guard %p, want %p and the first guard %p", got, g2, s2, g1)
	}
	s3 := &keystore.Key{Key: "h", RateLimitTimeWindow: &w, RateLimitMax: &m2}
	c.put(s3)
	_, g3 := c.get("h")
	if g3 == g1 || g3.max != any(m2) || g3.window != any(w) || g3.key != any("h") || g3.interval != nil || g3.amount != nil {
		t.Fatalf("changed max: guard %+v, want a new one with max %d", g3, m2)
	}
	req := consumeRequest(s3, g3, decideRead(s3, epoch, 1, nil), nil, epoch, 1, requests.Get().(*requestBuf))
	found := false
	for _, wh := range req.Where {
		if wh.Field == "rateLimitMax" {
			found = true
			if wh.Value != any(m2) {
				t.Fatalf("the write guards rateLimitMax = %v, want %d", wh.Value, m2)
			}
		}
	}
	if !found {
		t.Fatal("the write does not guard rateLimitMax")
	}
}
