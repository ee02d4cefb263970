package sluicesql

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// This file runs the engine's statements on its executor: each one
// counted as a round trip, retried under the retry policy below when its
// error's class (errors.go) says it took no effect, and its rows read
// into records.

// scanRecords reads every remaining row into a record keyed by column
// name, each value as the driver produced it (core.DB converts them).
// Scanning into *any copies driver-owned []byte, so records stay valid
// after the rows move on.
func scanRecords(rows Rows) ([]driver.Record, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []driver.Record
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		rec := make(driver.Record, len(cols))
		for i, c := range cols {
			rec[c] = vals[i]
			vals[i] = nil // a NULL in the next row must not inherit this value
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// query runs a statement that returns rows and reads them all. It does not
// retry: callers decide that with retry.
func (a *Adapter) query(ctx context.Context, q string, args []any) ([]driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	rows, err := a.x.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	recs, err := scanRecords(rows)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return recs, err
}

// queryOne returns a statement's first row, or nil. It reads no further:
// the statements it runs return at most one row.
func (a *Adapter) queryOne(ctx context.Context, q string, args []any) (driver.Record, error) {
	driver.AddRoundTrips(ctx, 1)
	rows, err := a.x.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	rec, err := scanOne(rows)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return rec, err
}

var scanBuffers = sync.Pool{New: func() any { b := make([]any, 0, 48); return &b }}

// scanOne reads the first row, if any, into a record.
func scanOne(rows Rows) (driver.Record, error) {
	if !rows.Next() {
		return nil, rows.Err()
	}
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	// The values and the pointers Scan fills them by come from a pool: the
	// record copies the values out, and the buffer goes back cleared.
	buf := scanBuffers.Get().(*[]any)
	if cap(*buf) < 2*len(cols) {
		*buf = make([]any, 2*len(cols))
	}
	both := (*buf)[:2*len(cols)]
	defer func() { clear(both); scanBuffers.Put(buf) }()
	vals, ptrs := both[:len(cols)], both[len(cols):]
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	rec := make(driver.Record, len(cols))
	for i, c := range cols {
		rec[c] = vals[i]
	}
	return rec, rows.Err()
}

// scalar runs a statement that returns one integer, such as COUNT(*).
func (a *Adapter) scalar(ctx context.Context, q string, args []any) (int64, error) {
	rec, err := a.queryOne(ctx, q, args)
	if err != nil {
		return 0, err
	}
	for _, v := range rec {
		return driver.ParseInt(v)
	}
	return 0, fmt.Errorf("%s: %q returned no row", a.e.name(), q)
}

// exec runs a statement that returns no rows and reports the rows it affected.
func (a *Adapter) exec(ctx context.Context, q string, args []any) (int64, error) {
	driver.AddRoundTrips(ctx, 1)
	res, err := a.x.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Retry policy. A statement that ran alone (autocommit) and failed as
// retryable took no effect, and neither did a transaction the engine owns
// that failed so: both run again, after a pause with full jitter that
// doubles up to a cap, at most maxAttempts times in all and never past the
// context. Inside a transaction the caller owns nothing is retried: the
// whole transaction is the unit, and it is the caller's to repeat.
const (
	maxAttempts  = 12
	retryBackoff = time.Millisecond
	retryCap     = 64 * time.Millisecond
	// retryBudget is how long a run of retryable failures is retried at
	// least, past maxAttempts: under SERIALIZABLE on a loaded server the
	// aborts come in runs, and a count alone ran out within a few hundred
	// milliseconds (bench/leases, uniform keys at SERIALIZABLE).
	retryBudget = time.Second
)

// retry runs op until it succeeds, fails for another reason, or the
// attempts (or the engine's wait for a busy database) or the context run
// out.
func (a *Adapter) retry(ctx context.Context, op func() error) error {
	var err error
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if err = op(); err == nil {
			return nil
		}
		if a.inTx || a.e.classify(err) != retryable {
			return a.e.mapErr(err)
		}
		if !a.e.again(attempt, start) {
			return fmt.Errorf("%w: gave up after %d attempts: %w", core.ErrContention, attempt+1, err)
		}
		driver.AddRetries(ctx, 1)
		if werr := pause(ctx, attempt); werr != nil {
			return fmt.Errorf("%w: %w (while waiting to retry: %w)", core.ErrContention, err, werr)
		}
	}
}

// again reports whether a retryable failure of attempt (counted from 0),
// in a run that began at start, is tried once more: up to maxAttempts in
// all, and beyond them for retryBudget, or while the engine waits for a
// busy database itself (SQLite) when that is longer.
func (e *engine) again(attempt int, start time.Time) bool {
	return attempt < maxAttempts-1 || time.Since(start) < max(e.busyWait, retryBudget)
}

// retried is retry for an operation with a result.
func retried[T any](a *Adapter, ctx context.Context, op func() (T, error)) (T, error) {
	var out T
	err := a.retry(ctx, func() (err error) {
		out, err = op()
		return err
	})
	return out, err
}

// pause waits a random time below retryBackoff·2^attempt (capped), or
// until ctx ends.
func pause(ctx context.Context, attempt int) error {
	limit := retryBackoff << min(attempt, 16)
	if limit > retryCap {
		limit = retryCap
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
