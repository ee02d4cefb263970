package ratelimit_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// gcraRule: 4 per second, so T = 250 ms and the bucket holds 1 s of debt.
var gcraRule = ratelimit.Rule{Window: time.Second, Max: 4}

func newGCRA(t *testing.T, s ratelimit.Storage, c *clock, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	return newLimiter(t, s, append([]ratelimit.Option{ratelimit.WithClock(c.Now), ratelimit.WithMode(ratelimit.GCRA)}, opts...)...)
}

// TestGCRASteps: a burst of Max at once, then one per T; RetryAfter to the
// millisecond; costs above 1 (admitted, denied with room for less, denied
// on a full bucket); checks; the denial cache answering as the storage
// would; an idle key full again; Reset. On every storage, with the same
// decisions whether or not a denial cache answers.
func TestGCRASteps(t *testing.T) {
	ms := time.Millisecond
	steps := []step{
		// The burst: Max at once, each moving the tat T further.
		{at: 0, cost: 1, allowed: true, remaining: 3, reset: 250 * ms},
		{at: 0, cost: 1, allowed: true, remaining: 2, reset: 500 * ms},
		{at: 0, cost: 1, allowed: true, remaining: 1, reset: 750 * ms},
		{at: 0, cost: 1, allowed: true, remaining: 0, reset: 1000 * ms},
		// Full: the next unit fits one T from now.
		{at: 0, cost: 1, allowed: false, remaining: 0, reset: 250 * ms, retry: 250 * ms},
		{at: 249 * ms, cost: 1, allowed: false, remaining: 0, reset: 250 * ms, retry: 1 * ms},
		{at: 250 * ms, cost: 1, allowed: true, remaining: 0, reset: 1250 * ms},
		{at: 300 * ms, cost: 1, allowed: false, remaining: 0, reset: 500 * ms, retry: 200 * ms},
		// A check on a full key is denied until a unit fits...
		{at: 499 * ms, cost: 0, allowed: false, remaining: 0, reset: 500 * ms, retry: 1 * ms},
		// ...and then reports the room and when the bucket is full again.
		{at: 500 * ms, cost: 0, allowed: true, remaining: 1, reset: 1250 * ms},
		// Cost 2 with room for 1: denied until 2 fit, one T later.
		{at: 500 * ms, cost: 2, allowed: false, remaining: 1, reset: 750 * ms, retry: 250 * ms},
		{at: 750 * ms, cost: 2, allowed: true, remaining: 0, reset: 1750 * ms},
		// Cost 3 on a full bucket: 3 fit three T after the tat leaves room.
		{at: 750 * ms, cost: 3, allowed: false, remaining: 0, reset: 1500 * ms, retry: 750 * ms},
		// Cost 1 right after is told its own instant (the denial cache,
		// where there is one, holds the cost-1 instant, not cost 3's).
		{at: 800 * ms, cost: 1, allowed: false, remaining: 0, reset: 1000 * ms, retry: 200 * ms},
		{at: 1000 * ms, cost: 1, allowed: true, remaining: 0, reset: 2000 * ms},
		// Idle past the tat: a full bucket again.
		{at: 5 * time.Second, cost: 4, allowed: true, remaining: 0, reset: 6 * time.Second},
		{at: 6 * time.Second, cost: 0, allowed: true, remaining: 4, reset: 6 * time.Second},
		{at: 6 * time.Second, cost: 1, allowed: true, remaining: 3, reset: 6250 * ms},
	}
	for _, b := range backends(t) {
		for _, cache := range []int{ratelimit.DefaultDenialCacheSize, 0} {
			name := b.name
			if cache == 0 {
				name += "/no-cache"
			}
			t.Run(name, func(t *testing.T) {
				c := newClock()
				l := newGCRA(t, b.storage(c), c, ratelimit.WithDenialCache(cache))
				runSteps(t, l, c, "g"+name, gcraRule, steps)
			})
		}
	}
}

// TestGCRAIntervalRoundsUp: T is Window/Max rounded up to the
// millisecond, so the rate never exceeds Max per Window: 3 per second
// spaces requests 334 ms apart, and the bucket holds 3·334 ms.
func TestGCRAIntervalRoundsUp(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Second, Max: 3}
	if got := ratelimit.GCRAInterval(rule); got != 334 {
		t.Fatalf("T = %d ms, want 334", got)
	}
	if got := ratelimit.GCRAInterval(ratelimit.Rule{Window: time.Millisecond, Max: 5}); got != 1 {
		t.Fatalf("T = %d ms for 5 per ms, want 1 (at most 1 per ms)", got)
	}
	ms := time.Millisecond
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newGCRA(t, b.storage(c), c)
		runSteps(t, l, c, "r", rule, []step{
			{at: 0, cost: 3, allowed: true, remaining: 0, reset: 1002 * ms},
			{at: 333 * ms, cost: 1, allowed: false, remaining: 0, reset: 334 * ms, retry: 1 * ms},
			{at: 334 * ms, cost: 1, allowed: true, remaining: 0, reset: 1336 * ms},
			{at: 667 * ms, cost: 1, allowed: false, remaining: 0, reset: 668 * ms, retry: 1 * ms},
		})
	})
}

// TestGCRAReset: Reset empties a full key's bucket at once, with the
// denial cache on.
func TestGCRAReset(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newGCRA(t, b.storage(c), c)
		if d, err := l.ConsumeN(ctx, "k", gcraRule, 4); err != nil || !d.Allowed {
			t.Fatalf("burst: %+v, %v", d, err)
		}
		if d, err := l.Consume(ctx, "k", gcraRule); err != nil || d.Allowed {
			t.Fatalf("over the burst: %+v, %v; want denied", d, err)
		}
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		d, err := l.ConsumeN(ctx, "k", gcraRule, 4)
		want := ratelimit.Decision{Allowed: true, Limit: 4, Remaining: 0, Reset: t0.Add(time.Second)}
		if err != nil || !reflect.DeepEqual(d, want) {
			t.Fatalf("after Reset: %+v, %v; want %+v", d, err, want)
		}
	})
}

// TestGCRARace: 64 requests at one instant admit exactly what the bucket
// holds, on a fresh key (the row's creation and the empty-bucket reset
// raced) and in steady state (the guarded increment raced), on every
// storage, several limiters sharing one.
func TestGCRARace(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 10} // T = 6 s
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		s := b.storage(c)
		for _, cost := range []int64{1, 3} {
			key := "race" + string(rune('0'+cost))
			if got := burst(t, newGCRA(t, s, c), key, rule, 64, cost); got != rule.Max/cost {
				t.Fatalf("cost %d on a fresh key: admitted %d, want %d", cost, got, rule.Max/cost)
			}
		}
		// Steady state: 5 T later, 5 units fit.
		c.Set(30 * time.Second)
		if got := burst(t, newGCRA(t, s, c), "race1", rule, 64, 1); got != 5 {
			t.Fatalf("5 T later: admitted %d, want 5", got)
		}
		// Past the tat (an empty bucket, to be reset by one winner).
		c.Set(10 * time.Minute)
		if got := burst(t, newGCRA(t, s, c), "race1", rule, 64, 1); got != rule.Max {
			t.Fatalf("after the bucket emptied: admitted %d, want %d", got, rule.Max)
		}
	})
}

// TestGCRARaceCatchesUnguarded proves TestGCRARace can fail: the same
// bursts against a GCRA that reads the tat and writes the new one without
// a guard admit more than the bucket holds, while the guarded storage on
// the same database stays exact.
func TestGCRARaceCatchesUnguarded(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	if got := burst(t, newGCRA(t, ratelimit.Database(db), c), "guarded", rule, 64, 1); got != rule.Max {
		t.Fatalf("guarded: admitted %d, want %d", got, rule.Max)
	}
	got := burst(t, newGCRA(t, ratelimit.UnguardedGCRA(db), c), "unguarded", rule, 64, 1)
	if got <= rule.Max {
		t.Fatalf("unguarded: admitted %d, not more than %d: the race does not show the missing guard", got, rule.Max)
	}
	t.Logf("caught: the unguarded GCRA admitted %d of 64 with max %d", got, rule.Max)
	// Sequentially it decides as the guarded one does: only the race shows it.
	c2 := newClock()
	l := newGCRA(t, ratelimit.UnguardedGCRA(db), c2)
	for i := range 11 {
		if d, err := l.Consume(context.Background(), "sequential", rule); err != nil || d.Allowed != (i < 10) {
			t.Fatalf("sequential request %d: %+v, %v", i+1, d, err)
		}
	}
}

// TestGCRARoundTrips: in steady state an admitted request is one round
// trip on database storage (the guarded increment) and on secondary
// storage (one AdvanceTAT).
func TestGCRARoundTrips(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 100}
	for _, b := range backends(t) {
		if b.name == "memory" || b.name == "database-fallback" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			l := newGCRA(t, b.storage(c), c)
			if _, err := l.Consume(ctx, "rt", rule); err != nil { // opens the key
				t.Fatal(err)
			}
			before := b.calls()
			for i := range 50 {
				if d, err := l.Consume(ctx, "rt", rule); err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v, %v", i, d, err)
				}
			}
			if n := b.calls() - before; n != 50 {
				t.Errorf("%d round trips for 50 admitted requests, want 50", n)
			}
		})
	}
}

// TestGCRAOnDatabaseRow: the tat is stored in lastRequest, count stays 0,
// and Prune deletes a row only once its tat is the longest window past,
// when its bucket has long been full: pruning loses no debt.
func TestGCRAOnDatabaseRow(t *testing.T) {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newGCRA(t, ratelimit.Database(db), c, ratelimit.WithLongestWindow(time.Second))
	if _, err := l.ConsumeN(ctx, "row", gcraRule, 3); err != nil {
		t.Fatal(err)
	}
	row, ok, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "row"))
	if err != nil || !ok || row.Int("count") != 0 || row.Int("lastRequest") != t0.UnixMilli()+750 {
		t.Fatalf("row %v, %v, %v; want count 0, lastRequest t0+750", row, ok, err)
	}
	c.Set(1749 * time.Millisecond) // the tat is 999 ms past: kept
	if n, err := l.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune = %d, %v; want 0", n, err)
	}
	c.Set(1750 * time.Millisecond)
	if n, err := l.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
}

// TestGCRAConfiguration: GCRA needs a secondary storage that advances a
// tat atomically, and does not combine writes.
func TestGCRAConfiguration(t *testing.T) {
	_, err := ratelimit.New(ratelimit.Secondary(plainIncrement{memory.NewStorage()}), ratelimit.WithMode(ratelimit.GCRA))
	if !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Secondary without TATAdvancer: %v, want ErrInvalid", err)
	}
	db, _ := core.New(memory.New())
	_, err = ratelimit.New(ratelimit.Database(db), ratelimit.WithMode(ratelimit.GCRA), ratelimit.WithWriteCombining())
	if !errors.Is(err, core.ErrInvalid) {
		t.Errorf("GCRA with write combining: %v, want ErrInvalid", err)
	}
}

// TestGCRARoundTripsPerKeyState counts the database round trips of one
// admitted request by what the key's row holds and what this process has
// seen of it: an idle key (its tat at or before now) and a busy one (tat
// ahead) are one guarded write each, whether this process wrote the row
// or another one did; a fresh key is a set that misses, a read and the
// creation. A busy key this process last saw idle costs the set that
// misses, then the increment; one it never saw, the set, a read and the
// increment. The old order (the increment first, then a read) took 3 on
// an idle key.
func TestGCRARoundTripsPerKeyState(t *testing.T) {
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, Max: 100} // T = 600 ms
	b := backends(t)[0]
	if b.name != "database" {
		t.Fatalf("backend %q, want database (native IncrementOne)", b.name)
	}
	c := newClock()
	here := newGCRA(t, b.storage(c), c)
	there := newGCRA(t, b.storage(c), c) // another process on the same table
	third := newGCRA(t, b.storage(c), c)
	consume := func(l *ratelimit.Limiter, key string) int64 {
		t.Helper()
		before := b.calls()
		if d, err := l.Consume(ctx, key, rule); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", key, d, err)
		}
		return b.calls() - before
	}
	for _, s := range []struct {
		name string
		at   time.Duration
		l    *ratelimit.Limiter
		key  string
		want int64
	}{
		{"fresh key", 0, here, "k", 3},
		{"busy key", 0, here, "k", 1},
		{"idle key", 10 * time.Second, here, "k", 1},
		{"fresh key, elsewhere", 10 * time.Second, there, "o", 3},
		{"idle key written elsewhere", 20 * time.Second, here, "o", 1},
		{"busy key last seen idle here", 20 * time.Second, there, "o", 2},
		{"busy key again", 20 * time.Second, here, "o", 1},
		{"busy key never seen here", 20 * time.Second, third, "o", 3},
		{"busy key seen here", 20 * time.Second, third, "o", 1},
	} {
		c.Set(s.at)
		if n := consume(s.l, s.key); n != s.want {
			t.Errorf("%s: %d round trips, want %d", s.name, n, s.want)
		}
	}
}
