package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

var leaseRule = ratelimit.Rule{Window: time.Second, Max: 50}

// leaseBackends are the storages leases serve, each fresh: database
// storage natively and through core's fallback, and a secondary storage.
func leaseBackends(t *testing.T) []backend {
	var out []backend
	for _, b := range backends(t) {
		if b.name != "memory" {
			out = append(out, b)
		}
	}
	return out
}

// leaseProcesses makes n limiters on one storage, as n processes would
// have, each with leases of size (and opts).
func leaseProcesses(t *testing.T, b backend, c *clock, n int, size int64, opts ...ratelimit.Option) []*ratelimit.Limiter {
	t.Helper()
	var ls []*ratelimit.Limiter
	shared := b.storage(c) // a secondary store keeps nothing per process
	for range n {
		s := shared
		if b.db != nil {
			s = ratelimit.Database(b.db) // its own remembered window starts
		}
		ls = append(ls, newLimiter(t, s, append([]ratelimit.Option{ratelimit.WithClock(c.Now), ratelimit.WithLeases(size)}, opts...)...))
	}
	return ls
}

// leaseWindows races 128 requests over the limiters in each of three
// windows and checks each: never more than Max admitted, and at least Max
// less what the limiters still hold in leases. It returns the first window
// that broke that.
func leaseWindows(ls []*ratelimit.Limiter, c *clock, key string) error {
	for w := range 3 {
		c.Set(time.Duration(w) * leaseRule.Window)
		var admitted atomic.Int64
		var errs atomic.Pointer[error]
		testrace.Release(128, func(i int) {
			d, err := ls[i%len(ls)].Consume(context.Background(), key, leaseRule)
			if err != nil {
				errs.Store(&err)
			}
			if d.Allowed {
				admitted.Add(1)
			}
		})
		if e := errs.Load(); e != nil {
			return *e
		}
		var leased int64
		for _, l := range ls {
			leased += l.Leased()
		}
		if n := admitted.Load(); n > leaseRule.Max || n < leaseRule.Max-leased {
			return fmt.Errorf("window %d admitted %d with %d held in leases, want within [%d, %d]",
				w, n, leased, leaseRule.Max-leased, leaseRule.Max)
		}
	}
	return nil
}

// TestLeasesExactOverProcesses: four limiters with leases on one storage,
// as four processes, in three windows: never above Max, never below Max
// less what the leases hold; on database storage, write combining too.
func TestLeasesExactOverProcesses(t *testing.T) {
	for _, b := range leaseBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			if err := leaseWindows(leaseProcesses(t, b, c, 4, 8), c, "hot"); err != nil {
				t.Error(err)
			}
		})
		if b.db != nil {
			t.Run(b.name+"/write-combining", func(t *testing.T) {
				c := newClock()
				if err := leaseWindows(leaseProcesses(t, b, c, 4, 8, ratelimit.WithWriteCombining()), c, "hot-combined"); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestBrokenLeaseIsCaught is the proof for the race above: a lease that
// spends a block the window had no room for over-admits, and the race
// catches it.
func TestBrokenLeaseIsCaught(t *testing.T) {
	b := leaseBackends(t)[0]
	c := newClock()
	ls := leaseProcesses(t, b, c, 4, 8)
	for _, l := range ls {
		ratelimit.BreakLeaseGrant(l)
	}
	err := leaseWindows(ls, c, "broken")
	if err == nil {
		t.Fatal("a lease that takes refused blocks passed the race")
	}
	t.Logf("caught: %v", err)
}

// TestOneProcessAdmitsExactlyMax: alone on a key, a limiter with leases
// admits exactly Max in a window, one request at a time: its last blocks
// shrink to what is left, and it holds nothing once the window is full.
func TestOneProcessAdmitsExactlyMax(t *testing.T) {
	for _, b := range leaseBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			l := leaseProcesses(t, b, c, 1, 32)[0]
			var admitted int64
			for range 80 {
				d, err := l.Consume(context.Background(), "alone", leaseRule)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != leaseRule.Max || l.Leased() != 0 {
				t.Errorf("admitted %d holding %d, want %d holding 0", admitted, l.Leased(), leaseRule.Max)
			}
		})
	}
}

// TestLeaseReturns: what a lease holds goes back to the counter at Close,
// and by Prune once unused for the lease time, so that another process
// can spend it; a lease in use is not returned.
func TestLeaseReturns(t *testing.T) {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	stored := func() int64 {
		row, _, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "k"))
		if err != nil {
			t.Fatal(err)
		}
		return row.Int("count")
	}
	a := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLeases(40), ratelimit.WithLeaseTime(100*time.Millisecond))
	if d, err := a.Consume(ctx, "k", leaseRule); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	held := a.Leased()
	if held != 4 || stored() != 5 { // a first block of 40/8
		t.Fatalf("after one request: holding %d with %d stored, want 4 and 5", held, stored())
	}
	c.Set(50 * time.Millisecond)
	if _, err := a.Prune(ctx); err == nil || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Prune without WithLongestWindow: %v", err) // it still returns idle leases first
	}
	if a.Leased() != held {
		t.Fatalf("a lease used 50 ms ago was returned")
	}
	c.Set(150 * time.Millisecond)
	_, _ = a.Prune(ctx)
	if a.Leased() != 0 || stored() != 1 {
		t.Fatalf("after the lease time: holding %d with %d stored, want 0 and 1", a.Leased(), stored())
	}
	if d, err := a.Consume(ctx, "k", leaseRule); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if a.Leased() != 0 || stored() != 2 {
		t.Fatalf("after Close: holding %d with %d stored, want 0 and 2", a.Leased(), stored())
	}
	// Closed, it decides without leases.
	if d, err := a.Consume(ctx, "k", leaseRule); err != nil || !d.Allowed || a.Leased() != 0 || stored() != 3 {
		t.Fatalf("after Close: %+v, %v, holding %d, stored %d", d, err, a.Leased(), stored())
	}
}

// TestDeadProcessLosesAtMostItsLease: a limiter that stops without
// returning its lease (a killed process) costs the others at most what it
// held: they admit the rest, exactly.
func TestDeadProcessLosesAtMostItsLease(t *testing.T) {
	ctx := context.Background()
	b := leaseBackends(t)[0]
	c := newClock()
	ls := leaseProcesses(t, b, c, 2, 16)
	dead, live := ls[0], ls[1]
	for range 3 {
		if _, err := dead.Consume(ctx, "k", leaseRule); err != nil {
			t.Fatal(err)
		}
	}
	lost := dead.Leased()
	var admitted int64
	for range 100 {
		d, err := live.Consume(ctx, "k", leaseRule)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if lost > 16 || admitted != leaseRule.Max-3-lost {
		t.Errorf("the dead process held %d; the live one admitted %d, want %d", lost, admitted, leaseRule.Max-3-lost)
	}
}

// TestStaleClockReadingSpendsTheLease: a caller whose clock reading is
// older than the window its process's refill found (it read the clock,
// then waited for the refill) spends the lease; it does not drop it.
func TestStaleClockReadingSpendsTheLease(t *testing.T) {
	ctx := context.Background()
	b := leaseBackends(t)[0]
	c := newClock()
	ls := leaseProcesses(t, b, c, 2, 16)
	c.Set(10 * time.Millisecond)
	if _, err := ls[0].Consume(ctx, "k", leaseRule); err != nil { // opens the window at 10 ms
		t.Fatal(err)
	}
	c.Set(5 * time.Millisecond)
	for range 2 {
		if d, err := ls[1].Consume(ctx, "k", leaseRule); err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
	}
	row, _, err := b.db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "k"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := row.Int("count"), 3+ls[0].Leased()+ls[1].Leased(); got != want || ls[1].Leased() != 0 {
		t.Errorf("stored %d, want the 3 admitted and the %d held (%d by the second)", got, want-3, ls[1].Leased())
	}
}

// TestLeaseConfiguration: bad sizes and what leases cannot serve are
// errors wrapping core.ErrInvalid, at New or, for a rule, before any
// write.
func TestLeaseConfiguration(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]ratelimit.Option{
		"zero":            {ratelimit.WithLeases(0)},
		"negative":        {ratelimit.WithLeases(-5)},
		"sliding":         {ratelimit.WithLeases(5), ratelimit.WithMode(ratelimit.SlidingWindow)},
		"better-auth":     {ratelimit.WithLeases(5), ratelimit.WithMode(ratelimit.BetterAuthWindow)},
		"time-alone":      {ratelimit.WithLeaseTime(time.Second)},
		"negative-time":   {ratelimit.WithLeases(5), ratelimit.WithLeaseTime(-time.Second)},
		"sub-millisecond": {ratelimit.WithLeases(5), ratelimit.WithLeaseTime(time.Microsecond)},
	} {
		if _, err := ratelimit.New(ratelimit.Database(db), opts...); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: New: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := ratelimit.New(ratelimit.Memory(10), ratelimit.WithLeases(5)); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Memory: %v, want ErrInvalid", err)
	}
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithLeases(20))
	for _, rule := range []ratelimit.Rule{{Window: time.Second, Max: 19}, {Calendar: ratelimit.Day, Max: 100}} {
		if err := l.CheckRule(rule); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("CheckRule(%+v): %v, want ErrInvalid", rule, err)
		}
		if d, err := l.Consume(context.Background(), "k", rule); !errors.Is(err, core.ErrInvalid) || d.Allowed {
			t.Errorf("Consume(%+v): %+v, %v, want denied with ErrInvalid", rule, d, err)
		}
	}
	if n, err := db.Count(context.Background(), core.ModelRateLimit); err != nil || n != 0 {
		t.Errorf("refused rules wrote %d rows (%v)", n, err)
	}
	if err := l.CheckRule(ratelimit.Rule{Window: time.Second, Max: 20}); err != nil {
		t.Errorf("a lease of exactly Max: %v", err)
	}
}

// TestLeaseObserved: the observer's Event says what the key's lease holds,
// and Check counts it as room.
func TestLeaseObserved(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	var seen []int64
	l := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLeases(16),
		ratelimit.WithObserver(func(_ context.Context, e ratelimit.Event) { seen = append(seen, e.Leased) }))
	ctx := context.Background()
	for range 3 {
		if _, err := l.Consume(ctx, "k", leaseRule); err != nil {
			t.Fatal(err)
		}
	}
	d, err := l.Check(ctx, "k", leaseRule)
	if err != nil || !d.Allowed || d.Remaining != leaseRule.Max-3 {
		t.Errorf("Check: %+v, %v; want allowed with %d remaining", d, err, leaseRule.Max-3)
	}
	// A first block of 16/8, spent; then one twice the size, as the first
	// went within the lease time.
	if fmt.Sprint(seen) != "[1 0 3 3]" {
		t.Errorf("Event.Leased %v, want [1 0 3 3]", seen)
	}
}

// ExampleWithLeases: a limiter that reserves a hot key's units in blocks
// of up to 100, here alone on the key, so it admits exactly Max; Close
// returns what its lease still holds.
func ExampleWithLeases() {
	db, _ := core.New(memory.New())
	l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithLeases(100))
	if err != nil {
		fmt.Println(err)
		return
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 1000}
	admitted := 0
	for range 1200 {
		if d, _ := l.Consume(context.Background(), "hot", rule); d.Allowed {
			admitted++
		}
	}
	fmt.Println("admitted", admitted, "holding", l.Leased())
	_, err = ratelimit.New(ratelimit.Database(db), ratelimit.WithLeases(0))
	fmt.Println(errors.Is(err, core.ErrInvalid))
	_ = l.Close()
	// Output:
	// admitted 1000 holding 0
	// true
}

// TestLeaseClaimsTheRestAfterAReset: a lease whose refill finds the
// counter reset by another process (a new window) drops what it held for
// the old one and claims what the request still needs, so the new window
// never counts less than was admitted in it.
func TestLeaseClaimsTheRestAfterAReset(t *testing.T) {
	ctx := context.Background()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	rule := ratelimit.Rule{Window: time.Second, Max: 10}
	a := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now), ratelimit.WithLeases(10))
	other := newLimiter(t, ratelimit.Database(db), ratelimit.WithClock(c.Now))
	for range 2 { // blocks of 1, then 2: one unit left in the lease
		if d, err := a.Consume(ctx, "k", rule); err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
	}
	if a.Leased() != 1 {
		t.Fatalf("holding %d, want 1", a.Leased())
	}
	c.Set(time.Millisecond)
	if err := other.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, err := other.ConsumeN(ctx, "k", rule, 7); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	c.Set(2 * time.Millisecond)
	if d, err := a.ConsumeN(ctx, "k", rule, 3); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	// 7 + 3 admitted in the new window: it is full.
	if d, err := other.Consume(ctx, "k", rule); err != nil || d.Allowed {
		t.Errorf("after 10 admitted in the window: %+v, %v; want denied", d, err)
	}
}
