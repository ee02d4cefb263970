package sluicegorm

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// IncrementOne applies the deltas (column = column + delta, in the
// database) and assignments to at most one row chosen by where, while where
// still holds, and returns the row after the write, or nil for no match.
//
// PostgreSQL, one statement:
//
//	UPDATE t SET c = c + ? WHERE pk = (SELECT pk FROM t WHERE guard ORDER BY pk LIMIT 1 FOR UPDATE) AND guard RETURNING ...
//
// The locking subquery waits for a concurrent writer of the row it picked
// and re-checks the guard on the new version (and moves on to the next
// matching row if it no longer holds); the repeated outer guard makes the
// write itself conditional. A guard with an Eq on the primary key or a
// unique column pins one row already, so the subquery is left out.
//
// SQLite: the same statement without FOR UPDATE; SQLite runs one writer at
// a time, so the statement is atomic.
//
// MySQL and MariaDB have no UPDATE ... RETURNING, and report rows changed
// rather than matched unless the DSN sets clientFoundRows: one transaction
// runs SELECT pk ... FOR UPDATE (the only "no match" signal), the guarded
// UPDATE by primary key, and reads the row back under the same lock.
func (a *Adapter) IncrementOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne: nothing to do", core.ErrInvalid)
	}
	if a.dialect == mysql {
		return a.updateOneMySQL(ctx, t, where, inc, set)
	}
	return a.updateOneReturning(ctx, t, where, inc, set)
}

// updateOneReturning is the one-statement form for PostgreSQL and SQLite.
func (a *Adapter) updateOneReturning(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("UPDATE ", ts.name, " SET ")
	s.set(inc, set)
	if t.SelectsOne(where) {
		if err := s.where(where, false); err != nil {
			return nil, err
		}
	} else {
		if err := a.firstRowGuard(s, ts, where); err != nil {
			return nil, err
		}
	}
	s.w(" RETURNING ", ts.columns)
	return s.queryOne(ctx)
}

// firstRowGuard writes " WHERE pk = (SELECT pk FROM t WHERE guard ORDER BY
// pk LIMIT 1 [FOR UPDATE]) AND guard": the first matching row, still
// matching when written.
func (a *Adapter) firstRowGuard(s *stmt, ts *tableSQL, where []core.Where) error {
	s.w(" WHERE ", ts.pk, " = (SELECT ", ts.pk, " FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return err
	}
	s.w(" ORDER BY ", ts.pk, " LIMIT 1")
	if a.dialect == postgres {
		s.w(" FOR UPDATE")
	}
	s.w(")")
	return s.where(where, true)
}

// updateOneMySQL is the locking transaction for MySQL and MariaDB. When the
// adapter already runs in the caller's transaction it runs there.
func (a *Adapter) updateOneMySQL(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	ts := a.table(t)
	var out core.Record
	err := a.atomically(ctx, func(tx *Adapter) error {
		id, err := tx.lockFirst(ctx, ts, where)
		if err != nil || id == nil {
			return err
		}
		s := tx.stmt(ts).w("UPDATE ", ts.name, " SET ")
		s.set(inc, set)
		s.w(" WHERE ", ts.pk, " = ").arg(id)
		if err := s.where(where, true); err != nil {
			return err
		}
		// RowsAffected is not checked: without clientFoundRows, a write
		// that changes nothing (delta 0) reports 0. The row is locked and
		// matched the guard, so the UPDATE applied.
		if _, _, err := s.exec(ctx); err != nil {
			return err
		}
		out, err = tx.stmt(ts).w("SELECT ", ts.columns, " FROM ", ts.name, " WHERE ", ts.pk, " = ").arg(id).w(" FOR UPDATE").queryOne(ctx)
		if err == nil && out == nil {
			err = fmt.Errorf("%w: row %s = %v vanished while locked", errNoRow, ts.pkName, id)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockFirst runs SELECT pk FROM t WHERE guard ORDER BY pk LIMIT 1 FOR
// UPDATE and returns the primary key, or nil when nothing matches. The
// locking read sees the latest committed version, not the snapshot.
func (a *Adapter) lockFirst(ctx context.Context, ts *tableSQL, where []core.Where) (any, error) {
	s := a.stmt(ts).w("SELECT ", ts.pk, " FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return nil, err
	}
	s.w(" ORDER BY ", ts.pk, " LIMIT 1 FOR UPDATE")
	rec, err := s.queryOne(ctx)
	if err != nil || rec == nil {
		return nil, err
	}
	return rec[ts.pkName], nil
}
