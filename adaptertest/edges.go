package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The edges of the rules and costs that validation accepts (and the first
// values past them): 0, 1, Max, Max + 1, MaxInt64, 1 ms emission
// intervals, the bounds of GCRA's bucket and of Redis's exact doubles, and
// windows up to the longest time.Duration.
var (
	edgeMaxes = []int64{0, 1, 2, 3, 7, 60_000, 1<<51 - 1, 1 << 51, 1<<53 + 1, edgeMaxSpan, edgeMaxSpan + 1,
		math.MaxInt64 - 60_000, math.MaxInt64 - 1, math.MaxInt64}
	// edgeWindows: a clock the check moves by hand.
	edgeWindows = []time.Duration{time.Millisecond, 2 * time.Millisecond, time.Second, time.Hour,
		time.Duration(edgeMaxSpan/2) * time.Millisecond, time.Duration(edgeMaxSpan/2+1) * time.Millisecond,
		time.Duration(edgeMaxSpan) * time.Millisecond}
	// edgeTTLWindows: whole seconds, an hour or more, for storages that
	// expire counters on a clock of their own, which the check cannot move.
	edgeTTLWindows = []time.Duration{time.Hour, time.Duration(edgeMaxSpan/2000) * time.Second,
		time.Duration(edgeMaxSpan/2000+1) * time.Second, time.Duration(edgeMaxSpan/1000) * time.Second}
)

// rlEdgeSubject is a storage the edge check runs the limiter on.
type rlEdgeSubject struct {
	// newLimiter returns a limiter in mode on a storage no other limiter
	// of the check shares keys with, reading time from clock.
	newLimiter func(mode ratelimit.Mode, clock func() time.Time) (*ratelimit.Limiter, error)
	modes      []ratelimit.Mode
	// ttl: the storage expires counters on its own clock (Redis counts
	// TTLs in real time), so the check never moves the limiter's clock,
	// keeps to edgeTTLWindows and to GCRA intervals of a minute or more,
	// and lets a fixed window's Reset read up to resetSlack ms early.
	ttl        bool
	resetSlack int64
	// calcLimit > 0: the storage refuses, with core.ErrInvalid and
	// writing nothing, a rule whose Max or a cost at or above it, which it
	// cannot compute exactly (Redis's scripts compute in doubles).
	calcLimit int64
	// ops is how many decisions each rule gets.
	ops int
}

// checkRateLimitEdges runs, for every mode of s and every edge rule, a
// sequence of requests of edge costs at edge instants on a key of its own,
// and compares each decision with the model: Allowed, Remaining, Reset and
// RetryAfter exactly, an error only where validation refuses (or the
// storage, within calcLimit). seed picks the sequences.
func checkRateLimitEdges(ctx context.Context, s rlEdgeSubject, seed uint64) error {
	windows := edgeWindows
	if s.ttl {
		windows = edgeTTLWindows
	}
	var errs errorList
	for _, mode := range s.modes {
		for wi, w := range windows {
			for mi, mx := range edgeMaxes {
				rule := ratelimit.Rule{Window: w, Max: mx}
				if s.ttl && mode == ratelimit.GCRA && mx > 0 && !modelInvalid(mode, rule, 0) && w.Milliseconds()/mx < 60_000 {
					continue // its tat would expire in the storage's real time before the check is done
				}
				rng := rand.New(rand.NewPCG(seed, uint64(wi*len(edgeMaxes)+mi)))
				ops := edgeOps(rng, mode, rule, s.ops, !s.ttl)
				key := fmt.Sprintf("edge-%v-%d-%d", mode, wi, mi)
				if err := checkEdgeRule(ctx, s, mode, rule, key, ops); err != nil {
					errs.add(err)
				}
			}
		}
	}
	return errs.err()
}

// edgeOp is one request of the check: the clock moves by dt ms, then cost
// is asked.
type edgeOp struct{ dt, cost int64 }

// edgeOps draws n requests: costs around 0, 1, Max/2, Max and MaxInt64
// (with a negative one now and then), and, when the clock may move, steps
// of 0, 1 ms, an emission interval, and around half, one and two windows.
func edgeOps(rng *rand.Rand, mode ratelimit.Mode, rule ratelimit.Rule, n int, move bool) []edgeOp {
	mx, w := rule.Max, rule.Window.Milliseconds()
	costs := []int64{0, 1, 1, 2, 3, mx / 2, mx / 3, mx - 1, mx, mx, math.MaxInt64, -1}
	if mx < math.MaxInt64 {
		costs = append(costs, mx+1)
	}
	t := int64(1)
	if mode == ratelimit.GCRA && mx > 0 {
		t = w / mx
		if w%mx != 0 {
			t++
		}
	}
	steps := []int64{0, 0, 0, 1, t, t - 1, 2 * t, w / 2, w - 1, w, w + 1, 2 * w}
	ops := make([]edgeOp, n)
	for i := range ops {
		c := costs[rng.IntN(len(costs))]
		if c < 0 && rng.IntN(4) != 0 {
			c = 1 // a negative cost now and then: it is refused and changes nothing
		}
		ops[i].cost = c
		if move && i > 0 {
			ops[i].dt = max(steps[rng.IntN(len(steps))], 0)
		}
	}
	return ops
}

// msClock is a clock in epoch milliseconds: the check's instants go two
// of the longest windows past 2026, beyond the nanoseconds (year 2262)
// that Clock holds.
type msClock struct{ ms atomic.Int64 }

func (c *msClock) now() time.Time { return time.UnixMilli(c.ms.Load()).UTC() }

func checkEdgeRule(ctx context.Context, s rlEdgeSubject, mode ratelimit.Mode, rule ratelimit.Rule, key string, ops []edgeOp) error {
	clock := &msClock{}
	clock.ms.Store(rlT0)
	l, err := s.newLimiter(mode, clock.now)
	if err != nil {
		return fmt.Errorf("%v %+v: making the limiter: %w", mode, rule, err)
	}
	m := newRLModel(mode, rule)
	now := rlT0
	for i, op := range ops {
		now += op.dt
		clock.ms.Store(now)
		before := m.clone()
		want := m.step(rule, now, op.cost)
		d, err := l.ConsumeN(ctx, key, rule, op.cost)
		where := fmt.Sprintf("%v %+v, request %d (cost %d at T0+%d ms)", mode, rule, i+1, op.cost, now-rlT0)
		switch {
		case want.invalid:
			if !errors.Is(err, core.ErrInvalid) || d.Allowed {
				return fmt.Errorf("%s: got %+v, %v; want a refusal wrapping core.ErrInvalid", where, d, err)
			}
			continue
		case err != nil && s.calcLimit > 0 && errors.Is(err, core.ErrInvalid) && !d.Allowed &&
			(rule.Max >= s.calcLimit || op.cost >= s.calcLimit):
			*m = *before // refused before any write: the key is as it was
			continue
		case err != nil:
			return fmt.Errorf("%s: %w; want %s", where, err, want)
		}
		if msg := want.differs(d, now, s.slack(mode)); msg != "" {
			return fmt.Errorf("%s: %s", where, msg)
		}
	}
	return nil
}

func (s rlEdgeSubject) slack(mode ratelimit.Mode) int64 {
	if mode == ratelimit.FixedWindow {
		return s.resetSlack
	}
	return 0
}

func (w rlWant) String() string {
	return fmt.Sprintf("allowed=%v remaining=%v reset=%v retry=%v ms", w.allowed, w.remaining, w.reset, w.retry)
}

// differs says how d differs from w, or "". Reset and RetryAfter may be up
// to slack ms early (a TTL counted by the storage while the check ran).
func (w rlWant) differs(d ratelimit.Decision, now, slack int64) string {
	retry := new(big.Int).Mul(w.retry, bi(int64(time.Millisecond)))
	if !retry.IsInt64() {
		return fmt.Sprintf("the model's RetryAfter %v ms does not fit a time.Duration: the rule should have been refused", w.retry)
	}
	gotReset := bi(d.Reset.UnixMilli())
	gotRetry := bi(int64(d.RetryAfter))
	within := func(got, want *big.Int, slack *big.Int) bool {
		return got.Cmp(want) <= 0 && add(got, slack).Cmp(want) >= 0
	}
	if d.Allowed != w.allowed || !w.remaining.IsInt64() || d.Remaining != w.remaining.Int64() ||
		!within(gotReset, w.reset, bi(slack)) || !within(gotRetry, retry, bi(slack*int64(time.Millisecond))) {
		return fmt.Sprintf("got allowed=%v remaining=%d reset=%d retry=%v; want %s",
			d.Allowed, d.Remaining, d.Reset.UnixMilli(), d.RetryAfter, w)
	}
	return ""
}
