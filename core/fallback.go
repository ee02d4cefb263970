package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// FallbackAttempts is how many times the transaction fallback tries before
// it gives up with ErrContention.
const FallbackAttempts = 5

// errLostRace rolls back one fallback attempt whose guarded write matched nothing.
var errLostRace = errors.New("lost race")

// fallbackIncrement emulates IncrementOne with a transaction: read one
// matching row, then write it by primary key, guarded on the original where
// and on each incremented column still holding the value read. A concurrent
// writer makes the guard miss, so no update is ever lost; the attempt then
// rolls back and starts again.
func (db *DB) fallbackIncrement(ctx context.Context, t *Table, where []Where, inc []Delta, set []Assignment) (Record, error) {
	pk := t.PrimaryKey()
	for attempt := 0; attempt < FallbackAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var out Record
		err := db.txr.Transaction(ctx, func(ctx context.Context, tx Adapter) error {
			cur, err := tx.FindOne(ctx, t, where)
			if err != nil || cur == nil {
				return err
			}
			id, err := toInt64(cur[pk.Name])
			if err != nil {
				return fmt.Errorf("primary key %q: %w", pk.Name, err)
			}
			guard := append(append(make([]Where, 0, len(where)+len(inc)+1), where...), Eq(pk.Name, id))
			write := append(make([]Assignment, 0, len(set)+len(inc)), set...)
			for _, d := range inc {
				var next any // NULL + delta stays NULL
				if cur[d.Column] != nil {
					v, err := toInt64(cur[d.Column])
					if err != nil {
						return fmt.Errorf("column %q: %w", d.Column, err)
					}
					if next, err = addChecked(v, d.By); err != nil {
						return fmt.Errorf("column %q: %w", d.Column, err)
					}
					guard = append(guard, Eq(d.Column, v))
				} else {
					guard = append(guard, Eq(d.Column, nil))
				}
				write = append(write, Assignment{Column: d.Column, Value: next})
			}
			n, err := tx.UpdateMany(ctx, t, guard, write)
			if err != nil {
				return err
			}
			if n == 0 {
				return errLostRace
			}
			out, err = tx.FindOne(ctx, t, []Where{Eq(pk.Name, id)})
			if err == nil && out == nil {
				err = errors.New("row vanished inside its own transaction")
			}
			return err
		})
		switch {
		case errors.Is(err, errLostRace):
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			return nil, err
		}
		return out, nil // out is nil when nothing matched: no match
	}
	return nil, fmt.Errorf("%w: IncrementOne fallback lost the race %d times", ErrContention, FallbackAttempts)
}

// fallbackBackoff is the first pause after a lost race; each later pause
// may be twice as long. Losers that retried at once would meet the same
// winner's neighbours again, so they spread out at random (full jitter).
const fallbackBackoff = 500 * time.Microsecond

// backoff waits a random time in [0, fallbackBackoff·2^attempt), or until
// ctx ends. There is no pause after the last attempt.
func backoff(ctx context.Context, attempt int) error {
	if attempt == FallbackAttempts-1 {
		return nil
	}
	d := time.Duration(rand.Int64N(int64(fallbackBackoff) << attempt))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
