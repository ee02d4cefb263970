package ratelimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// plainIncrement hides IncrementBounded, as a storage without it would.
type plainIncrement struct{ driver.SecondaryStorage }

// TestSecondaryWithoutBoundedIncrement: denied requests are counted too,
// but the window still ends on time.
func TestSecondaryWithoutBoundedIncrement(t *testing.T) {
	c := newClock()
	ss := memory.NewStorage(memory.WithClock(c.Now))
	l := newLimiter(t, ratelimit.Secondary(plainIncrement{ss}), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
	s := time.Second
	runSteps(t, l, c, "plain", rule3, []step{
		{at: 0, cost: 1, allowed: true, remaining: 2, reset: 10 * s},
		{at: 1 * s, cost: 2, allowed: true, remaining: 0, reset: 10 * s},
		{at: 2 * s, cost: 1, allowed: false, remaining: 0, reset: 10 * s, retry: 8 * s},
		{at: 10 * s, cost: 1, allowed: true, remaining: 2, reset: 20 * s},
	})
	v, _, _ := ss.Get(context.Background(), ratelimit.SecondaryPrefix+"plain")
	if v != "1" {
		t.Errorf("stored counter %q, want 1", v)
	}
}

func TestMemoryStorageIsBounded(t *testing.T) {
	c := newClock()
	s := ratelimit.Memory(3) // small enough for a single shard
	l := newLimiter(t, s, ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
	ctx := context.Background()
	short := ratelimit.Rule{Window: time.Second, Max: 1}
	long := ratelimit.Rule{Window: time.Hour, Max: 1}
	_, _ = l.Consume(ctx, "a", long)
	_, _ = l.Consume(ctx, "b", short)
	_, _ = l.Consume(ctx, "c", long)
	c.Set(time.Second) // b's window is over
	_, _ = l.Consume(ctx, "d", long)
	if n := ratelimit.MemoryLen(s); n != 3 {
		t.Fatalf("%d counters, want 3", n)
	}
	for _, k := range []string{"a", "c", "d"} {
		if d, _ := l.Consume(ctx, k, long); d.Allowed {
			t.Errorf("%s: allowed again, its counter was evicted instead of the expired one", k)
		}
	}
	// With nothing expired, the counter that ends soonest makes room.
	_, _ = l.Consume(ctx, "e", ratelimit.Rule{Window: 2 * time.Hour, Max: 1})
	if n := ratelimit.MemoryLen(s); n != 3 {
		t.Fatalf("%d counters, want 3", n)
	}
	if d, _ := l.Consume(ctx, "d", long); d.Allowed {
		t.Error("d (ending last among the hour windows) was evicted")
	}
}

// TestBurstInProcessStorages: the memory and secondary storages admit
// exactly max under a burst too.
func TestBurstInProcessStorages(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now))
		rule := ratelimit.Rule{Window: time.Minute, Max: 10}
		var admitted atomic.Int64
		testrace.Release(64, func(int) {
			d, err := l.Consume(context.Background(), "burst", rule)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				admitted.Add(1)
			}
		})
		if admitted.Load() != 10 {
			t.Errorf("admitted %d, want 10", admitted.Load())
		}
	})
}

// TestManyKeysConcurrently checks the sharded memory storage under -race.
func TestManyKeysConcurrently(t *testing.T) {
	c := newClock()
	l := newLimiter(t, ratelimit.Memory(10000), ratelimit.WithClock(c.Now))
	rule := ratelimit.Rule{Window: time.Minute, Max: 3}
	var admitted atomic.Int64
	testrace.Release(64, func(i int) {
		for j := 0; j < 50; j++ {
			d, err := l.Consume(context.Background(), fmt.Sprint("key", j), rule)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				admitted.Add(1)
			}
		}
	})
	if admitted.Load() != 50*3 {
		t.Errorf("admitted %d, want %d", admitted.Load(), 50*3)
	}
}
