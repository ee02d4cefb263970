package sluicesql

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// IncrementOne applies inc (column = column + by, so NULL stays NULL) and
// set to at most one row chosen by where, in one atomic write that keeps
// where as its guard, and returns the row after the write or nil.
//
// PostgreSQL and SQLite: one UPDATE … RETURNING. When where pins one row
// (an equality on the primary key or a unique column) the guard alone
// selects it; otherwise the row is "pk = (SELECT pk … ORDER BY pk LIMIT 1
// FOR UPDATE)" with the guard repeated outside, which PostgreSQL
// re-evaluates on the locked row, so a concurrent change makes it move to
// the next match rather than miss.
//
// MySQL and MariaDB have no UPDATE … RETURNING. Outside a transaction an
// optimistic attempt runs first (see incrementOptimistic): one autocommit
// read of the first match and one UPDATE guarded on every column as read,
// two round trips; its rows-affected count decides, and a miss, whatever
// the DSN's clientFoundRows, falls back to the locking path. The locking
// path, and the only path inside a transaction, locks the first match with
// SELECT … FOR UPDATE and updates it by primary key: BEGIN, two
// statements, COMMIT (the two statements alone in a transaction). Values
// are written into the statements when the executor would otherwise
// prepare each (see mysql_literal.go). A deadlock victim is retried.
//
// An increment that would overflow int64 fails with core.ErrInvalid and
// writes nothing, on every dialect.
func (a *Adapter) IncrementOne(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne on %s: nothing to increment or set", core.ErrInvalid, t.Name)
	}
	if !a.e.features.UpdateReturning {
		if !a.inTx {
			rec, done, err := a.incrementOptimistic(ctx, t, where, inc, set)
			if done || err != nil {
				return rec, err
			}
		}
		return a.incrementLocked(ctx, t, where, inc, set)
	}
	return a.updateReturning(ctx, t, kindUpdateOne, where, inc, set, func(b *builder) { b.columns(t) })
}

var _ driver.ReturningIncrementer = (*Adapter)(nil)

// IncrementReturning is IncrementOne answering with the columns of the
// fields in returning only (see [driver.ReturningIncrementer]): on
// PostgreSQL and SQLite the UPDATE returns those columns, and each column
// left out is one value fewer for the driver to decode and box. On MySQL
// and MariaDB it is IncrementOne, whose row comes from a read it needs
// anyway.
func (a *Adapter) IncrementReturning(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment, returning []string) (driver.Record, error) {
	if !a.e.features.UpdateReturning || len(returning) == 0 {
		return a.IncrementOne(ctx, t, where, inc, set)
	}
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne on %s: nothing to increment or set", core.ErrInvalid, t.Name)
	}
	for _, f := range returning {
		if _, ok := t.Column(f); !ok {
			return nil, fmt.Errorf("%w: IncrementOne on %s: no field %q to return", core.ErrInvalid, t.Name, f)
		}
	}
	return a.updateReturning(ctx, t, kindUpdateSome, where, inc, set, func(b *builder) {
		if b.argsOnly {
			return
		}
		for i, f := range returning {
			if i > 0 {
				b.write(", ")
			}
			c, _ := t.Column(f)
			b.ident(c.Name)
		}
	}, returning...)
}

// updateReturning is IncrementOne on PostgreSQL and SQLite, one UPDATE …
// RETURNING, answering the columns that returning writes (the whole row,
// or IncrementValue's one column), under the statement kind given.
// The statement's shape ends with shape, the columns returning writes
// when the kind alone does not tell them.
func (a *Adapter) updateReturning(ctx context.Context, t *driver.Table, kind byte, where []driver.Where, inc []driver.Delta, set []driver.Assignment, returning func(b *builder), shape ...string) (driver.Record, error) {
	single := t.SelectsOne(where)
	q, args := a.stmt(t, kind, where, inc, set, func(b *builder) {
		b.write("UPDATE ")
		b.ident(t.Name)
		b.assignments(inc, set)
		if single {
			b.where(where)
		} else {
			// The guard is written twice, in the subquery and outside it:
			// the outer copy is what PostgreSQL re-evaluates on the locked row.
			b.write(" WHERE ")
			b.firstMatch(t, where)
			if len(where) > 0 {
				b.write(" AND ")
				b.conds(where)
			}
		}
		b.write(" RETURNING ")
		returning(b)
	}, shape...)
	var rec driver.Record
	err := a.retry(ctx, func() error {
		return a.conflictSafe(ctx, t, set, func(x *Adapter) (err error) {
			rec, err = x.queryOne(ctx, q, args)
			return err
		})
	})
	return rec, err
}

// conflictSafe runs a write that may set a unique column. On PostgreSQL a
// unique violation aborts the whole transaction around the statement, so
// inside a transaction such a write runs in a savepoint: a conflict is
// then core.ErrConflict and the transaction stays usable, as it does on
// MySQL and SQLite.
func (a *Adapter) conflictSafe(ctx context.Context, t *driver.Table, set []driver.Assignment, write func(x *Adapter) error) error {
	if !a.inTx || !a.e.t.errorAbortsTx || !setsUnique(t, set) {
		return write(a)
	}
	return a.savepoint(ctx, write)
}

// setsUnique reports whether an assignment writes a unique column.
func setsUnique(t *driver.Table, set []driver.Assignment) bool {
	for _, s := range set {
		if c, ok := t.ColumnByName(s.Column); ok && (c.Field.Unique || c.Field.Primary) {
			return true
		}
	}
	return false
}

// incrementLocked is the MySQL path: lock the first match and read it,
// update it by primary key, commit. The row after the write is the row
// read under the lock with the write applied in Go: nothing else can
// change it before the commit, so a read-back would say the same for one
// more round trip. An increment that would overflow is refused here,
// before the UPDATE.
func (a *Adapter) incrementLocked(ctx context.Context, t *driver.Table, where []driver.Where, inc []driver.Delta, set []driver.Assignment) (driver.Record, error) {
	pk := t.PrimaryKey().Name
	lock, largs := a.stmt(t, kindLockFirst, where, nil, nil, func(b *builder) { b.selectFirst(t, where, true) })
	lock, largs, err := a.inlined(lock, largs)
	if err != nil {
		return nil, err
	}
	var out driver.Record
	err = a.writeTx(ctx, func(tx *Adapter) error {
		out = nil
		row, err := tx.queryOne(ctx, lock, largs)
		if err != nil || row == nil {
			return err
		}
		id, err := driver.ParseInt(row[pk])
		if err != nil {
			return fmt.Errorf("primary key %q: %w", pk, err)
		}
		if err := applyWrite(row, inc, set); err != nil {
			return err
		}
		byPK := []driver.Where{driver.Where{Column: pk, Op: driver.OpEq, Value: id}}
		q, args := tx.stmt(t, kindUpdateByPK, byPK, inc, set, func(b *builder) {
			b.write("UPDATE ")
			b.ident(t.Name)
			b.assignments(inc, set)
			b.whereInTx(byPK)
		})
		q, args, err = tx.inlined(q, args)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, q, args); err != nil {
			return err
		}
		out = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// applyWrite applies deltas and assignments to a row read under lock, as
// the UPDATE will: NULL plus a delta stays NULL, and a sum past int64 is
// core.ErrInvalid, as the database would answer.
func applyWrite(row driver.Record, inc []driver.Delta, set []driver.Assignment) error {
	for _, d := range inc {
		if row[d.Column] == nil {
			continue
		}
		cur, err := driver.ParseInt(row[d.Column])
		if err != nil {
			return fmt.Errorf("column %q: %w", d.Column, err)
		}
		if (d.By > 0 && cur > maxInt64-d.By) || (d.By < 0 && cur < minInt64-d.By) {
			return fmt.Errorf("%w: column %q: %d %+d overflows int64", core.ErrInvalid, d.Column, cur, d.By)
		}
		row[d.Column] = cur + d.By
	}
	for _, s := range set {
		row[s.Column] = s.Value
	}
	return nil
}

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
		b.updateFirst(t, where, func() {
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
		})
	})
	return a.execLastID(ctx, q, args)
}

// execLastID runs a MySQL UPDATE that sets LAST_INSERT_ID(expr) on the row
// it changes, and answers expr's value from the OK packet, with ok == false
// when it changed no row. Deadlock victims are retried, and on a Galera
// node a miss is run once more after the node caught up (rerunAfterMiss).
func (a *Adapter) execLastID(ctx context.Context, q string, args []any) (int64, bool, error) {
	q, args, err := a.inlined(q, args)
	if err != nil {
		return 0, false, err
	}
	return rerunAfterMiss(a, ctx, func() (int64, bool, error) { return a.runLastID(ctx, q, args) })
}

// runLastID is one run of execLastID's statement, its deadlock victims retried.
func (a *Adapter) runLastID(ctx context.Context, q string, args []any) (int64, bool, error) {
	var (
		value int64
		ok    bool
	)
	err := a.retry(ctx, func() error {
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
