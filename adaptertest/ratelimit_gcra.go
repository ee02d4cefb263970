package adaptertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ruleGCRA is what the GCRA bursts check: on a fresh key (the row's
// creation raced), then in steady state one T·k later (the guarded
// increment raced), then past the tat (the empty-bucket reset raced).
const ruleGCRA = "under GCRA, 64 concurrent requests over one pool or several at one instant admit exactly max (10) on a fresh key, " +
	"exactly k when k emission intervals have passed, and exactly max again once the bucket has emptied; the row holds the theoretical arrival time"

// rlGCRA races GCRA's three phases over pools DBs.
func rlGCRA(pools int) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return gcraBursts(ctx, f, pools) })
}

func gcraBursts(ctx context.Context, f *Fixture, pools int) error {
	clock := NewClock(time.UnixMilli(rlT0))
	ls, err := rlLimiters(f, clock, ratelimit.GCRA, pools)
	if err != nil {
		return err
	}
	const key = "gcra"
	T := rlRule.Window.Milliseconds() / rlRule.Max // 6 minutes: exact
	for _, step := range []struct {
		name    string
		at      int64 // since rlT0
		want    int64
		wantTAT int64 // since rlT0
	}{
		{"fresh key", 0, rlMax, rlMax * T},
		{"3 intervals later", 3 * T, 3, (rlMax + 3) * T},
		{"past the tat", 100 * T, rlMax, (100 + rlMax) * T},
	} {
		clock.Set(time.UnixMilli(rlT0 + step.at))
		admitted, err := rlRelease(ctx, ls, key, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
		if admitted != step.want {
			return fmt.Errorf("%s: admitted %d, want exactly %d", step.name, admitted, step.want)
		}
		row, ok, err := f.DB.FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
		if err != nil || !ok {
			return fmt.Errorf("%s: reading the row: found %v, %v", step.name, ok, err)
		}
		if tat := row.Int("lastRequest"); tat != rlT0+step.wantTAT || row.Int("count") != 0 {
			return fmt.Errorf("%s: stored lastRequest %d and count %d, want the tat %d and 0",
				step.name, tat, row.Int("count"), rlT0+step.wantTAT)
		}
	}
	return nil
}
