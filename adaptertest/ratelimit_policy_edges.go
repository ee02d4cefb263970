package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// rulePolicyEdges is what the policy edge case checks.
const rulePolicyEdges = "under every mode, a policy whose rules sit at the edges of what validation accepts (Max 1, 2^53 + 1, MaxInt64 − 1, " +
	"MaxInt64; windows of 1 ms up to the longest time.Duration; a shadow rule) decides each request, for costs 0, 1, 2^53, MaxInt64 − 1 " +
	"and MaxInt64 at instants 1 ms to windows apart, as ratelimit.Memory decides it (admitted, DeniedBy, WouldDeny, each rule's " +
	"admission and remaining): never an overflow that admits, an error, or a rule charged for a denied request; what Memory refuses " +
	"as core.ErrInvalid is refused the same way"

// policyEdgeSets are the policies the edge case decides: one whose first
// rule admits a single unit (every larger cost is its denial), one of
// rules holding what an int64 holds.
var policyEdgeSets = []ratelimit.Policy{
	{
		{Name: "one", Window: time.Second, Max: 1},
		{Name: "big", Window: time.Hour, Max: math.MaxInt64},
		{Name: "odd", Window: 24 * time.Hour, Max: 1<<53 + 1},
		{Name: "probe", Window: time.Minute, Max: 3, Shadow: true},
	},
	{
		{Name: "near", Window: 100 * 365 * 24 * time.Hour, Max: math.MaxInt64 - 1},
		{Name: "all", Window: time.Millisecond, Max: math.MaxInt64},
		{Name: "shadow", Window: time.Hour, Max: 1 << 62, Shadow: true},
	},
	{ // what GCRA computes exactly: Max × ⌈Window/Max⌉ ms within a time.Duration
		{Name: "g1", Window: time.Second, Max: 2},
		{Name: "g2", Window: 2000 * time.Hour, Max: 7_000_000_000_000},
		{Name: "gs", Window: time.Minute, Max: 1, Shadow: true},
	},
}

// rlPolicyEdges is the policy edge check on the limiter's database
// storage, against ratelimit.Memory deciding the same requests at the
// same instants.
func rlPolicyEdges(ctx context.Context, f *Fixture) error {
	modes := []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA}
	costs := []int64{0, 1, 1, 2, 3, 6_999_999_999_999, 1 << 53, math.MaxInt64 - 1, math.MaxInt64}
	steps := []time.Duration{0, time.Millisecond, time.Second, time.Minute, time.Hour, 25 * time.Hour, -time.Millisecond, -time.Minute} // a clock may step back
	for _, mode := range modes {
		for pi, p := range policyEdgeSets {
			clock := NewClock(time.UnixMilli(rlT0))
			db, err := ratelimit.New(ratelimit.Database(f.DB), ratelimit.WithMode(mode), ratelimit.WithClock(clock.Now))
			if err != nil {
				return err
			}
			mem, err := ratelimit.New(ratelimit.Memory(64), ratelimit.WithMode(mode), ratelimit.WithClock(clock.Now))
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(uint64(mode), uint64(pi)))
			key := fmt.Sprintf("pedge-%v-%d", mode, pi)
			for op := range 40 {
				cost := costs[rng.IntN(len(costs))]
				step := steps[rng.IntN(len(steps))]
				if step < 0 && mode == ratelimit.SlidingWindow {
					step = -step // a sliding window's rows are per window: a clock stepping back reads an older one, as memory does not
				}
				clock.Advance(step)
				want, werr := mem.ConsumePolicy(ctx, key, p, cost)
				got, gerr := db.ConsumePolicy(ctx, key, p, cost)
				where := fmt.Sprintf("%v, policy %d, op %d (cost %d at +%v)", mode, pi, op, cost, clock.Now().Sub(time.UnixMilli(rlT0)))
				if werr != nil || gerr != nil {
					if errors.Is(werr, core.ErrInvalid) && errors.Is(gerr, core.ErrInvalid) && !got.Allowed {
						continue
					}
					return fmt.Errorf("%s: database %+v, %v; memory %+v, %v", where, got, gerr, want, werr)
				}
				if err := samePolicyDecision(got, want); err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
			}
			if err := errors.Join(db.Close(), mem.Close()); err != nil {
				return err
			}
		}
	}
	return nil
}

// samePolicyDecision reports how the database's decision got differs from
// memory's want.
func samePolicyDecision(got, want ratelimit.Decision) error {
	if got.Allowed != want.Allowed || got.DeniedBy != want.DeniedBy || got.WouldDeny != want.WouldDeny || len(got.Rules) != len(want.Rules) {
		return fmt.Errorf("database decided %+v, memory %+v", got, want)
	}
	for i, g := range got.Rules {
		w := want.Rules[i]
		if g.Allowed != w.Allowed || g.Remaining != w.Remaining {
			return fmt.Errorf("rule %q: database allowed=%t remaining=%d, memory allowed=%t remaining=%d (database %+v, memory %+v)",
				g.Name, g.Allowed, g.Remaining, w.Allowed, w.Remaining, got, want)
		}
	}
	return nil
}
