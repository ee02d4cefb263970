package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
)

// UnguardedSliding is database storage whose SlidingWindow reads both
// windows' rows, decides in Go and writes the new count with no guard:
// the read-decide-write bug the race tests must catch. Between its read
// and its write it waits, as a round trip would, until another caller has
// read too (or 2 ms have passed, when nobody else is calling), so that
// concurrent callers overlap whatever the scheduler does. Called one at a
// time it decides as [Database] does.
func UnguardedSliding(db *core.DB) Storage {
	return &unguardedSliding{dbStorage: Database(db).(*dbStorage), reads: new(atomic.Int64)}
}

type unguardedSliding struct {
	*dbStorage
	reads *atomic.Int64
}

func (u *unguardedSliding) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	if m != SlidingWindow {
		return u.dbStorage.consume(ctx, key, rule, cost, now, m, attempts)
	}
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	kcur, kprev, err := u.slidingKeys(key, i)
	if err != nil {
		return state{}, err
	}
	rows, err := u.db.FindMany(ctx, model, []core.Where{core.In("key", kprev, kcur)}, nil)
	if err != nil {
		return state{}, err
	}
	var exists bool
	v.cur, v.prev, exists = v.read(rows)
	overlap(u.reads)
	if v.cur > v.bound(cost, rule.Max) {
		return v.denied(cost, rule.Max), nil
	}
	if !exists {
		_, err = u.db.Create(ctx, model, map[string]any{"key": kcur, "count": cost, "lastRequest": v.start})
		if !errors.Is(err, core.ErrConflict) {
			return v.admitted(cost), err
		}
	}
	if _, err := u.db.UpdateMany(ctx, model, []core.Where{core.Eq("key", kcur)}, map[string]any{"count": v.cur + cost}); err != nil {
		return state{}, err
	}
	return v.admitted(v.cur + cost), nil
}

// SlidingName returns the database row name of window i of key, as a
// storage with an unbounded key column names it.
func SlidingName(key string, i int64) string {
	cur, _, _ := (&dbStorage{}).slidingKeys(key, i)
	return cur
}
