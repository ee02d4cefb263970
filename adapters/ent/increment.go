package sluiceent

import (
	"context"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/sluice-go/sluice/core"
)

// deadlockRetries is how many times a MySQL write transaction the adapter
// owns is retried after InnoDB picked it as a deadlock victim.
const deadlockRetries = 3

// IncrementOne applies inc (column = column + by, so NULL stays NULL) and
// set to at most one row chosen by where, in one atomic write that keeps
// where as its guard, and returns the row after the write or nil.
//
// PostgreSQL: UPDATE … WHERE pk = (SELECT pk … ORDER BY pk LIMIT 1 FOR
// UPDATE) AND where RETURNING …, so a row changed concurrently is re-checked
// and the next match taken. SQLite, which serialises writers: the same
// without FOR UPDATE. When where has an equality on the primary key or a
// unique column, both use a plain UPDATE … WHERE where RETURNING ….
// MySQL/MariaDB, which have no UPDATE … RETURNING: one transaction that
// locks the first match with SELECT … FOR UPDATE, updates it by primary key
// (guard repeated) and reads it back; rows-affected is never consulted, so
// the DSN's clientFoundRows setting does not matter.
func (a *Adapter) IncrementOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne on %s: nothing to increment or set", core.ErrInvalid, t.Name)
	}
	if a.dialect == dialect.MySQL {
		return a.updateOneLocked(ctx, t, where, inc, set)
	}
	return a.updateOneReturning(ctx, t, where, inc, set)
}

// setter renders the SET list. A delta is written col + ? by hand: ent's
// UpdateBuilder.Add wraps the column in COALESCE(col, 0), which would turn
// NULL + delta into delta, and entsql.Expr("col + ?") does not renumber the
// placeholder on PostgreSQL.
func (a *Adapter) setter(u *entsql.UpdateBuilder, inc []core.Delta, set []core.Assignment) {
	for _, d := range inc {
		col, by := d.Column, d.By
		u.Set(col, entsql.ExprFunc(func(b *entsql.Builder) {
			b.Ident(col).WriteOp(entsql.OpAdd).Arg(by)
		}))
	}
	for _, s := range set {
		u.Set(s.Column, a.bind(s.Value)) // nil renders NULL
	}
}

func (a *Adapter) updateOneReturning(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	key := updateShape(t, where, inc, set)
	single := t.SelectsOne(where)
	if q, ok := a.stmts.get(key); ok {
		return a.queryOne(ctx, q, a.updateArgs(where, inc, set, !single))
	}
	g, err := a.guard(where)
	if err != nil {
		return nil, err
	}
	u := a.sqlb().Update(t.Name)
	a.setter(u, inc, set)
	if single {
		u.Where(g)
	} else {
		// The guard is rendered twice, in the subquery and outside it: the
		// outer copy is what PostgreSQL re-evaluates on the locked row.
		inner, _ := a.guard(where)
		if p := and(inSubquery(t.PrimaryKey().Name, a.firstMatch(t, inner)), g); p != nil {
			u.Where(p)
		}
	}
	u.Returning(t.ColumnNames()...)
	q, args := u.Query()
	if err := u.Err(); err != nil {
		return nil, err
	}
	if sameArgs(args, a.updateArgs(where, inc, set, !single)) {
		a.stmts.put(key, q)
	}
	return a.queryOne(ctx, q, args)
}

// updateOneLocked is the MySQL path: lock, update by primary key, read back.
func (a *Adapter) updateOneLocked(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	pk := t.PrimaryKey().Name
	var out core.Record
	err := a.writeTx(ctx, func(ctx context.Context, tx *Adapter) error {
		out = nil
		g, err := tx.guard(where)
		if err != nil {
			return err
		}
		q, args := tx.firstMatch(t, g).Query()
		ids, err := tx.queryRows(ctx, q, args)
		if err != nil || len(ids) == 0 {
			return err
		}
		id, err := core.ParseInt(ids[0][pk])
		if err != nil {
			return fmt.Errorf("primary key %q: %w", pk, err)
		}
		g, _ = tx.guard(where)
		u := tx.sqlb().Update(t.Name).Where(and(entsql.EQ(pk, id), g))
		tx.setter(u, inc, set)
		q, args = u.Query()
		if _, err := tx.execute(ctx, q, args); err != nil {
			return err
		}
		out, err = tx.findByID(ctx, t, id)
		if err == nil && out == nil {
			err = fmt.Errorf("sluiceent: row %s=%d vanished while locked", pk, id)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeTx runs fn in a transaction (or in the current one). A transaction
// the adapter owns is retried when MySQL reports a deadlock, since InnoDB
// has rolled it back in full.
func (a *Adapter) writeTx(ctx context.Context, fn func(ctx context.Context, tx *Adapter) error) error {
	for attempt := 0; ; attempt++ {
		err := a.inTx(ctx, fn)
		if a.tx != nil || attempt == deadlockRetries || !isDeadlock(err) || ctx.Err() != nil {
			return err
		}
	}
}

func (a *Adapter) findByID(ctx context.Context, t *core.Table, id int64) (core.Record, error) {
	pk := t.PrimaryKey().Name
	q, args := a.sqlb().Select(t.ColumnNames()...).From(entsql.Table(t.Name)).Where(entsql.EQ(pk, id)).Query()
	return a.queryOne(ctx, q, args)
}
