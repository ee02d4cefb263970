package redistest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// slidingT0 starts a minute, so the windows of 10 per minute are known.
var slidingT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var slidingRule = ratelimit.Rule{Window: time.Minute, Max: 10}

// slidingLimiters returns one SlidingWindow limiter per server, on a clock
// at `at` since slidingT0.
func slidingLimiters(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) driver.SecondaryStorage, at *atomic.Int64) []*ratelimit.Limiter {
	t.Helper()
	now := func() time.Time { return slidingT0.Add(time.Duration(at.Load())) }
	var limiters []*ratelimit.Limiter
	for _, s := range stores {
		l, err := ratelimit.New(ratelimit.Secondary(wrap(s)), ratelimit.WithMode(ratelimit.SlidingWindow), ratelimit.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	return limiters
}

// slidingBurst releases 64 goroutines over the limiters on key and returns
// how many were admitted.
func slidingBurst(t *testing.T, limiters []*ratelimit.Limiter, key string) int64 {
	t.Helper()
	var admitted atomic.Int64
	adaptertest.Release(64, func(i int) {
		d, err := limiters[i%len(limiters)].Consume(context.Background(), key, slidingRule)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

// TestSlidingRace: SlidingWindow on Redis, 64 concurrent requests from 4
// servers: exactly 10 on a fresh key; in the next window, halfway through,
// exactly 5 (the previous 10 weigh 5), and 48 s in exactly 3 more (5 +
// ceil(10 × 12/60) = 7); each window's counter holds what it admitted.
func TestSlidingRace(t *testing.T) {
	stores := servers(t, 4)
	var at atomic.Int64
	limiters := slidingLimiters(t, stores, same, &at)
	i := slidingT0.UnixMilli() / slidingRule.Window.Milliseconds()
	for _, step := range []struct {
		at     time.Duration
		want   int64
		window int64 // since i
		count  string
	}{
		{10 * time.Second, 10, 0, "10"},
		{90 * time.Second, 5, 1, "5"},
		{108 * time.Second, 3, 1, "8"},
	} {
		at.Store(int64(step.at))
		if got := slidingBurst(t, limiters, "s"); got != step.want {
			t.Fatalf("at %v: admitted %d of 64; want exactly %d", step.at, got, step.want)
		}
		name := fmt.Sprintf("%ss%s%d", ratelimit.SecondaryPrefix, ratelimit.SlidingSeparator, i+step.window)
		if v, ok, err := stores[0].Get(context.Background(), name); err != nil || !ok || v != step.count {
			t.Fatalf("at %v: counter %q = %q, %v, %v; want %s", step.at, name, v, ok, err, step.count)
		}
	}
}

// TestSlidingRaceCatchesNonAtomic proves TestSlidingRace can fail: the
// same races on a read-then-write counter admit more than the allowance,
// on a fresh key and with the previous window weighing.
func TestSlidingRaceCatchesNonAtomic(t *testing.T) {
	stores := servers(t, 4)
	var at atomic.Int64
	unguarded := func() []*ratelimit.Limiter {
		b := newBarrier(64) // shared by the servers: all 64 callers read before any writes
		return slidingLimiters(t, stores, func(s *sluiceredis.Storage) driver.SecondaryStorage { return readThenWriteCounter{s, b} }, &at)
	}
	at.Store(int64(10 * time.Second))
	fresh := slidingBurst(t, unguarded(), "fresh")
	t.Logf("fresh key: the read-then-write counter admitted %d of 64 with max 10", fresh)
	if fresh <= 10 {
		t.Fatalf("fresh key: the read-then-write counter admitted %d; the race should have let more than 10 through", fresh)
	}
	// The atomic storage fills a window; halfway through the next one the
	// read-then-write counter lets more than 5 through.
	if got := slidingBurst(t, slidingLimiters(t, stores, same, &at), "weighed"); got != 10 {
		t.Fatalf("filling the window: admitted %d, want 10", got)
	}
	at.Store(int64(90 * time.Second))
	weighed := slidingBurst(t, unguarded(), "weighed")
	t.Logf("previous window weighing 5: the read-then-write counter admitted %d of 64", weighed)
	if weighed <= 5 {
		t.Fatalf("previous window weighing 5: the read-then-write counter admitted %d; the race should have let more than 5 through", weighed)
	}
}
