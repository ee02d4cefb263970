package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
)

func newSliding(t *testing.T, s ratelimit.Storage, c *clock, opts ...ratelimit.Option) *ratelimit.Limiter {
	t.Helper()
	return newLimiter(t, s, append([]ratelimit.Option{ratelimit.WithClock(c.Now), ratelimit.WithMode(ratelimit.SlidingWindow)}, opts...)...)
}

// slidingRule: 10 per 10 s. t0 is a multiple of 10 s since the epoch, so
// window k spans [10k s, 10(k+1) s) after t0.
var slidingRule = ratelimit.Rule{Window: 10 * time.Second, Max: 10}

// TestSlidingSteps: a full window, then no burst at the boundary (a fixed
// window would admit 10 more); the previous window's weight decaying;
// RetryAfter to the millisecond, in this window (the weight decays) and in
// the next (this count becomes the previous one); costs above 1 (admitted,
// denied with room for less, denied on a full key); checks; a cost above
// Max; the denial cache answering as the storage would. On every storage,
// with the same decisions whether or not a denial cache answers.
func TestSlidingSteps(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	steps := []step{
		{at: 2 * s, cost: 4, allowed: true, remaining: 6, reset: 10 * s},
		{at: 5 * s, cost: 6, allowed: true, remaining: 0, reset: 10 * s},
		// Full: 10 counted, no previous window. One unit fits once this
		// window is the previous one weighing 10 × 9/10: 1 s into the next.
		{at: 6 * s, cost: 1, allowed: false, remaining: 0, reset: 11 * s, retry: 5 * s},
		// The boundary: the previous window weighs all of its 10.
		{at: 10 * s, cost: 1, allowed: false, remaining: 0, reset: 11 * s, retry: 1 * s},
		{at: 10 * s, cost: 0, allowed: false, remaining: 0, reset: 11 * s, retry: 1 * s},
		// 1 s in: ceil(10 × 9/10) = 9, one unit fits.
		{at: 11 * s, cost: 1, allowed: true, remaining: 0, reset: 20 * s},
		// 1 + ceil(10 × (10−e)/10) ≤ 9 from e = 2 s.
		{at: 11 * s, cost: 1, allowed: false, remaining: 0, reset: 12 * s, retry: 1 * s},
		// 5 s in: the previous window weighs ceil(5) = 5; 1 + 3 + 5 = 9.
		{at: 15 * s, cost: 3, allowed: true, remaining: 1, reset: 20 * s},
		// Cost 2 with room for 1: 4 + 2 + ceil(10 × (10−e)/10) ≤ 10 from e = 6 s.
		{at: 15 * s, cost: 2, allowed: false, remaining: 1, reset: 16 * s, retry: 1 * s},
		// A cost above Max is never admitted; it reports the window's end.
		{at: 15 * s, cost: 11, allowed: false, remaining: 1, reset: 20 * s, retry: 5 * s},
		{at: 15 * s, cost: 1, allowed: true, remaining: 0, reset: 20 * s},
		// A check on a full key: 5 + ceil(4.5) = 10; one unit fits at 16 s.
		{at: 15500 * ms, cost: 0, allowed: false, remaining: 0, reset: 16 * s, retry: 500 * ms},
		// A full key tells any cost when the first unit fits (what the
		// denial cache, where there is one, repeats).
		{at: 15900 * ms, cost: 2, allowed: false, remaining: 0, reset: 16 * s, retry: 100 * ms},
		{at: 16 * s, cost: 1, allowed: true, remaining: 0, reset: 20 * s},
		// Window 2: the previous window counted 6, weighing ceil(3) at 5 s.
		{at: 25 * s, cost: 1, allowed: true, remaining: 6, reset: 30 * s},
		// Window 4 after an empty window 3: nothing weighs.
		{at: 40 * s, cost: 10, allowed: true, remaining: 0, reset: 50 * s},
		{at: 40 * s, cost: 1, allowed: false, remaining: 0, reset: 51 * s, retry: 11 * s},
		{at: 50 * s, cost: 5, allowed: false, remaining: 0, reset: 51 * s, retry: 1 * s},
		{at: 55 * s, cost: 5, allowed: true, remaining: 0, reset: 60 * s},
		// Window 6: 5 weigh 5 at its start, 1 + 5 ≤ 10.
		{at: 60 * s, cost: 1, allowed: true, remaining: 4, reset: 70 * s},
	}
	for _, b := range backends(t) {
		for _, cache := range []int{ratelimit.DefaultDenialCacheSize, 0} {
			t.Run(fmt.Sprintf("%s/cache=%d", b.name, cache), func(t *testing.T) {
				c := newClock()
				l := newSliding(t, b.storage(c), c, ratelimit.WithDenialCache(cache))
				runSteps(t, l, c, fmt.Sprintf("steps%d", cache), slidingRule, steps)
			})
		}
	}
}

// slidingModel is the reference: per-window counts, the weighting in
// plain integers (the numbers are small), and RetryAfter found by trying
// every millisecond.
type slidingModel struct {
	w, max int64
	counts map[int64]int64
}

func (m *slidingModel) used(now int64) (start, used int64) {
	i, e := now/m.w, now%m.w
	return i * m.w, m.counts[i] + (m.counts[i-1]*(m.w-e)+m.w-1)/m.w
}

func (m *slidingModel) fits(now, cost int64) bool {
	_, u := m.used(now)
	return u+cost <= m.max
}

func (m *slidingModel) earliest(now, cost int64) int64 {
	for t := now; t <= now+2*m.w; t++ {
		if m.fits(t, cost) {
			return t
		}
	}
	panic("nothing fits within two windows")
}

func (m *slidingModel) decide(now, cost int64) ratelimit.Decision {
	start, u := m.used(now)
	rem := m.max - u
	d := ratelimit.Decision{Limit: m.max, Remaining: max(rem, 0), Reset: time.UnixMilli(start + m.w).UTC()}
	switch {
	case cost == 0 && rem >= 1:
		d.Allowed = true
		return d
	case cost >= 1 && cost <= m.max && m.fits(now, cost):
		m.counts[now/m.w] += cost
		d.Allowed, d.Remaining = true, rem-cost
		return d
	case cost > m.max && rem >= 1:
		// A cost above Max reports the window's end.
	case rem >= 1:
		d.Reset = time.UnixMilli(m.earliest(now, cost)).UTC()
	default:
		d.Reset = time.UnixMilli(m.earliest(now, 1)).UTC()
	}
	d.RetryAfter = time.Duration(d.Reset.UnixMilli()-now) * time.Millisecond
	return d
}

// TestSlidingMatchesModel: random costs at random instants, decided by
// every storage (with its denial cache) and by the reference, which
// weighs in plain arithmetic and finds RetryAfter by trying every
// millisecond: every decision equal, so the weighting is exact and
// RetryAfter is the first instant the request fits.
func TestSlidingMatchesModel(t *testing.T) {
	for _, b := range backends(t) {
		for _, max := range []int64{1, 7} {
			t.Run(fmt.Sprintf("%s/max=%d", b.name, max), func(t *testing.T) {
				rule := ratelimit.Rule{Window: 20 * time.Millisecond, Max: max}
				c := newClock()
				l := newSliding(t, b.storage(c), c)
				m := &slidingModel{w: 20, max: max, counts: map[int64]int64{}}
				r := rand.New(rand.NewPCG(1, uint64(max)))
				now := t0.UnixMilli()
				for i := range 600 {
					switch r.IntN(20) {
					case 0:
						now += 45 // past both windows
					default:
						now += r.Int64N(6)
					}
					cost := r.Int64N(max + 2)
					c.Clock.Set(time.UnixMilli(now))
					got, err := l.ConsumeN(context.Background(), fmt.Sprintf("model%d", max), rule, cost)
					if err != nil {
						t.Fatal(err)
					}
					if want := m.decide(now, cost); !reflect.DeepEqual(got, want) {
						t.Fatalf("request %d at +%d ms cost %d:\n got %+v\nwant %+v", i, now-t0.UnixMilli(), cost, got, want)
					}
				}
			})
		}
	}
}

// slidingRace fills the previous window with 60 and the current one with
// 10, then sends 200 requests at once 5 s into the current window: 60 ×
// 5/10 = 30 weigh, so exactly 100 − 10 − 30 = 60 fit.
func slidingRace(t *testing.T, s ratelimit.Storage, key string) int64 {
	t.Helper()
	rule := ratelimit.Rule{Window: 10 * time.Second, Max: 100}
	c := newClock()
	l := newSliding(t, s, c, ratelimit.WithMaxAttempts(1000))
	for _, at := range []time.Duration{2 * time.Second, 12 * time.Second} {
		c.Set(at)
		cost := int64(60)
		if at > 10*time.Second {
			cost = 10
		}
		if d, err := l.ConsumeN(context.Background(), key, rule, cost); err != nil || !d.Allowed {
			t.Fatalf("filling at %v: %+v, %v", at, d, err)
		}
	}
	c.Set(15 * time.Second)
	return burst(t, l, key, rule, 200, 1)
}

// TestSlidingRace: 200 requests at one instant, with a previous window
// weighing and a current one begun, admit exactly the allowance; and on a
// fresh key (the row's creation raced) exactly Max, with costs above 1 too.
// On every storage.
func TestSlidingRace(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			if got := slidingRace(t, b.storage(newClock()), "race"); got != 60 {
				t.Fatalf("admitted %d, want exactly 60", got)
			}
			c := newClock()
			l := newSliding(t, b.storage(c), c, ratelimit.WithMaxAttempts(1000))
			for _, cost := range []int64{1, 3} {
				key := fmt.Sprintf("fresh%d", cost)
				if got := burst(t, l, key, slidingRule, 64, cost); got != slidingRule.Max/cost {
					t.Fatalf("cost %d on a fresh key: admitted %d, want %d", cost, got, slidingRule.Max/cost)
				}
			}
		})
	}
}

// TestSlidingRaceCatchesUnguarded proves TestSlidingRace can fail: the same
// race against a sliding window that reads both rows and writes the new
// count without a guard admits more than the allowance, while deciding
// one request at a time as the guarded storage does.
func TestSlidingRaceCatchesUnguarded(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if got := slidingRace(t, ratelimit.Database(db), "guarded"); got != 60 {
		t.Fatalf("guarded: admitted %d, want 60", got)
	}
	got := slidingRace(t, ratelimit.UnguardedSliding(db), "unguarded")
	if got <= 60 {
		t.Fatalf("unguarded: admitted %d, not more than 60: the race does not show the missing guard", got)
	}
	t.Logf("caught: the unguarded sliding window admitted %d of 200 with an allowance of 60", got)
	c := newClock()
	l := newSliding(t, ratelimit.UnguardedSliding(db), c)
	for i := range 11 {
		if d, err := l.Consume(context.Background(), "sequential", slidingRule); err != nil || d.Allowed != (i < 10) {
			t.Fatalf("sequential request %d: %+v, %v", i+1, d, err)
		}
	}
}

// TestSlidingRoundTrips: on database storage an admission in a live window
// is two round trips (one read of both windows' rows, one guarded
// increment), a denial one (the read), a window's first request two (the
// read, the insert); a denial the cache answers none.
func TestSlidingRoundTrips(t *testing.T) {
	native := memory.New()
	db, err := core.New(native)
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newSliding(t, ratelimit.Database(db), c)
	ctx := context.Background()
	if err := l.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		cost    int64
		allowed bool
		calls   int64
	}{{1, true, 2}, {1, true, 2}, {8, true, 2}, {1, false, 1}, {1, false, 0}} {
		before := native.Calls()
		d, err := l.ConsumeN(ctx, "trips", slidingRule, want.cost)
		if err != nil || d.Allowed != want.allowed {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
		if got := native.Calls() - before; got != want.calls {
			t.Errorf("request %d (cost %d, allowed %v): %d round trips, want %d", i, want.cost, want.allowed, got, want.calls)
		}
	}
}

// TestSlidingRows: database storage keeps one row per key and window,
// named key + "#" + the window number, with lastRequest the window's
// start; Prune keeps a window's row until two windows after its start,
// since the next window weighs it.
func TestSlidingRows(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newSliding(t, ratelimit.Database(db), c, ratelimit.WithLongestWindow(slidingRule.Window))
	ctx := context.Background()
	i := t0.UnixMilli() / 10000
	for _, at := range []time.Duration{1 * time.Second, 11 * time.Second} {
		c.Set(at)
		if d, err := l.ConsumeN(ctx, "rows", slidingRule, 5); err != nil || !d.Allowed {
			t.Fatalf("at %v: %+v, %v", at, d, err)
		}
	}
	for j, name := range []string{"rows#" + fmt.Sprint(i), "rows#" + fmt.Sprint(i+1)} {
		if name != ratelimit.SlidingName("rows", i+int64(j)) {
			t.Fatalf("SlidingName = %q, want %q", ratelimit.SlidingName("rows", i+int64(j)), name)
		}
		row, ok, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", name))
		if err != nil || !ok || row.Int("count") != 5 || row.Int("lastRequest") != (i+int64(j))*10000 {
			t.Fatalf("row %q: %v %v %v", name, row, ok, err)
		}
	}
	// At 19.999 s window 0's row still weighs (1 ms of it); at 20 s it does not.
	c.Set(19999 * time.Millisecond)
	if n, err := l.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune at 19.999 s: %d, %v; want 0", n, err)
	}
	if d, _ := l.Check(ctx, "rows", slidingRule); d.Remaining != 10-5-1 {
		t.Fatalf("Check at 19.999 s: %+v, want Remaining 4", d)
	}
	c.Set(20 * time.Second)
	if n, err := l.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune at 20 s: %d, %v; want 1", n, err)
	}
	if d, _ := l.Check(ctx, "rows", slidingRule); d.Remaining != 10-5 {
		t.Fatalf("Check at 20 s: %+v, want Remaining 5", d)
	}
}

// TestSlidingLongKeys: a key as long as the column holds still works under
// SlidingWindow on database storage (its rows are named after its
// digest), and two long keys differing only at the end keep apart.
func TestSlidingLongKeys(t *testing.T) {
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	l := newSliding(t, ratelimit.Database(db), c)
	a, b := strings.Repeat("é", 254)+"a", strings.Repeat("é", 254)+"b"
	ctx := context.Background()
	if d, err := l.ConsumeN(ctx, a, slidingRule, 10); err != nil || !d.Allowed {
		t.Fatalf("key a: %+v, %v", d, err)
	}
	if d, err := l.Consume(ctx, a, slidingRule); err != nil || d.Allowed {
		t.Fatalf("key a full: %+v, %v", d, err)
	}
	if d, err := l.Consume(ctx, b, slidingRule); err != nil || !d.Allowed || d.Remaining != 9 {
		t.Fatalf("key b: %+v, %v", d, err)
	}
}

// TestSlidingReset: Reset clears a Memory key; on database and secondary
// storage, where the counters are per window, it refuses and ResetRule
// clears both windows, so the key gets its whole Max again at once.
func TestSlidingReset(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newSliding(t, b.storage(c), c)
		ctx := context.Background()
		// 5 in window 0, then 6 at 12 s, where the 5 weigh ceil(4): full.
		for _, k := range []string{"reset", "other"} {
			for _, s := range []struct {
				at   time.Duration
				cost int64
			}{{5 * time.Second, 5}, {12 * time.Second, 6}} {
				c.Set(s.at)
				if d, err := l.ConsumeN(ctx, k, slidingRule, s.cost); err != nil || !d.Allowed {
					t.Fatalf("%s at %v: %+v, %v", k, s.at, d, err)
				}
			}
		}
		if d, _ := l.Consume(ctx, "reset", slidingRule); d.Allowed {
			t.Fatalf("before the reset: %+v, want denied", d)
		}
		err := l.Reset(ctx, "reset")
		if b.name == "memory" {
			if err != nil {
				t.Fatalf("Reset: %v", err)
			}
		} else {
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("Reset = %v, want ErrInvalid (use ResetRule)", err)
			}
			if err := l.ResetRule(ctx, "reset", slidingRule); err != nil {
				t.Fatalf("ResetRule: %v", err)
			}
		}
		if d, err := l.ConsumeN(ctx, "reset", slidingRule, 10); err != nil || !d.Allowed {
			t.Fatalf("after the reset: %+v, %v; want Max admitted", d, err)
		}
		if d, _ := l.Consume(ctx, "other", slidingRule); d.Allowed {
			t.Fatalf("another key: %+v, want still denied", d)
		}
	})
}

// plainSecondary is a secondary storage without a bounded increment.
type plainSecondary struct{ driver.SecondaryStorage }

// TestSlidingRefusals: a secondary storage without a bounded increment
// (which would count denials into the next window's weight) and write
// combining are refused at New.
func TestSlidingRefusals(t *testing.T) {
	if _, err := ratelimit.New(ratelimit.Secondary(plainSecondary{memory.NewStorage()}), ratelimit.WithMode(ratelimit.SlidingWindow)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("plain secondary: %v, want ErrInvalid", err)
	}
	db, _ := core.New(memory.New())
	if _, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithMode(ratelimit.SlidingWindow), ratelimit.WithWriteCombining()); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("write combining: %v, want ErrInvalid", err)
	}
}

// TestSlidingExtremes: a Max near the int64 limit and a window of about a
// century weigh without overflow: the previous window's whole Max at the
// boundary, nothing over, Max/Window units after the first millisecond.
func TestSlidingExtremes(t *testing.T) {
	const huge = 1<<63 - 1
	rule := ratelimit.Rule{Window: 100 * 365 * 24 * time.Hour, Max: huge}
	w := rule.Window.Milliseconds()
	eachBackend(t, func(t *testing.T, b backend, c *clock) {
		l := newSliding(t, b.storage(c), c)
		ctx := context.Background()
		// t0 lies in window 0 (the century from the epoch).
		if d, err := l.ConsumeN(ctx, "huge", rule, huge); err != nil || !d.Allowed || d.Remaining != 0 {
			t.Fatalf("Max at once: %+v, %v", d, err)
		}
		c.Clock.Set(time.UnixMilli(w))
		if d, err := l.Consume(ctx, "huge", rule); err != nil || d.Allowed || d.RetryAfter != time.Millisecond {
			t.Fatalf("at the boundary: %+v, %v; want denied for 1 ms", d, err)
		}
		// 1 ms in, the previous Max weighs ceil(Max × (w−1)/w), which
		// leaves floor(Max/w) units.
		c.Clock.Set(time.UnixMilli(w + 1))
		if d, err := l.Consume(ctx, "huge", rule); err != nil || !d.Allowed || d.Remaining != huge/w-1 {
			t.Fatalf("1 ms later: %+v, %v; want admitted with %d remaining", d, err, huge/w-1)
		}
	})
}
