package sluicesql

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core/driver"
)

var _ driver.ValueIncrementer = (*Adapter)(nil)

// IncrementValue is IncrementOne answering with the incremented column's
// value after the write (see [driver.ValueIncrementer]).
//
// On MySQL and MariaDB it is one statement, one round trip:
//
//	UPDATE t SET c = CAST(LAST_INSERT_ID(c + ?) AS SIGNED), d = ?
//	WHERE <where> ORDER BY pk LIMIT 1
//
// An UPDATE re-reads the row it locks and re-evaluates where on it, so the
// guard holds during the write, as IncrementOne's. LAST_INSERT_ID(expr)
// puts the new value in the OK packet, which the driver reports as the
// last insert id; the CAST keeps a negative value what it is (the
// function answers unsigned). The delta is not zero, so a matched row
// changes and the affected-row count is 1 whether or not the DSN sets
// clientFoundRows; 0 is no match. Overflow is error 1690 and writes
// nothing. The value the session's LAST_INSERT_ID() returns afterwards
// changes too: the engine never reads it, and neither should a caller
// sharing the connection.
//
// On PostgreSQL and SQLite it is IncrementOne's one UPDATE … RETURNING
// with only the incremented column returned. On a MySQL executor whose
// results do not carry the last insert id, it is IncrementOne.
func (a *Adapter) IncrementValue(ctx context.Context, t *driver.Table, where []driver.Where, inc driver.Delta, set []driver.Assignment) (int64, bool, error) {
	incs := [1]driver.Delta{inc}
	var rec driver.Record
	var err error
	switch {
	case inc.By != 0 && a.e.features.UpdateReturning:
		// IncrementOne's statement, returning the one column: less for the
		// driver to decode than the row.
		rec, err = a.updateReturning(ctx, t, kindUpdateReturningValue, where, incs[:], set, func(b *builder) { b.ident(inc.Column) })
	case inc.By != 0 && a.e.mysql.Load()&mysqlLastID != 0:
		return a.incrementLastID(ctx, t, where, inc, set)
	default:
		rec, err = a.IncrementOne(ctx, t, where, incs[:], set)
	}
	if err != nil || rec == nil {
		return 0, false, err
	}
	v, err := driver.ParseInt(rec[inc.Column])
	if err != nil {
		return 0, false, fmt.Errorf("%s: column %q: %w", a.e.name(), inc.Column, err)
	}
	return v, true, nil
}

// incrementLastID is IncrementValue on MySQL: the one UPDATE above, its
// value read from the OK packet's last insert id.
func (a *Adapter) incrementLastID(ctx context.Context, t *driver.Table, where []driver.Where, inc driver.Delta, set []driver.Assignment) (int64, bool, error) {
	incs := [1]driver.Delta{inc}
	q, args := a.stmt(t, kindUpdateValue, where, incs[:], set, func(b *builder) {
		b.write("UPDATE ")
		b.ident(t.Name)
		b.write(" SET ")
		b.ident(inc.Column)
		b.write(" = CAST(LAST_INSERT_ID(")
		b.ident(inc.Column)
		b.write(" + ")
		b.arg(inc.By)
		b.write(") AS SIGNED)")
		for _, s := range set {
			b.write(", ")
			b.assign(s)
		}
		b.where(where)
		b.write(" ORDER BY ")
		b.ident(t.PrimaryKey().Name)
		b.write(" LIMIT 1")
	})
	return a.execLastID(ctx, q, args)
}

// execLastID runs a MySQL UPDATE that sets LAST_INSERT_ID(expr) on the row
// it changes, and answers expr's value from the OK packet, with ok == false
// when it changed no row. Deadlock victims are retried.
func (a *Adapter) execLastID(ctx context.Context, q string, args []any) (int64, bool, error) {
	q, args, err := a.inlined(q, args)
	if err != nil {
		return 0, false, err
	}
	var (
		value int64
		ok    bool
	)
	err = a.retry(ctx, func() error {
		driver.AddRoundTrips(ctx, 1)
		res, err := a.x.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			ok = false
			return err
		}
		if value, err = res.LastInsertId(); err != nil {
			// The write took effect but its value is unknown: an executor
			// whose results stopped carrying the id (a gorm callback
			// replaced after New, say). Later calls take IncrementOne.
			a.e.mysql.And(^mysqlLastID)
			return fmt.Errorf("the row was incremented but the executor's result has no last insert id to read its value from: %w", err)
		}
		ok = true
		return nil
	})
	return value, ok, err
}

// ValueIncrementSaves reports whether IncrementValue is one statement
// where IncrementOne is a transaction: on MySQL and MariaDB, when the
// executor's results carry the last insert id. On PostgreSQL and SQLite
// both are one statement (IncrementValue returning one column).
func (a *Adapter) ValueIncrementSaves() bool {
	return !a.e.features.UpdateReturning && a.e.mysql.Load()&mysqlLastID != 0
}
