package sluicesql

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice-go/sluice/core/driver"
)

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
