package ratelimit_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestDenialCache: once a key is full, its denials cost no storage call
// until exactly the instant its window ends, under both window semantics.
func TestDenialCache(t *testing.T) {
	ctx := context.Background()
	s := time.Second
	for _, mode := range []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow} {
		t.Run(fmt.Sprint("mode=", mode), func(t *testing.T) {
			m := memory.New()
			db, _ := core.New(m)
			c := newClock()
			l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithMode(mode))
			// Requests at 0, 4 and 6 s fill the key. The window ends at 10 s
			// when fixed, at 16 s when it measures idle time since 6 s.
			for _, at := range []time.Duration{0, 4 * s, 6 * s} {
				c.Set(at)
				if d, err := l.Consume(ctx, "full", rule3); err != nil || !d.Allowed {
					t.Fatalf("filling at %v: %+v, %v", at, d, err)
				}
			}
			end := 10 * s
			if mode == ratelimit.BetterAuthWindow {
				end = 16 * s
			}
			c.Set(7 * s)
			d, err := l.Consume(ctx, "full", rule3)
			if err != nil || d.Allowed || d.Reset != t0.Add(end) {
				t.Fatalf("first denial: %+v, %v; want denied until %v", d, err, end)
			}
			before := m.Calls()
			for _, at := range []time.Duration{7 * s, 8 * s, end - time.Millisecond} {
				c.Set(at)
				for _, cost := range []int64{1, 0, 2} {
					d, err := l.ConsumeN(ctx, "full", rule3, cost)
					want := ratelimit.Decision{Limit: 3, Remaining: 0, Reset: t0.Add(end), RetryAfter: end - at}
					if err != nil || !reflect.DeepEqual(d, want) {
						t.Fatalf("cached denial at %v cost %d: %+v, %v; want %+v", at, cost, d, err, want)
					}
				}
			}
			if got := m.Calls() - before; got != 0 {
				t.Fatalf("%d storage calls while the denial was cached, want 0", got)
			}
			// At the end of the window the storage is asked again, and admits.
			c.Set(end)
			d, err = l.Consume(ctx, "full", rule3)
			if err != nil || !d.Allowed || d.Remaining != 2 {
				t.Fatalf("at the window's end: %+v, %v; want allowed with 2 remaining", d, err)
			}
			if m.Calls() == before {
				t.Fatal("the denial cache answered after the window ended")
			}
			// Another rule for the same key is not answered from the cache.
			c.Set(end + 1*s)
			for i := 0; i < 2; i++ {
				_, _ = l.Consume(ctx, "full", rule3)
			}
			other := ratelimit.Rule{Window: rule3.Window, Max: 5}
			before = m.Calls()
			if d, err := l.Consume(ctx, "full", other); err != nil || !d.Allowed {
				t.Fatalf("other rule: %+v, %v; want allowed (count 3 of 5)", d, err)
			}
			if m.Calls() == before {
				t.Error("a request under another rule was answered from the cache")
			}
		})
	}
}

// TestDenialCacheOnlyForFullKeys: a request denied because its cost does
// not fit leaves smaller requests to the storage.
func TestDenialCacheOnlyForFullKeys(t *testing.T) {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	if d, _ := l.ConsumeN(ctx, "k", rule, 8); !d.Allowed {
		t.Fatal("cost 8 of 10 denied")
	}
	if d, _ := l.ConsumeN(ctx, "k", rule, 5); d.Allowed {
		t.Fatal("cost 5 with 2 left allowed")
	}
	if d, _ := l.ConsumeN(ctx, "k", rule, 2); !d.Allowed {
		t.Fatal("cost 2 with 2 left denied: a partial denial was cached")
	}
}

func TestDenialCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	db, _ := core.New(m)
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(2))
	one := oncePerMinute
	for i := 0; i < 5; i++ {
		key := fmt.Sprint("key", i)
		_, _ = l.Consume(ctx, key, one)
		if d, _ := l.Consume(ctx, key, one); d.Allowed {
			t.Fatalf("%s: second request allowed", key)
		}
		if n := ratelimit.DenialCacheLen(l); n > 2 {
			t.Fatalf("denial cache holds %d keys, bound is 2", n)
		}
	}
	if n := ratelimit.DenialCacheLen(l); n != 2 {
		t.Errorf("denial cache holds %d keys, want 2", n)
	}
	// An evicted key is still denied: by the storage.
	before := m.Calls()
	if d, _ := l.Consume(ctx, "key0", one); d.Allowed {
		t.Error("evicted key allowed")
	}
	if m.Calls() == before {
		t.Error("key0 should have been evicted from a cache of 2")
	}
}

func TestDenialCacheOff(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	db, _ := core.New(m)
	c := newClock()
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
	one := oncePerMinute
	_, _ = l.Consume(ctx, "k", one)
	_, _ = l.Consume(ctx, "k", one)
	before := m.Calls()
	if d, _ := l.Consume(ctx, "k", one); d.Allowed {
		t.Fatal("allowed")
	}
	if got := m.Calls() - before; got != 2 {
		t.Errorf("a denial without cache made %d calls, want 2 (the missed increment and the read)", got)
	}
}
