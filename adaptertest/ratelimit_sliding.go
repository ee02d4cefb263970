package adaptertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// ruleSliding is what the sliding-window bursts check: on a fresh key
// (the row's creation raced), then in the next window with the previous
// one weighing (the creation raced again, the weight read), then later in
// that window (the guarded increment raced, the weight decayed).
const ruleSliding = "under SlidingWindow, 64 concurrent requests over one pool or several at one instant admit exactly max (10) on a fresh key, " +
	"then in the next window exactly max − the current count − ceil(previous count × the part of the previous window still covered), " +
	"halfway through it and again later; each window's row holds what it admitted"

// rlSliding races the sliding window's three phases over pools DBs.
func rlSliding(pools int) func(testing.TB, *Fixture) {
	return checked(func(ctx context.Context, f *Fixture) error { return slidingBursts(ctx, f, pools) })
}

func slidingBursts(ctx context.Context, f *Fixture, pools int) error {
	clock := NewClock(time.UnixMilli(rlT0))
	ls, err := rlLimiters(f, clock, ratelimit.SlidingWindow, pools)
	if err != nil {
		return err
	}
	const key = "sliding"
	w := rlRule.Window.Milliseconds()
	i := rlT0 / w // rlT0 starts a window
	for _, step := range []struct {
		name   string
		at     time.Duration // since rlT0
		want   int64
		window int64 // the window counted in, since i
		count  int64 // its row's count after the step
	}{
		{"fresh key", 10 * time.Minute, rlMax, 0, rlMax},
		// 10 × 30/60 = 5 weigh.
		{"next window, halfway", rlRule.Window + 30*time.Minute, 5, 1, 5},
		// 5 + ceil(10 × 12/60) = 7: 3 fit.
		{"next window, 48 minutes in", rlRule.Window + 48*time.Minute, 3, 1, 8},
	} {
		clock.Set(time.UnixMilli(rlT0 + step.at.Milliseconds()))
		admitted, err := rlRelease(ctx, ls, key, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
		if admitted != step.want {
			return fmt.Errorf("%s: admitted %d, want exactly %d", step.name, admitted, step.want)
		}
		name := fmt.Sprintf("%s%s%d", key, ratelimit.SlidingSeparator, i+step.window)
		row, ok, err := f.DB.FindOne(ctx, core.ModelRateLimit, core.Eq("key", name))
		if err != nil || !ok {
			return fmt.Errorf("%s: reading the row %q: found %v, %v", step.name, name, ok, err)
		}
		if row.Int("count") != step.count || row.Int("lastRequest") != (i+step.window)*w {
			return fmt.Errorf("%s: row %q holds count %d and lastRequest %d, want %d and the window's start %d",
				step.name, name, row.Int("count"), row.Int("lastRequest"), step.count, (i+step.window)*w)
		}
	}
	return nil
}
