package ratelimit

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
)

// GCRAInterval exposes the emission interval T of a rule, in milliseconds.
var GCRAInterval = gcraInterval

// UnguardedGCRA is database storage whose GCRA reads the tat, decides in
// Go and writes the new tat with no guard: the read-decide-write bug the
// race tests must catch. Between its read and its write it waits, as a
// round trip would, until another caller has read too (or 2 ms have
// passed, when nobody else is calling), so that concurrent callers overlap
// whatever the scheduler does. Called one at a time it decides as
// [Database] does.
func UnguardedGCRA(db *core.DB) Storage {
	return &unguardedGCRA{dbStorage: Database(db).(*dbStorage), reads: new(atomic.Int64)}
}

type unguardedGCRA struct {
	*dbStorage
	reads *atomic.Int64
}

func (u *unguardedGCRA) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	if m != GCRA {
		return u.dbStorage.consume(ctx, key, rule, cost, now, m, attempts)
	}
	t := gcraInterval(rule)
	row, found, err := u.db.FindOne(ctx, model, core.Eq("key", key))
	if err != nil {
		return state{}, err
	}
	tat := now
	if found {
		tat = max(row.Int("lastRequest"), now)
	}
	overlap(u.reads)
	if tat+cost*t-now > rule.Max*t {
		return gcraState(rule, t, tat, now, false), nil
	}
	tat += cost * t
	set := map[string]any{"lastRequest": tat}
	if !found {
		_, err = u.db.Create(ctx, model, map[string]any{"key": key, "count": int64(0), "lastRequest": tat})
		if !errors.Is(err, core.ErrConflict) {
			return gcraState(rule, t, tat, now, err == nil), err
		}
	}
	if _, err := u.db.UpdateMany(ctx, model, []core.Where{core.Eq("key", key)}, set); err != nil {
		return state{}, err
	}
	return gcraState(rule, t, tat, now, true), nil
}

// overlap counts a read and waits, as a round trip would, until another
// caller has read too, or 2 ms have passed when nobody else is calling.
func overlap(reads *atomic.Int64) {
	mine := reads.Add(1)
	for start := time.Now(); reads.Load() == mine && time.Since(start) < 2*time.Millisecond; {
		runtime.Gosched()
	}
}
