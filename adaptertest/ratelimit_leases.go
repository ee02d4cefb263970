package adaptertest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

const ruleLeasePools = "with leases of 8, in each of three windows, 64 concurrent requests over four pools on one key with max 40 " +
	"admit at most max and at least max less what the limiters hold in leases; once they close, the stored count is what the last window admitted"

// rlLeasePools races leased limiters, one per pool, in three windows of
// a clock the case moves.
func rlLeasePools(ctx context.Context, f *Fixture) error {
	dbs, err := f.DBs(rlPools)
	if err != nil {
		return err
	}
	clock := NewClock(time.UnixMilli(rlT0))
	rule := ratelimit.Rule{Window: time.Second, Max: 40}
	var ls []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(clock.Now), ratelimit.WithLeases(8))
		if err != nil {
			return err
		}
		ls = append(ls, l)
	}
	var admitted atomic.Int64
	for w := range 3 {
		clock.Set(time.UnixMilli(rlT0).Add(time.Duration(w) * rule.Window))
		admitted.Store(0)
		var errs errorList
		Release(rlBurst, func(i int) {
			d, err := ls[i%len(ls)].Consume(ctx, "leased", rule)
			switch {
			case err != nil:
				errs.add(err)
			case d.Allowed:
				admitted.Add(1)
			}
		})
		if err := errs.err(); err != nil {
			return err
		}
		var leased int64
		for _, l := range ls {
			leased += l.Leased()
		}
		if n := admitted.Load(); n > rule.Max || n < rule.Max-leased {
			return fmt.Errorf("window %d admitted %d holding %d in leases, want within [%d, %d]", w, n, leased, rule.Max-leased, rule.Max)
		}
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			return err
		}
	}
	count, _, err := rlRow(ctx, f, "leased")
	if err != nil {
		return err
	}
	if count != admitted.Load() {
		return fmt.Errorf("stored %d after Close, want the %d admitted in the last window: the leases were not returned", count, admitted.Load())
	}
	return nil
}
