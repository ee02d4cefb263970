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

// TestDenialCacheMatchesTheCounting: a cached denial answers any rule that
// counts as the denied one did (the same Max and Window, or the same
// Calendar in the same Location), whatever its Name or Shadow, since the
// storage would answer it the same; a rule that counts otherwise asks the
// storage. The entry keeps only what decides the match.
func TestDenialCacheMatchesTheCounting(t *testing.T) {
	ctx := context.Background()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	rolling := ratelimit.Rule{Window: time.Hour, Max: 1}
	daily := ratelimit.Rule{Calendar: ratelimit.Day, Max: 1}
	for _, tc := range []struct {
		name        string
		full, asked ratelimit.Rule
		cached      bool
	}{
		{"another name", rolling, ratelimit.Rule{Window: time.Hour, Max: 1, Name: "other"}, true},
		{"shadow", rolling, ratelimit.Rule{Window: time.Hour, Max: 1, Shadow: true}, true},
		{"another window", rolling, ratelimit.Rule{Window: 2 * time.Hour, Max: 1}, false},
		{"another max", rolling, ratelimit.Rule{Window: time.Hour, Max: 2}, false},
		{"a calendar", rolling, daily, false},
		{"the same calendar, UTC spelled out", daily, ratelimit.Rule{Calendar: ratelimit.Day, Max: 1, Location: time.UTC}, true},
		{"another calendar", daily, ratelimit.Rule{Calendar: ratelimit.Week, Max: 1}, false},
		{"another location", daily, ratelimit.Rule{Calendar: ratelimit.Day, Max: 1, Location: paris}, false},
		{"a rolling rule", daily, ratelimit.Rule{Window: 24 * time.Hour, Max: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := memory.New()
			db, _ := core.New(m)
			c := newClock()
			l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
			for i := 0; i < 2; i++ { // fill, then learn the denial
				_, _ = l.Consume(ctx, "k", tc.full)
			}
			before := m.Calls()
			d, err := l.Consume(ctx, "k", tc.asked)
			if err != nil {
				t.Fatal(err)
			}
			if cached := m.Calls() == before; cached != tc.cached {
				t.Fatalf("answered from the cache: %v, want %v (%+v)", cached, tc.cached, d)
			}
			if tc.cached && (d.Allowed != tc.asked.Shadow || d.WouldDeny != tc.asked.Shadow || d.Limit != 1) {
				t.Fatalf("cached answer %+v: want denied, or admitted with WouldDeny under a shadow rule", d)
			}
		})
	}
}
