package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The sentences of the contract the edge cases check.
const (
	ruleEdges = "under every mode, for rules at the edges of what validation accepts (Max 0, 1, 2^51, 2^53 + 1, MaxInt64 − 1, MaxInt64; " +
		"windows of 1 ms up to the longest time.Duration) and costs 0, 1, Max, Max + 1 and MaxInt64 at instants 1 ms, one emission interval " +
		"and one or two windows apart, every decision is the one the documented rules give in exact arithmetic; a rule a mode cannot " +
		"compute exactly is core.ErrInvalid before any write; never a panic, an overflow or an error fail-open would admit"
	ruleRateLimitEdges = "driver.BoundedIncrementer: ratelimit.Secondary over the storage, in every mode it serves, decides as the documented rules do in exact arithmetic " +
		"for rules and costs at the edges of what validation accepts (Max and costs 0, 1, Max + 1, up to MaxInt64; windows up to the longest " +
		"time.Duration); a storage may refuse, as core.ErrInvalid and writing nothing, an operand of 2^51 or more that it cannot compute exactly"
	ruleCCEdges = "leases from 1 ns to the longest time.Duration and n from 1 to MaxSlots: LeaseTime and Expires are the lease rounded up to the millisecond " +
		"and RetryAfter the time to the earliest end, exactly; a lease that does not fit a time.Duration once rounded, or an n outside 1 to MaxSlots, is core.ErrInvalid"
)

// rlEdges is the edge check on the limiter's database storage.
func rlEdges(ctx context.Context, f *Fixture) error {
	return checkRateLimitEdges(ctx, rlEdgeSubject{
		newLimiter: func(mode ratelimit.Mode, clock func() time.Time) (*ratelimit.Limiter, error) {
			return ratelimit.New(ratelimit.Database(f.DB), ratelimit.WithMode(mode), ratelimit.WithClock(clock))
		},
		modes: []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.BetterAuthWindow, ratelimit.SlidingWindow, ratelimit.GCRA},
		ops:   8,
	}, 1)
}

// storageEdgesCalcLimit is where a secondary storage may stop computing
// exactly: Redis's scripts compute in doubles, exact below 2^53, and take
// operands below 2^51.
const storageEdgesCalcLimit = 1 << 51

// storageRateLimitEdges is the edge check on ratelimit.Secondary over the
// fixture's storage, in every mode the storage serves.
func storageRateLimitEdges(t testing.TB, f *storageFixture) {
	modes := []ratelimit.Mode{ratelimit.FixedWindow, ratelimit.SlidingWindow} // the case needs a bounded increment
	if _, ok := f.s.(driver.TATAdvancer); ok {
		modes = append(modes, ratelimit.GCRA)
	}
	s := rlEdgeSubject{
		newLimiter: func(mode ratelimit.Mode, clock func() time.Time) (*ratelimit.Limiter, error) {
			return ratelimit.New(ratelimit.Secondary(f.s), ratelimit.WithMode(mode), ratelimit.WithClock(clock))
		},
		modes: modes, ttl: true, calcLimit: storageEdgesCalcLimit, ops: 8,
	}
	if !f.caps.ManualClock {
		s.resetSlack = (2 * time.Minute).Milliseconds() // the fixture's deadline: a TTL cannot have run longer
	}
	if err := checkRateLimitEdges(f.ctx, s, 1); err != nil {
		t.Error(err)
	}
}
