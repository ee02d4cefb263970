package sluicesql

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
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
// MySQL and MariaDB have no UPDATE … RETURNING: one transaction locks the
// first match with SELECT … FOR UPDATE, updates it by primary key (guard
// repeated) and reads it back. Rows-affected is never consulted, so the
// DSN's clientFoundRows does not matter. A deadlock victim is retried.
//
// An increment that would overflow int64 fails with core.ErrInvalid and
// writes nothing, on every dialect.
func (a *Adapter) IncrementOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne on %s: nothing to increment or set", core.ErrInvalid, t.Name)
	}
	if a.e.features.Dialect == MySQL {
		return a.incrementLocked(ctx, t, where, inc, set)
	}
	single := t.SelectsOne(where)
	q, args := a.stmt(t, kindUpdateOne, where, inc, set, func(b *builder) {
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
		b.columns(t)
	})
	var rec core.Record
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
func (a *Adapter) conflictSafe(ctx context.Context, t *core.Table, set []core.Assignment, write func(x *Adapter) error) error {
	if !a.inTx || a.e.features.Dialect != Postgres || !setsUnique(t, set) {
		return write(a)
	}
	return a.savepoint(ctx, write)
}

// setsUnique reports whether an assignment writes a unique column.
func setsUnique(t *core.Table, set []core.Assignment) bool {
	for _, s := range set {
		if c, ok := t.ColumnByName(s.Column); ok && (c.Field.Unique || c.Field.Primary) {
			return true
		}
	}
	return false
}

// incrementLocked is the MySQL path: lock, update by primary key, read back.
func (a *Adapter) incrementLocked(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	pk := t.PrimaryKey().Name
	lock, largs := a.stmt(t, kindLockFirst, where, nil, nil, func(b *builder) {
		b.write("SELECT ")
		b.ident(pk)
		b.write(" FROM ")
		b.ident(t.Name)
		b.where(where)
		b.write(" ORDER BY ")
		b.ident(pk)
		b.write(" LIMIT 1 FOR UPDATE")
	})
	var out core.Record
	err := a.writeTx(ctx, func(tx *Adapter) error {
		out = nil
		ids, err := tx.query(ctx, lock, largs)
		if err != nil || len(ids) == 0 {
			return err
		}
		id, err := core.ParseInt(ids[0][pk])
		if err != nil {
			return fmt.Errorf("primary key %q: %w", pk, err)
		}
		byPK := append([]core.Where{core.Eq(pk, id)}, where...)
		q, args := tx.stmt(t, kindUpdateByPK, byPK, inc, set, func(b *builder) {
			b.write("UPDATE ")
			b.ident(t.Name)
			b.assignments(inc, set)
			b.where(byPK)
		})
		if _, err := tx.exec(ctx, q, args); err != nil {
			return err
		}
		out, err = tx.findByPK(ctx, t, id)
		if err == nil && out == nil {
			err = fmt.Errorf("%s: %s=%d: %w", a.e.name(), pk, id, errVanished)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
