package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// rule3 and oncePerMinute are the rules most tests decide under.
var (
	rule3         = ratelimit.Rule{Window: 10 * time.Second, Max: 3}
	oncePerMinute = ratelimit.Rule{Window: time.Minute, Max: 1}
)

func TestBadInputIsAnErrorBeforeAnyWrite(t *testing.T) {
	m := memory.New()
	db, _ := core.New(m)
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithLongestWindow(time.Hour))
	ctx := context.Background()
	cases := []struct {
		name, key string
		rule      ratelimit.Rule
		cost      int64
		want      string
	}{
		{"zero window", "k", ratelimit.Rule{Max: 1}, 1, "window 0s must be positive"},
		{"negative window", "k", ratelimit.Rule{Window: -time.Second, Max: 1}, 1, "must be positive"},
		{"sub-millisecond window", "k", ratelimit.Rule{Window: 1500 * time.Microsecond, Max: 1}, 1, "whole number of milliseconds"},
		{"negative max", "k", ratelimit.Rule{Window: time.Second, Max: -1}, 1, "max -1 must not be negative"},
		{"empty key", "", rule3, 1, "empty key"},
		{"negative cost", "k", rule3, -1, "cost -1 must not be negative"},
		{"window past the longest", "k", ratelimit.Rule{Window: 2 * time.Hour, Max: 1}, 1, "longer than the declared longest window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := m.Calls()
			d, err := l.ConsumeN(ctx, tc.key, tc.rule, tc.cost)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
			if d.Allowed {
				t.Error("an invalid request was allowed")
			}
			if m.Calls() != before {
				t.Errorf("%d storage calls for an invalid request, want 0", m.Calls()-before)
			}
		})
	}
}

func TestBadConfigurationIsAnError(t *testing.T) {
	db, _ := core.New(memory.New())
	cases := []struct {
		name string
		s    ratelimit.Storage
		opts []ratelimit.Option
		want string
	}{
		{"nil storage", nil, nil, "nil storage"},
		{"nil db", ratelimit.Database(nil), nil, "nil core.DB"},
		{"nil secondary", ratelimit.Secondary(nil), nil, "nil storage"},
		{"memory without keys", ratelimit.Memory(0), nil, "maxKeys 0 must be positive"},
		{"secondary Better Auth", ratelimit.Secondary(memory.NewStorage()), []ratelimit.Option{ratelimit.WithMode(ratelimit.BetterAuthWindow)}, "fixed window"},
		{"no attempts", ratelimit.Database(db), []ratelimit.Option{ratelimit.WithMaxAttempts(0)}, "at least 1"},
		{"negative cache", ratelimit.Database(db), []ratelimit.Option{ratelimit.WithDenialCache(-1)}, "must not be negative"},
		{"bad longest window", ratelimit.Database(db), []ratelimit.Option{ratelimit.WithLongestWindow(-time.Second)}, "longest window"},
		{"unknown mode", ratelimit.Database(db), []ratelimit.Option{ratelimit.WithMode(7)}, "unknown mode"},
		{"nil clock", ratelimit.Database(db), []ratelimit.Option{ratelimit.WithClock(nil)}, "nil clock"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ratelimit.New(tc.s, tc.opts...)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// TestFixedWindowBoundary: a request whose elapsed time since the window's
// start is exactly the window opens a new window.
func TestFixedWindowBoundary(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
		s := time.Second
		runSteps(t, l, c, "boundary", rule3, []step{
			{at: 0, cost: 1, allowed: true, remaining: 2, reset: 10 * s},
			{at: 4 * s, cost: 1, allowed: true, remaining: 1, reset: 10 * s},
			{at: 9 * s, cost: 1, allowed: true, remaining: 0, reset: 10 * s},
			{at: 9 * s, cost: 1, allowed: false, remaining: 0, reset: 10 * s, retry: s},
			{at: 10*s - time.Millisecond, cost: 1, allowed: false, remaining: 0, reset: 10 * s, retry: time.Millisecond},
			{at: 10 * s, cost: 1, allowed: true, remaining: 2, reset: 20 * s},
			{at: 19 * s, cost: 2, allowed: true, remaining: 0, reset: 20 * s},
			{at: 19*s + 250*time.Millisecond, cost: 1, allowed: false, remaining: 0, reset: 20 * s, retry: 750 * time.Millisecond},
			{at: 45 * s, cost: 1, allowed: true, remaining: 2, reset: 55 * s},
		})
	})
}

// TestBetterAuthWindow: each allowed request moves the window's start, so
// the window measures idle time.
func TestBetterAuthWindow(t *testing.T) {
	for _, b := range backends(t) {
		if !b.betterOK {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithMode(ratelimit.BetterAuthWindow), ratelimit.WithDenialCache(0))
			s := time.Second
			runSteps(t, l, c, "idle", rule3, []step{
				{at: 0, cost: 1, allowed: true, remaining: 2, reset: 10 * s},
				{at: 6 * s, cost: 1, allowed: true, remaining: 1, reset: 16 * s},
				{at: 12 * s, cost: 1, allowed: true, remaining: 0, reset: 22 * s}, // a fixed window would have reset at 10 s
				{at: 15 * s, cost: 1, allowed: false, remaining: 0, reset: 22 * s, retry: 7 * s},
				{at: 21 * s, cost: 1, allowed: false, remaining: 0, reset: 22 * s, retry: s}, // denials do not move it
				{at: 22 * s, cost: 1, allowed: true, remaining: 2, reset: 32 * s},
			})
		})
	}
}

func TestCostAboveOne(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newLimiter(t, b.storage(c), ratelimit.WithClock(c.Now), ratelimit.WithDenialCache(0))
		m, ms := time.Minute, time.Millisecond
		runSteps(t, l, c, "cost", rule, []step{
			{at: 0, cost: 4, allowed: true, remaining: 6, reset: m},
			{at: 1 * ms, cost: 4, allowed: true, remaining: 2, reset: m},
			{at: 2 * ms, cost: 4, allowed: false, remaining: 2, reset: m, retry: m - 2*ms}, // denied, not counted
			{at: 3 * ms, cost: 2, allowed: true, remaining: 0, reset: m},
			{at: 4 * ms, cost: 1, allowed: false, remaining: 0, reset: m, retry: m - 4*ms},
			{at: m, cost: 11, allowed: false, remaining: 10, reset: 2 * m, retry: m}, // can never fit
			{at: m, cost: 10, allowed: true, remaining: 0, reset: 2 * m},
		})
	})
}

// TestMemoryDefaultClockIsWallTime: a limiter on Memory without WithClock
// counts time from the monotonic clock, but from the wall time at New: a
// decision's Reset is the wall time of its window's end, as with any other
// storage, and windows still end.
func TestMemoryDefaultClockIsWallTime(t *testing.T) {
	l, err := ratelimit.New(ratelimit.Memory(16))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: 2}
	before := time.Now()
	d, err := l.Consume(context.Background(), "k", rule)
	after := time.Now()
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	// Reset is in whole milliseconds: allow one either side.
	lo, hi := before.Add(rule.Window-time.Millisecond), after.Add(rule.Window+time.Millisecond)
	if d.Reset.Before(lo) || d.Reset.After(hi) {
		t.Errorf("Reset %v, want between %v and %v (an hour after the call)", d.Reset, lo, hi)
	}
	// A short window ends by the monotonic clock: wait for it without a
	// sleep standing in for synchronisation, by polling the deadline.
	short := ratelimit.Rule{Window: 2 * time.Millisecond, Max: 1}
	first, err := l.Consume(context.Background(), "s", short)
	if err != nil || !first.Allowed {
		t.Fatalf("%+v, %v", first, err)
	}
	if wait := time.Until(first.Reset); wait > time.Second {
		t.Fatalf("a 2 ms window ends in %v", wait)
	}
	for time.Now().Before(first.Reset.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	if d, err := l.Consume(context.Background(), "s", short); err != nil || !d.Allowed {
		t.Errorf("after the window's end (%v): %+v, %v; want allowed in the next window", first.Reset, d, err)
	}
}
