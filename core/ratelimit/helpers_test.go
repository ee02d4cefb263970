package ratelimit_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// t0 is the tests' start instant.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is core's shared test clock, set by the time since t0.
type clock struct{ *testclock.Clock }

func newClock() *clock { return &clock{testclock.New(t0)} }

// Set moves the clock to t0 + d.
func (c *clock) Set(d time.Duration) { c.Clock.Set(t0.Add(d)) }

// At returns a func that moves the clock to t0 + d.
func (c *clock) At(d time.Duration) func() { return func() { c.Set(d) } }

// backend is one storage under test, with a count of its round trips.
type backend struct {
	name     string
	storage  func(c *clock) ratelimit.Storage
	calls    func() int64
	db       *core.DB // nil unless database storage
	betterOK bool     // serves BetterAuthWindow
}

// backends returns every storage, each fresh.
func backends(t *testing.T) []backend {
	t.Helper()
	native, fallback := memory.New(), memory.New()
	ndb, err := core.New(native)
	if err != nil {
		t.Fatal(err)
	}
	fdb, err := core.New(fallback.WithoutIncrementOne())
	if err != nil {
		t.Fatal(err)
	}
	var ss *memory.Storage
	return []backend{
		{name: "database", storage: func(*clock) ratelimit.Storage { return ratelimit.Database(ndb) }, calls: native.Calls, db: ndb, betterOK: true},
		{name: "database-fallback", storage: func(*clock) ratelimit.Storage { return ratelimit.Database(fdb) }, calls: fallback.Calls, db: fdb, betterOK: true},
		{name: "memory", storage: func(*clock) ratelimit.Storage { return ratelimit.Memory(1000) }, calls: func() int64 { return 0 }, betterOK: true},
		{name: "secondary", storage: func(c *clock) ratelimit.Storage {
			ss = memory.NewStorage(memory.WithClock(c.Now))
			return ratelimit.Secondary(ss)
		}, calls: func() int64 { return ss.Calls() }},
	}
}

// eachBackend runs fn on every storage, each fresh, with a clock of its
// own at t0.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend, c *clock)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { fn(t, b, newClock()) })
	}
}

func newLimiter(t *testing.T, s ratelimit.Storage, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(s, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// step is one request of a scripted sequence and its expected decision.
type step struct {
	at        time.Duration // since t0
	cost      int64
	allowed   bool
	remaining int64
	reset     time.Duration // since t0
	retry     time.Duration
}

func runSteps(t *testing.T, l *ratelimit.Limiter, c *clock, key string, rule ratelimit.Rule, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, s := range steps {
		c.Set(s.at)
		d, err := l.ConsumeN(ctx, key, rule, s.cost)
		if err != nil {
			t.Fatalf("step %d at %v: %v", i, s.at, err)
		}
		want := ratelimit.Decision{Allowed: s.allowed, Limit: rule.Max, Remaining: s.remaining, Reset: t0.Add(s.reset), RetryAfter: s.retry}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("step %d at %v cost %d:\n got %+v\nwant %+v", i, s.at, s.cost, d, want)
		}
	}
}

// burst releases n requests of cost on key at the clock's instant and
// returns how many were admitted.
func burst(t *testing.T, l *ratelimit.Limiter, key string, rule ratelimit.Rule, n int, cost int64) int64 {
	t.Helper()
	var admitted atomic.Int64
	testrace.Release(n, func(int) {
		d, err := l.ConsumeN(context.Background(), key, rule, cost)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

var errBroken = errors.New("database down")

// broken is an adapter whose every call fails.
type broken struct{ *memory.Memory }

func (broken) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return nil, errBroken
}
