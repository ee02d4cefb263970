package sluicebun

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// IncrementOne applies inc (column = column + By, in the database, so NULL
// stays NULL) and set to at most one row chosen by where, in one atomic
// write during which where still holds, and returns the row as stored after
// it, or nil when nothing matched.
//
// PostgreSQL runs one statement:
//
//	UPDATE t SET c = c + ?, … WHERE pk = (SELECT pk FROM t WHERE guard
//	ORDER BY pk LIMIT 1 FOR UPDATE) AND guard RETURNING cols
//
// The locking subquery picks a single row (UPDATE has no LIMIT there) and,
// if a concurrent writer changed it, re-checks the guard on the new version
// and moves on to the next matching row, so neither a stale match nor a
// false miss gets through. When the guard holds an equality on the primary
// key or a unique column, a plain UPDATE … WHERE guard RETURNING is already
// limited to one row. SQLite runs the same statement keyed on rowid,
// without FOR UPDATE: it serialises writers, so the statement is atomic.
//
// MySQL and MariaDB have no UPDATE … RETURNING (bun drops it silently), so
// one transaction selects the first matching primary key FOR UPDATE, updates
// that row (repeating the guard), and reads it back. The row lock makes the
// three steps atomic, and the outcome comes from the locking read, not from
// the UPDATE's affected-row count, which depends on clientFoundRows.
func (a *Adapter) IncrementOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	if len(inc) == 0 && len(set) == 0 {
		return nil, fmt.Errorf("%w: IncrementOne on %s: nothing to change", core.ErrInvalid, t.Name)
	}
	return a.updateOne(ctx, t, where, inc, set)
}

// Update sets columns on at most one matching row, the first in primary-key
// order, and returns it as stored after the write, or nil when nothing
// matched. It is IncrementOne without deltas.
func (a *Adapter) Update(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (core.Record, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: Update on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	return a.updateOne(ctx, t, where, nil, set)
}

// setClause adds the deltas and the assignments to an UPDATE.
func (p *params) setClause(q *bun.UpdateQuery, inc []core.Delta, set []core.Assignment) *bun.UpdateQuery {
	for _, d := range inc {
		col := bun.Ident(d.Column)
		q = q.Set("? = ? + ?", col, col, p.add(d.By))
	}
	for _, s := range set {
		q = q.Set("? = ?", bun.Ident(s.Column), p.add(s.Value))
	}
	return q
}

func (a *Adapter) updateOne(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	if a.dialect == dialect.MySQL {
		rec, err := a.updateOneLocked(ctx, t, where, inc, set)
		return rec, mapErr(err)
	}
	p := a.params()
	q := p.setClause(a.db.NewUpdate().TableExpr("?", bun.Ident(t.Name)), inc, set)
	expr, args, err := p.cond(where)
	if err != nil {
		return nil, err
	}
	if !t.SelectsOne(where) {
		key, sub := a.oneRow(t, expr, args)
		q = q.Where("? = (?)", key, sub)
	}
	q = guarded(q, expr, args).Returning("?", columns(t))
	rec, err := a.queryOne(ctx, q, p)
	return rec, mapErr(err)
}

// oneRow is the key of the first row matching the guard, as the two
// arguments of "? = (?)": on PostgreSQL the primary key, locked FOR UPDATE;
// on SQLite the rowid.
func (a *Adapter) oneRow(t *core.Table, expr string, args []any) (any, any) {
	pk := bun.Ident(t.PrimaryKey().Name)
	sub := guarded(a.db.NewSelect().TableExpr("?", bun.Ident(t.Name)), expr, args).
		OrderExpr("? ASC", pk).Limit(1)
	if a.dialect == dialect.PG {
		return pk, sub.ColumnExpr("?", pk).For("UPDATE")
	}
	return bun.Safe("rowid"), sub.ColumnExpr("rowid")
}

// updateOneLocked is the MySQL/MariaDB path of updateOne.
func (a *Adapter) updateOneLocked(ctx context.Context, t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) (core.Record, error) {
	table, pkName := bun.Ident(t.Name), t.PrimaryKey().Name
	pk := bun.Ident(pkName)
	var out core.Record
	err := a.retryDeadlocks(ctx, func(ctx context.Context, tx *Adapter) error {
		out = nil
		p := tx.params()
		expr, args, err := p.cond(where)
		if err != nil {
			return err
		}
		sel := guarded(tx.db.NewSelect().TableExpr("?", table).ColumnExpr("?", pk), expr, args).
			OrderExpr("? ASC", pk).Limit(1).For("UPDATE")
		row, err := tx.queryOne(ctx, sel, p)
		if err != nil || row == nil {
			return err
		}
		id, err := core.ParseInt(row[pkName])
		if err != nil {
			return fmt.Errorf("primary key %q: %w", pkName, err)
		}
		// The row is locked and matched the guard when it was locked, so
		// this UPDATE changes it; its affected count is not consulted.
		p = tx.params()
		upd := p.setClause(tx.db.NewUpdate().TableExpr("?", table), inc, set).Where("? = ?", pk, p.add(id))
		if expr, args, err = p.cond(where); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, guarded(upd, expr, args), p); err != nil {
			return err
		}
		p = tx.params()
		out, err = tx.queryOne(ctx, tx.db.NewSelect().TableExpr("?", table).ColumnExpr("?", columns(t)).Where("? = ?", pk, p.add(id)), p)
		if err == nil && out == nil {
			err = errNoRow
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
