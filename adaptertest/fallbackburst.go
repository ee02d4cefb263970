package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
)

// ruleFallbackBurst: the transaction fallback outlasts a burst instead of
// giving up: every caller of a burst on one row gets through while the
// context allows, with no retry by the caller.
const ruleFallbackBurst = "under a 64-way burst on one row, the transaction fallback retries lost races within the context: " +
	"at most 1% of calls end with ErrContention, and every increment is stored"

func fallbackBurst(ctx context.Context, f *Fixture) error {
	db := f.DB // on core's fallback: the case needs viaFallback
	r, err := f.DB.Create(ctx, counterModel, map[string]any{"name": "burst", "budget": raceCallers})
	if err != nil {
		return err
	}
	req := core.IncrementRequest{Model: counterModel,
		Where:     []core.Where{core.Eq("id", r.Int("id")), core.Gt("budget", 0)},
		Increment: map[string]int64{"budget": -1}}
	var wins, contended atomic.Int64
	var errs errorList
	Release(raceCallers, func(int) {
		_, ok, err := db.IncrementOne(ctx, req) // no retry: the fallback's own budget is under test
		switch {
		case errors.Is(err, core.ErrContention):
			contended.Add(1)
		case err != nil:
			errs.add(err)
		case ok:
			wins.Add(1)
		}
	})
	if err := errs.err(); err != nil {
		return err
	}
	if n := contended.Load(); n*100 > raceCallers {
		return fmt.Errorf("%d of %d calls gave up with ErrContention: more than 1%%", n, raceCallers)
	}
	row, _, err := f.DB.FindOne(ctx, counterModel, core.Eq("id", r.Int("id")))
	if err != nil {
		return err
	}
	if got, want := row.Int("budget"), int64(raceCallers)-wins.Load(); got != want {
		return fmt.Errorf("budget %d after %d successful decrements from %d, want %d", got, wins.Load(), raceCallers, want)
	}
	return nil
}
