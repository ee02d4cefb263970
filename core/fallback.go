package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// fallbackAttempts bounds how many transactions the IncrementOne fallback
// runs for one call before it gives up with [ErrContention]. With the
// pauses between them (see fallbackMaxWait) a loser keeps trying for as
// long as a burst on one row takes to drain: under 64 concurrent callers it
// may have to let some 63 winners go first.
const fallbackAttempts = 100

// fallbackMaxWait bounds the pauses of one fallback call, added up: the
// sum of the caps of its fallbackAttempts−1 pauses, 1+2+4+8+16 ms and then
// 32 ms each, about 3 s. The transactions come on top; the context's
// deadline cuts both short.
const fallbackMaxWait = (1<<fallbackRampPauses-1)*fallbackBackoff +
	(fallbackAttempts-1-fallbackRampPauses)*fallbackMaxBackoff

// The pause after lost race number n (from 0) is drawn uniformly from
// [0, min(fallbackBackoff·2^n, fallbackMaxBackoff)): short at first, so a
// lone loser retries almost at once; capped, so a loser in a long burst
// still comes back often enough to get its turn; and random over the whole
// range (full jitter), so losers spread out instead of meeting again.
// fallbackRampPauses is how many pauses have a cap below fallbackMaxBackoff.
const (
	fallbackBackoff    = time.Millisecond
	fallbackMaxBackoff = 32 * time.Millisecond
	fallbackRampPauses = 5 // fallbackBackoff<<5 == fallbackMaxBackoff
)

// errLostRace rolls back one fallback attempt whose guarded write matched nothing.
var errLostRace = errors.New("lost race")

// fallbackIncrement emulates IncrementOne with a transaction: read one
// matching row, then write it by primary key, guarded on the original where
// and on each incremented column still holding the value read. A concurrent
// writer makes the guard miss, so no update is ever lost; the attempt then
// rolls back and, after a pause, starts again.
func (db *DB) fallbackIncrement(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	pk := t.PrimaryKey()
	for attempt := 0; attempt < fallbackAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var out driver.Record
		err := db.txr.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
			cur, err := tx.FindOne(ctx, t, where)
			if err != nil || cur == nil {
				return err
			}
			id, err := driver.ParseInt(cur[pk.Name])
			if err != nil {
				return fmt.Errorf("primary key %q: %w", pk.Name, err)
			}
			guard := append(append(make([]driver.Where, 0, len(where)+len(inc)+1), where...), colEq(pk.Name, id))
			write := append(make([]driver.Assignment, 0, len(set)+len(inc)), set...)
			for _, d := range inc {
				var next any // NULL + delta stays NULL
				if cur[d.Column] != nil {
					v, err := driver.ParseInt(cur[d.Column])
					if err != nil {
						return fmt.Errorf("column %q: %w", d.Column, err)
					}
					if next, err = addChecked(v, d.By); err != nil {
						return fmt.Errorf("column %q: %w", d.Column, err)
					}
					guard = append(guard, colEq(d.Column, v))
				} else {
					guard = append(guard, colEq(d.Column, nil))
				}
				write = append(write, driver.Assignment{Column: d.Column, Value: next})
			}
			n, err := tx.UpdateMany(ctx, t, guard, write)
			if err != nil {
				return err
			}
			if n == 0 {
				return errLostRace
			}
			out, err = tx.FindOne(ctx, t, []driver.Where{colEq(pk.Name, id)})
			if err == nil && out == nil {
				err = errors.New("row vanished inside its own transaction")
			}
			return err
		})
		switch {
		case err == nil:
			return out, nil // out is nil when nothing matched: no match
		case !errors.Is(err, errLostRace) && !(errors.Is(err, ErrContention) && !db.inTx):
			return nil, err
		}
		// A lost race, or a transaction of the fallback's own that the
		// database aborted for concurrent writers (a deadlock victim, a
		// serialization failure): nothing of it took effect, so try again.
		// Inside a caller's transaction such an abort ends the whole
		// transaction, so it is the caller's to repeat.
		driver.AddRetries(ctx, 1)
		if attempt < fallbackAttempts-1 { // no pause after the last attempt
			if err := pause(ctx, fallbackPause(attempt)); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("%w: IncrementOne fallback lost the race %d times", ErrContention, fallbackAttempts)
}

// fallbackPause draws the pause after lost race number attempt (from 0).
func fallbackPause(attempt int) time.Duration {
	limit := fallbackMaxBackoff
	if attempt < fallbackRampPauses {
		limit = fallbackBackoff << attempt
	}
	return time.Duration(rand.Int64N(int64(limit)))
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// colEq is column = v, or column IS NULL when v is nil.
func colEq(column string, v any) driver.Where {
	return driver.Where{Column: column, Op: driver.OpEq, Value: v}
}
