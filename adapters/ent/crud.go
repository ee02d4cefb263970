package sluiceent

import (
	"context"
	"fmt"
	"math"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/sluice-go/sluice/core"
)

// Create inserts one row and returns it as stored. On PostgreSQL it uses
// INSERT … ON CONFLICT DO NOTHING RETURNING, so that a duplicate key does
// not abort a surrounding transaction; no row back means a conflict. On
// MySQL it reads the row back by its new primary key.
func (a *Adapter) Create(ctx context.Context, t *core.Table, values []core.Assignment) (core.Record, error) {
	ins := a.sqlb().Insert(t.Name)
	pk := t.PrimaryKey().Name
	var id any
	for _, v := range values {
		ins.Set(v.Column, a.bind(v.Value))
		if v.Column == pk {
			id = v.Value
		}
	}
	if len(values) == 0 {
		ins.Default()
	}
	if a.dialect != dialect.MySQL {
		if a.dialect == dialect.Postgres {
			ins.OnConflict(entsql.DoNothing())
		}
		ins.Returning(t.ColumnNames()...)
		q, args, err := ins.QueryErr()
		if err != nil {
			return nil, err
		}
		rec, err := a.queryOne(ctx, q, args)
		if err == nil && rec == nil {
			err = fmt.Errorf("%w: insert into %s: a row with the same unique key exists", core.ErrConflict, t.Name)
		}
		return rec, err
	}
	q, args, err := ins.QueryErr()
	if err != nil {
		return nil, err
	}
	res, err := a.execute(ctx, q, args)
	if err != nil {
		return nil, err
	}
	if id == nil {
		if id, err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	n, err := core.ParseInt(id)
	if err != nil {
		return nil, fmt.Errorf("primary key %q: %w", pk, err)
	}
	rec, err := a.findByID(ctx, t, n)
	if err == nil && rec == nil {
		err = fmt.Errorf("sluiceent: inserted row %s=%d not found", pk, n)
	}
	return rec, err
}

// selectRows starts a SELECT of every column of t with the guard.
func (a *Adapter) selectRows(t *core.Table, where []core.Where) (*entsql.Selector, error) {
	g, err := a.guard(where)
	if err != nil {
		return nil, err
	}
	sel := a.sqlb().Select(t.ColumnNames()...).From(entsql.Table(t.Name))
	if g != nil {
		sel.Where(g)
	}
	return sel, nil
}

// FindOne returns the first matching row in primary-key order, or nil.
func (a *Adapter) FindOne(ctx context.Context, t *core.Table, where []core.Where) (core.Record, error) {
	sel, err := a.selectRows(t, where)
	if err != nil {
		return nil, err
	}
	q, args := sel.OrderBy(t.PrimaryKey().Name).Limit(1).Query()
	return a.queryOne(ctx, q, args)
}

// FindMany returns the matching rows, ordered by opts.SortBy and then by
// primary key (or by primary key alone).
func (a *Adapter) FindMany(ctx context.Context, t *core.Table, where []core.Where, opts core.FindOptions) ([]core.Record, error) {
	if opts.Limit < 0 || opts.Offset < 0 {
		return nil, fmt.Errorf("%w: negative limit or offset", core.ErrInvalid)
	}
	sel, err := a.selectRows(t, where)
	if err != nil {
		return nil, err
	}
	pk := t.PrimaryKey().Name
	sortBy, desc := opts.SortBy, opts.Desc
	if sortBy == "" { // core: without SortBy, primary-key order
		sortBy, desc = pk, false
	}
	sel.OrderExprFunc(func(b *entsql.Builder) {
		b.Ident(sortBy)
		if desc {
			b.WriteString(" DESC")
		}
		if sortBy != pk { // ties in primary-key order
			b.Comma().Ident(pk)
		}
	})
	switch {
	case opts.Limit > 0:
		sel.Limit(opts.Limit)
	case opts.Offset > 0:
		sel.Limit(math.MaxInt64) // MySQL and SQLite accept OFFSET only after LIMIT
	}
	if opts.Offset > 0 {
		sel.Offset(opts.Offset)
	}
	q, args := sel.Query()
	recs, err := a.queryRows(ctx, q, args)
	if recs == nil && err == nil {
		recs = []core.Record{}
	}
	return recs, err
}

// Update sets columns on at most one matching row, chosen and guarded as
// IncrementOne does, and returns it after the write, or nil.
func (a *Adapter) Update(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (core.Record, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: Update on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	return a.IncrementOne(ctx, t, where, nil, set)
}

// UpdateMany sets columns on every matching row and returns how many
// matched. MySQL reports changed rows unless the DSN sets clientFoundRows,
// so there the rows are first counted under lock (SELECT COUNT(*) … FOR
// UPDATE) in the same transaction as the UPDATE.
func (a *Adapter) UpdateMany(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (int64, error) {
	if len(set) == 0 {
		return 0, fmt.Errorf("%w: UpdateMany on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	update := func(ctx context.Context, a *Adapter) (int64, error) {
		g, err := a.guard(where)
		if err != nil {
			return 0, err
		}
		u := a.sqlb().Update(t.Name)
		a.setter(u, nil, set)
		if g != nil {
			u.Where(g)
		}
		q, args := u.Query()
		res, err := a.execute(ctx, q, args)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	if a.dialect != dialect.MySQL {
		return update(ctx, a)
	}
	var matched int64
	err := a.writeTx(ctx, func(ctx context.Context, tx *Adapter) error {
		g, err := tx.guard(where)
		if err != nil {
			return err
		}
		sel := tx.sqlb().Select().Count().From(entsql.Table(t.Name)).ForUpdate()
		if g != nil {
			sel.Where(g)
		}
		q, args := sel.Query()
		if matched, err = tx.scalar(ctx, q, args); err != nil || matched == 0 {
			return err
		}
		_, err = update(ctx, tx)
		return err
	})
	return matched, err
}

// Delete removes at most one matching row, the first in primary-key order.
func (a *Adapter) Delete(ctx context.Context, t *core.Table, where []core.Where) (bool, error) {
	g, err := a.guard(where)
	if err != nil {
		return false, err
	}
	pk := t.PrimaryKey().Name
	d := a.sqlb().Delete(t.Name)
	var q string
	var args []any
	switch {
	case a.dialect == dialect.MySQL:
		// MySQL has DELETE … ORDER BY … LIMIT, and refuses a subquery on
		// the table being deleted from (error 1093).
		if g != nil {
			d.Where(g)
		}
		q, args = d.Query()
		q += " ORDER BY " + a.sqlb().String(func(b *entsql.Builder) { b.Ident(pk) }) + " LIMIT 1"
	case t.SelectsOne(where):
		q, args = d.Where(g).Query()
	default:
		inner, _ := a.guard(where)
		if p := and(inSubquery(pk, a.firstMatch(t, inner)), g); p != nil {
			d.Where(p)
		}
		q, args = d.Query()
	}
	res, err := a.execute(ctx, q, args)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteMany removes every matching row and returns how many.
func (a *Adapter) DeleteMany(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	g, err := a.guard(where)
	if err != nil {
		return 0, err
	}
	d := a.sqlb().Delete(t.Name)
	if g != nil {
		d.Where(g)
	}
	q, args := d.Query()
	res, err := a.execute(ctx, q, args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Count returns the number of matching rows.
func (a *Adapter) Count(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	g, err := a.guard(where)
	if err != nil {
		return 0, err
	}
	sel := a.sqlb().Select().Count().From(entsql.Table(t.Name))
	if g != nil {
		sel.Where(g)
	}
	q, args := sel.Query()
	return a.scalar(ctx, q, args)
}
