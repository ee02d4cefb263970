package sluicebun

import (
	"context"
	"fmt"
	"math"

	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Create inserts one row and returns it as stored. A duplicate unique key
// fails with core.ErrConflict on every dialect. On PostgreSQL the INSERT
// uses ON CONFLICT DO NOTHING, so that a conflict inside a caller's
// transaction does not abort the transaction.
func (a *Adapter) Create(ctx context.Context, t *core.Table, values []core.Assignment) (core.Record, error) {
	p := a.params()
	cols := make([]bun.Ident, len(values))
	vals := make([]any, len(values))
	for i, v := range values {
		cols[i], vals[i] = bun.Ident(v.Column), p.add(v.Value)
	}
	var q *bun.RawQuery
	switch {
	case len(values) > 0:
		q = a.db.NewRaw("INSERT INTO ? (?) VALUES (?)", bun.Ident(t.Name), bun.In(cols), bun.In(vals))
	case a.dialect == dialect.MySQL:
		q = a.db.NewRaw("INSERT INTO ? () VALUES ()", bun.Ident(t.Name))
	default:
		q = a.db.NewRaw("INSERT INTO ? DEFAULT VALUES", bun.Ident(t.Name))
	}
	if a.dialect == dialect.MySQL {
		return a.createMySQL(ctx, t, q, p, values)
	}
	suffix := " RETURNING ?"
	if a.dialect == dialect.PG {
		suffix = " ON CONFLICT DO NOTHING RETURNING ?"
	}
	rec, err := a.queryOne(ctx, a.db.NewRaw("?"+suffix, q, columns(t)), p)
	switch {
	case err != nil:
		return nil, mapErr(err)
	case rec == nil && a.dialect == dialect.PG:
		return nil, fmt.Errorf("%w: %s: a row with the same unique key exists", core.ErrConflict, t.Name)
	case rec == nil:
		return nil, errNoRow
	}
	return rec, nil
}

// createMySQL inserts, then reads the row back by its primary key (MySQL
// has no INSERT … RETURNING, and bun drops it silently).
func (a *Adapter) createMySQL(ctx context.Context, t *core.Table, q *bun.RawQuery, p *params, values []core.Assignment) (core.Record, error) {
	pk := t.PrimaryKey().Name
	res, err := a.exec(ctx, q, p)
	if err != nil {
		return nil, mapErr(err)
	}
	var id any
	for _, v := range values {
		if v.Column == pk {
			id = v.Value
		}
	}
	if id == nil {
		if id, err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	rec, err := a.FindOne(ctx, t, []core.Where{core.Eq(pk, id)})
	if err == nil && rec == nil {
		err = errNoRow
	}
	return rec, err
}

// selectRows starts a SELECT of every column of t under where.
func (a *Adapter) selectRows(t *core.Table, p *params, where []core.Where) (*bun.SelectQuery, error) {
	expr, args, err := p.cond(where)
	if err != nil {
		return nil, err
	}
	q := a.db.NewSelect().TableExpr("?", bun.Ident(t.Name)).ColumnExpr("?", columns(t))
	if expr != "" {
		q = q.Where(expr, args...)
	}
	return q, nil
}

// FindOne returns the first matching row in primary-key order, or nil.
func (a *Adapter) FindOne(ctx context.Context, t *core.Table, where []core.Where) (core.Record, error) {
	p := a.params()
	q, err := a.selectRows(t, p, where)
	if err != nil {
		return nil, err
	}
	return a.queryOne(ctx, q.OrderExpr("? ASC", bun.Ident(t.PrimaryKey().Name)).Limit(1), p)
}

// FindMany returns the matching rows, in primary-key order or sorted by
// opts.SortBy (ties in primary-key order). NULLs sort first in ascending
// order and last in descending order on every dialect, as MySQL and SQLite
// do by themselves.
func (a *Adapter) FindMany(ctx context.Context, t *core.Table, where []core.Where, opts core.FindOptions) ([]core.Record, error) {
	if opts.Limit < 0 || opts.Offset < 0 {
		return nil, fmt.Errorf("%w: negative limit or offset", core.ErrInvalid)
	}
	p := a.params()
	q, err := a.selectRows(t, p, where)
	if err != nil {
		return nil, err
	}
	if opts.SortBy != "" {
		dir := "ASC"
		if opts.Desc {
			dir = "DESC"
		}
		if a.dialect == dialect.PG {
			dir = map[bool]string{false: "ASC NULLS FIRST", true: "DESC NULLS LAST"}[opts.Desc]
		}
		q = q.OrderExpr("? "+dir, bun.Ident(opts.SortBy))
	}
	q = q.OrderExpr("? ASC", bun.Ident(t.PrimaryKey().Name))
	switch {
	case opts.Limit > 0:
		q = q.Limit(int64(opts.Limit))
	case opts.Offset > 0:
		q = q.Limit(math.MaxInt64) // MySQL and SQLite take no OFFSET without a LIMIT
	}
	if opts.Offset > 0 {
		q = q.Offset(int64(opts.Offset))
	}
	recs, err := a.query(ctx, q, p)
	if recs == nil && err == nil {
		recs = []core.Record{}
	}
	return recs, err
}

// UpdateMany sets columns on every matching row and returns how many rows
// matched. MySQL counts rows changed unless the DSN sets clientFoundRows,
// so there the matching rows are counted and locked first, in the same
// transaction as the UPDATE.
func (a *Adapter) UpdateMany(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (int64, error) {
	if len(set) == 0 {
		return 0, fmt.Errorf("%w: UpdateMany on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	update := func(ctx context.Context, tx *Adapter) (int64, error) {
		p := tx.params()
		q := p.setClause(tx.db.NewUpdate().TableExpr("?", bun.Ident(t.Name)), nil, set)
		expr, args, err := p.cond(where)
		if err != nil {
			return 0, err
		}
		return tx.affected(ctx, guarded(q, expr, args), p)
	}
	if a.dialect != dialect.MySQL {
		n, err := update(ctx, a)
		return n, mapErr(err)
	}
	var matched int64
	err := a.retryDeadlocks(ctx, func(ctx context.Context, tx *Adapter) error {
		var err error
		if matched, err = tx.count(ctx, t, where, true); err != nil || matched == 0 {
			return err
		}
		_, err = update(ctx, tx)
		return err
	})
	return matched, mapErr(err)
}

// Delete removes at most one matching row, the first in primary-key order,
// and reports whether it did.
func (a *Adapter) Delete(ctx context.Context, t *core.Table, where []core.Where) (bool, error) {
	p := a.params()
	expr, args, err := p.cond(where)
	if err != nil {
		return false, err
	}
	q := a.db.NewDelete().TableExpr("?", bun.Ident(t.Name))
	switch {
	case t.SelectsOne(where):
	case a.dialect == dialect.MySQL:
		q = q.OrderExpr("? ASC", bun.Ident(t.PrimaryKey().Name)).Limit(1)
	default:
		key, sub := a.oneRow(t, expr, args)
		q = q.Where("? = (?)", key, sub)
	}
	n, err := a.affected(ctx, guarded(q, expr, args), p)
	return n > 0, err
}

// DeleteMany removes every matching row and returns how many.
func (a *Adapter) DeleteMany(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	p := a.params()
	expr, args, err := p.cond(where)
	if err != nil {
		return 0, err
	}
	return a.affected(ctx, guarded(a.db.NewDelete().TableExpr("?", bun.Ident(t.Name)), expr, args), p)
}

// Count returns the number of matching rows.
func (a *Adapter) Count(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	return a.count(ctx, t, where, false)
}

// countColumn names the count(*) column.
const countColumn = "n"

// count counts the matching rows, locking them when forUpdate.
func (a *Adapter) count(ctx context.Context, t *core.Table, where []core.Where, forUpdate bool) (int64, error) {
	p := a.params()
	expr, args, err := p.cond(where)
	if err != nil {
		return 0, err
	}
	q := a.db.NewSelect().TableExpr("?", bun.Ident(t.Name)).ColumnExpr("count(*) AS ?", bun.Ident(countColumn))
	if expr != "" {
		q = q.Where(expr, args...)
	}
	if forUpdate {
		q = q.For("UPDATE")
	}
	rec, err := a.queryOne(ctx, q, p)
	if err != nil {
		return 0, err
	}
	if rec == nil {
		return 0, fmt.Errorf("sluicebun: count(*) returned no row")
	}
	return core.ParseInt(rec[countColumn])
}
