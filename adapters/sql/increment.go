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

// updateReturning is IncrementOne on PostgreSQL and SQLite, one UPDATE …
// RETURNING, answering the columns that returning writes (the whole row,
// or IncrementValue's one column), under the statement kind given.
func (a *Adapter) updateReturning(ctx context.Context, t *driver.Table, kind byte, where []driver.Where, inc []driver.Delta, set []driver.Assignment, returning func(b *builder)) (driver.Record, error) {
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
	})
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
	if !a.inTx || !a.e.features.Dialect.traits().errorAbortsTx || !setsUnique(t, set) {
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
