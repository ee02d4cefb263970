package apikey

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

func TestVerifyOutcomesInSpecOrder(t *testing.T) {
	e := newEnv(t)
	// Unknown and empty keys.
	wantCode(t, e.verify(t, "nope"), CodeInvalid)
	wantCode(t, e.verify(t, ""), CodeInvalid)

	// Disabled beats expired and exhausted.
	off, k := e.create(t, CreateParams{Disabled: true, ExpiresIn: time.Millisecond, Remaining: quota(0)})
	e.clock.Advance(time.Second)
	r := e.verify(t, off)
	wantCode(t, r, CodeDisabled)
	if r.Key == nil || r.Key.ID != k.ID {
		t.Fatalf("a denial carries the key as read; got %+v", r.Key)
	}

	// Expired beats exhausted.
	exp, _ := e.create(t, CreateParams{ExpiresIn: time.Millisecond, Remaining: quota(0)})
	e.clock.Advance(time.Second)
	wantCode(t, e.verify(t, exp), CodeExpired)

	// Exhausted without refill beats rate limited.
	ex, _ := e.create(t, CreateParams{Remaining: quota(0), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 0}})
	wantCode(t, e.verify(t, ex), CodeUsageExceeded)

	// Valid: the result carries the key after the write.
	ok, _ := e.create(t, CreateParams{Remaining: quota(3)})
	r = e.verify(t, ok)
	wantCode(t, r, "")
	if remaining(t, r.Key) != 2 || r.Key.RequestCount != 1 || !r.Key.LastRequest.Equal(e.clock.Now()) || !r.Key.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("after one verification: %+v", r.Key)
	}
	if r.Status != 200 || r.TryAgainIn != 0 {
		t.Fatalf("valid result status %d tryAgainIn %v", r.Status, r.TryAgainIn)
	}
}

func TestVerifyNeverDeletes(t *testing.T) {
	e := newEnv(t)
	exp, _ := e.create(t, CreateParams{ExpiresIn: time.Second})
	used, _ := e.create(t, CreateParams{Remaining: quota(1)})
	e.clock.Advance(time.Hour)
	wantCode(t, e.verify(t, exp), CodeExpired)
	wantCode(t, e.verify(t, used), "")
	wantCode(t, e.verify(t, used), CodeUsageExceeded)
	if n, _ := e.db.Count(context.Background(), "apikey"); n != 2 {
		t.Fatalf("%d keys after denials, want 2", n)
	}
}

func TestExpiryBoundary(t *testing.T) {
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{ExpiresIn: time.Minute, RateLimit: noRateLimit()})
	e.clock.Set(epoch.Add(time.Minute - time.Millisecond))
	wantCode(t, e.verify(t, key), "")
	e.clock.Set(epoch.Add(time.Minute))
	wantCode(t, e.verify(t, key), CodeExpired)
}

func TestQuotaAndCost(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(5), RateLimit: noRateLimit()})
	if r := e.verify(t, key, Cost(3)); !r.Valid || remaining(t, r.Key) != 2 {
		t.Fatalf("cost 3: %+v", r)
	}
	r := e.verify(t, key, Cost(3))
	wantCode(t, r, CodeUsageExceeded)
	if r.TryAgainIn != 0 {
		t.Fatalf("no refill: tryAgainIn = %v, want 0", r.TryAgainIn)
	}
	if r := e.verify(t, key, Cost(2)); !r.Valid || remaining(t, r.Key) != 0 {
		t.Fatalf("cost 2: %+v", r)
	}
	wantCode(t, e.verify(t, key, Cost(0)), CodeUsageExceeded)
	if _, err := e.m.Verify(context.Background(), key, Cost(-1)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("negative cost: err = %v", err)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 0 {
		t.Fatalf("remaining %d, want 0", got)
	}
}

func TestCostZeroChecksWithoutWriting(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(1), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 1}})
	before := e.mem.Calls()
	r := e.verify(t, key, Cost(0))
	wantCode(t, r, "")
	if calls := e.mem.Calls() - before; calls != 1 {
		t.Fatalf("a check made %d adapter calls, want 1 (the read)", calls)
	}
	got := e.get(t, k.ID)
	if remaining(t, got) != 1 || got.RequestCount != 0 || !got.LastRequest.IsZero() || !got.UpdatedAt.Equal(k.UpdatedAt) {
		t.Fatalf("a check changed the key: %+v", got)
	}
	wantCode(t, e.verify(t, key), "")
	// Quota and rate limit both used up: a check now reports the denial.
	wantCode(t, e.verify(t, key, Cost(0)), CodeUsageExceeded)
}

func TestRefillFromCreationAndBoundaries(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(1), Refill: Refill{Interval: time.Hour, Amount: 5}, RateLimit: noRateLimit()})
	wantCode(t, e.verify(t, key), "")

	// lastRefillAt is NULL: the interval runs from creation. One millisecond
	// short of it the key is exhausted and says when the refill comes.
	e.clock.Set(epoch.Add(time.Hour - time.Millisecond))
	r := e.verify(t, key)
	wantCode(t, r, CodeUsageExceeded)
	if r.TryAgainIn != time.Millisecond {
		t.Fatalf("tryAgainIn = %v, want 1ms", r.TryAgainIn)
	}
	if got := e.get(t, k.ID); !got.LastRefillAt.IsZero() {
		t.Fatalf("lastRefillAt = %v, want NULL before the first refill", got.LastRefillAt)
	}

	// Exactly one interval after creation: refilled, and this request spent one.
	t1 := epoch.Add(time.Hour)
	e.clock.Set(t1)
	r = e.verify(t, key)
	wantCode(t, r, "")
	if remaining(t, r.Key) != 4 || !r.Key.LastRefillAt.Equal(t1) {
		t.Fatalf("after refill: remaining %d lastRefillAt %v, want 4 and %v", remaining(t, r.Key), r.Key.LastRefillAt, t1)
	}
	for range 4 {
		wantCode(t, e.verify(t, key), "")
	}
	wantCode(t, e.verify(t, key), CodeUsageExceeded)

	// The next refill is measured from lastRefillAt, with the same boundary.
	e.clock.Set(t1.Add(time.Hour - time.Millisecond))
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	e.clock.Set(t1.Add(time.Hour))
	if r = e.verify(t, key, Cost(5)); !r.Valid || remaining(t, r.Key) != 0 {
		t.Fatalf("second refill with cost 5: %+v", r)
	}
	// A refill that cannot cover the cost is refused without being spent.
	e.clock.Set(t1.Add(3 * time.Hour))
	wantCode(t, e.verify(t, key, Cost(6)), CodeUsageExceeded)
	if got := e.get(t, k.ID); !got.LastRefillAt.Equal(t1.Add(time.Hour)) {
		t.Fatalf("a refused refill moved lastRefillAt to %v", got.LastRefillAt)
	}
}

func TestRefillResetsRatherThanAdds(t *testing.T) {
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{Remaining: quota(100), Refill: Refill{Interval: time.Minute, Amount: 10}, RateLimit: noRateLimit()})
	e.clock.Advance(time.Minute)
	if r := e.verify(t, key); remaining(t, r.Key) != 9 {
		t.Fatalf("remaining %d after a refill to 10, want 9", remaining(t, r.Key))
	}
}

func TestRateLimitWindowBoundaries(t *testing.T) {
	e := newEnv(t)
	key, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 2}})
	start := epoch.Add(time.Second)
	e.clock.Set(start)
	wantCode(t, e.verify(t, key), "")
	e.clock.Set(start.Add(30 * time.Second))
	r := e.verify(t, key)
	wantCode(t, r, "")
	if r.Key.RequestCount != 2 || !r.Key.LastRequest.Equal(start) {
		t.Fatalf("an in-window request moved the window or miscounted: %+v", r.Key)
	}
	// One millisecond before the window ends.
	e.clock.Set(start.Add(time.Minute - time.Millisecond))
	r = e.verify(t, key)
	wantCode(t, r, CodeRateLimited)
	if r.TryAgainIn != time.Millisecond || r.Status != 429 {
		t.Fatalf("tryAgainIn %v status %d, want 1ms and 429", r.TryAgainIn, r.Status)
	}
	// Exactly a window after its start: a new window opens.
	e.clock.Set(start.Add(time.Minute))
	r = e.verify(t, key, Cost(2))
	wantCode(t, r, "")
	if r.Key.RequestCount != 2 || !r.Key.LastRequest.Equal(start.Add(time.Minute)) {
		t.Fatalf("reset: %+v", r.Key)
	}
	wantCode(t, e.verify(t, key), CodeRateLimited)
}

func TestRateLimitMaxZeroAndCostAboveMax(t *testing.T) {
	e := newEnv(t)
	zero, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 0}})
	r := e.verify(t, zero)
	wantCode(t, r, CodeRateLimited)
	if r.TryAgainIn != time.Minute {
		t.Fatalf("tryAgainIn = %v", r.TryAgainIn)
	}
	three, _ := e.create(t, CreateParams{RateLimit: &RateLimit{Enabled: true, Window: time.Minute, Max: 3}})
	wantCode(t, e.verify(t, three, Cost(4)), CodeRateLimited)
	wantCode(t, e.verify(t, three, Cost(3)), "")
}

func TestRateLimitDenialSpendsNoQuota(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(5), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 2}})
	wantCode(t, e.verify(t, key), "")
	wantCode(t, e.verify(t, key), "")
	for range 3 {
		wantCode(t, e.verify(t, key), CodeRateLimited)
	}
	if got := e.get(t, k.ID); remaining(t, got) != 3 || got.RequestCount != 2 {
		t.Fatalf("after rate-limit denials: remaining %d requestCount %d, want 3 and 2", remaining(t, got), got.RequestCount)
	}
}

func TestExhaustionSpendsNoRateLimitSlot(t *testing.T) {
	e := newEnv(t)
	key, k := e.create(t, CreateParams{Remaining: quota(1), Refill: Refill{Interval: time.Hour, Amount: 1}, RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 5}})
	wantCode(t, e.verify(t, key), "")
	// Exhausted with a refill to come: this denial is decided after the rate
	// limit, and must not count against it.
	for range 3 {
		wantCode(t, e.verify(t, key), CodeUsageExceeded)
	}
	if got := e.get(t, k.ID); remaining(t, got) != 0 || got.RequestCount != 1 {
		t.Fatalf("after usage denials: remaining %d requestCount %d, want 0 and 1", remaining(t, got), got.RequestCount)
	}
}

func TestKeyDeletedDuringVerification(t *testing.T) {
	mem := memory.New()
	h := &hookAdapter{Memory: mem}
	e := newEnvOn(t, mem, h)
	key, k := e.create(t, CreateParams{Remaining: quota(5)})
	h.before = func(ctx context.Context) {
		h.before = nil
		if ok, err := e.m.Delete(ctx, k.ID); !ok || err != nil {
			t.Errorf("Delete: %v, %v", ok, err)
		}
	}
	wantCode(t, e.verify(t, key), CodeInvalid)
}

func TestKeyDisabledOrExhaustedDuringVerification(t *testing.T) {
	mem := memory.New()
	h := &hookAdapter{Memory: mem}
	e := newEnvOn(t, mem, h)
	key, k := e.create(t, CreateParams{Remaining: quota(5)})
	off := false
	h.before = func(ctx context.Context) {
		h.before = nil
		if _, err := e.m.Update(ctx, k.ID, UpdateParams{Enabled: &off}); err != nil {
			t.Error(err)
		}
	}
	wantCode(t, e.verify(t, key), CodeDisabled)

	key, k = e.create(t, CreateParams{Remaining: quota(2), RateLimit: noRateLimit()})
	h.before = func(ctx context.Context) {
		h.before = nil
		// Another server spends the whole quota between our read and write.
		if r := e.verify(t, key, Cost(2)); !r.Valid {
			t.Errorf("concurrent verification: %+v", r)
		}
	}
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	if got := remaining(t, e.get(t, k.ID)); got != 0 {
		t.Fatalf("remaining %d, want 0", got)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	mem := memory.New()
	h := &hookAdapter{Memory: mem}
	e := newEnvOn(t, mem, h, WithMaxAttempts(3))
	key, k := e.create(t, CreateParams{Remaining: quota(5)})
	h.miss = true
	before := mem.Calls()
	_, err := e.m.Verify(context.Background(), key)
	if !errors.Is(err, core.ErrContention) {
		t.Fatalf("err = %v, want core.ErrContention", err)
	}
	if calls := mem.Calls() - before; calls != 7 {
		t.Fatalf("%d adapter calls, want the write planned on the remembered key + 3 attempts × (read + write) = 7", calls)
	}
	if got := remaining(t, e.get(t, k.ID)); got != 5 {
		t.Fatalf("remaining %d after failed verification, want 5", got)
	}
}

// TestVerifyHonoursContext ends the context during a write that misses:
// the verification stops there, without a retry.
func TestVerifyHonoursContext(t *testing.T) {
	for name, c := range map[string]struct {
		opts  []Option
		calls int64
	}{
		"remembered": {nil, 1},                            // the planned write
		"read first": {[]Option{WithKeyStateCache(0)}, 2}, // read + write
	} {
		t.Run(name, func(t *testing.T) {
			mem := memory.New()
			h := &hookAdapter{Memory: mem, miss: true}
			e := newEnvOn(t, mem, h, c.opts...)
			key, _ := e.create(t, CreateParams{})
			ctx, cancel := context.WithCancel(context.Background())
			h.before = func(context.Context) { cancel() }
			before := mem.Calls()
			if _, err := e.m.Verify(ctx, key); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if calls := mem.Calls() - before; calls != c.calls {
				t.Fatalf("%d adapter calls after cancellation, want %d (no retry)", calls, c.calls)
			}
		})
	}
}

func TestVerifyThroughFallback(t *testing.T) {
	mem := memory.New()
	e := newEnvOn(t, mem, mem.WithoutIncrementOne())
	if e.db.NativeIncrement() {
		t.Fatal("expected the fallback")
	}
	key, k := e.create(t, CreateParams{Remaining: quota(2), Refill: Refill{Interval: time.Hour, Amount: 3}, RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 10}})
	wantCode(t, e.verify(t, key), "")
	wantCode(t, e.verify(t, key), "")
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	e.clock.Advance(time.Hour)
	r := e.verify(t, key)
	wantCode(t, r, "")
	if remaining(t, r.Key) != 2 || r.Key.RequestCount != 1 {
		t.Fatalf("after refill and window reset: %+v", r.Key)
	}
	_ = k
}

func TestDeleteExpiredOnVerifyIsOptIn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, WithDeleteExpiredOnVerify())
	exp, _ := e.create(t, CreateParams{ExpiresIn: time.Minute})
	used, _ := e.create(t, CreateParams{Remaining: quota(0)})
	e.clock.Advance(time.Minute)
	wantCode(t, e.verify(t, exp), CodeExpired)
	wantCode(t, e.verify(t, exp), CodeInvalid)
	// Exhausted keys are never deleted: that would lose the customer's record.
	wantCode(t, e.verify(t, used), CodeUsageExceeded)
	if n, _ := e.db.Count(ctx, "apikey"); n != 1 {
		t.Fatalf("%d keys left, want 1 (the exhausted one)", n)
	}

	m, _, clock := newStoreEnv(t)
	sm, err := NewStorageOnly(m.store.(*storageStore).s, WithClock(clock.Now), WithDeleteExpiredOnVerify())
	if err != nil {
		t.Fatal(err)
	}
	key, _, _ := sm.Create(ctx, CreateParams{ReferenceID: "u", ExpiresIn: time.Second})
	clock.Advance(time.Second)
	if r, _ := sm.Verify(ctx, key); r.Code != CodeExpired {
		t.Fatalf("first: %+v", r)
	}
	if r, _ := sm.Verify(ctx, key); r.Code != CodeInvalid {
		t.Fatalf("after deletion: %+v", r)
	}
	if list, err := sm.List(ctx, "u"); err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v", list, err)
	}
}
