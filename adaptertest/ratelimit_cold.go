package adaptertest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// ruleColdBurst is the contract of the cold-limiter race: limiters that
// have never seen a key (new processes, which do not know its window's
// start) decide on its live row in the one write that also answers the
// start (core.DB.IncrementPair).
const ruleColdBurst = "64 limiters that have never seen a key (new processes), over one pool or several, released at once on its live row " +
	"(count 1, opened half a window ago) admit exactly max − 1; the admitted report the remaining counts max − 2 … 0 once each, " +
	"every decision reports the window's end as the row holds it, and the stored count is max"

// rlColdBurst races cold limiters on a live row over pools DBs.
func rlColdBurst(pools int) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return coldBurst(ctx, f, pools) })
}

func coldBurst(ctx context.Context, f *Fixture, pools int) error {
	clock := NewClock(time.UnixMilli(rlT0))
	dbs, err := f.DBs(pools)
	if err != nil {
		return err
	}
	const key = "cold"
	// One process opens the window.
	opener, err := ratelimit.New(ratelimit.Database(dbs[0]), ratelimit.WithClock(clock.Now))
	if err != nil {
		return err
	}
	if d, err := opener.Consume(ctx, key, rlRule); err != nil || !d.Allowed {
		return fmt.Errorf("opening the window: allowed %v, %v", d.Allowed, err)
	}
	clock.Advance(rlRule.Window / 2)
	// Each caller is a process of its own, its schema checked before the race.
	ls := make([]*ratelimit.Limiter, rlBurst)
	for i := range ls {
		if ls[i], err = ratelimit.New(ratelimit.Database(dbs[i%len(dbs)]), ratelimit.WithClock(clock.Now)); err != nil {
			return err
		}
		if err := ls[i].CheckSchema(ctx); err != nil {
			return err
		}
	}
	var (
		mu        sync.Mutex
		remaining []int64
		problems  []string
	)
	reset := time.UnixMilli(rlT0).Add(rlRule.Window)
	Release(rlBurst, func(i int) {
		d, err := ls[i].Consume(ctx, key, rlRule)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case !d.Reset.Equal(reset):
			problems = append(problems, fmt.Sprintf("a decision (allowed %v) reports the window's end %v, want %v", d.Allowed, d.Reset.UTC(), reset.UTC()))
		case d.Allowed:
			remaining = append(remaining, d.Remaining)
		}
	})
	if len(problems) > 0 {
		return fmt.Errorf("%d of %d decisions went wrong, for example: %s", len(problems), rlBurst, problems[0])
	}
	if len(remaining) != rlMax-1 {
		return fmt.Errorf("admitted %d cold requests, want exactly %d (max %d, one spent before)", len(remaining), rlMax-1, rlMax)
	}
	sort.Slice(remaining, func(i, j int) bool { return remaining[i] > remaining[j] })
	for i, r := range remaining {
		if want := int64(rlMax - 2 - i); r != want {
			return fmt.Errorf("the admitted decisions report remaining %v, want each of %d … 0 once: a count not the one its own write made", remaining, rlMax-2)
		}
	}
	count, last, err := rlRow(ctx, f, key)
	if err != nil {
		return err
	}
	if count != rlMax || last != rlT0 {
		return fmt.Errorf("stored count %d and lastRequest %d, want %d and %d", count, last, rlMax, rlT0)
	}
	return nil
}
