package sluiceent

import (
	"context"
	"fmt"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/sluice-go/sluice/core"
)

// sqlb returns ent's statement builder for the adapter's dialect, which
// quotes identifiers (`key` is reserved on MySQL) and numbers placeholders.
func (a *Adapter) sqlb() *entsql.DialectBuilder { return entsql.Dialect(a.dialect) }

// bind converts a normalised value into what the driver should receive.
// SQLite has no time type: times are stored as core.FormatTime text, whose
// order is time order, so guards on times compare correctly.
func (a *Adapter) bind(v any) any {
	if t, ok := v.(time.Time); ok {
		if a.dialect == dialect.SQLite {
			return core.FormatTime(t)
		}
		return t.UTC()
	}
	return v
}

// guard renders where clauses joined by AND, or nil when there are none.
// It is built anew for every use: ent predicates carry rendering state.
func (a *Adapter) guard(where []core.Where) (*entsql.Predicate, error) {
	if len(where) == 0 {
		return nil, nil
	}
	preds := make([]*entsql.Predicate, len(where))
	for i, w := range where {
		p, err := a.cond(w)
		if err != nil {
			return nil, err
		}
		preds[i] = p
	}
	if len(preds) == 1 {
		return preds[0], nil
	}
	return entsql.And(preds...), nil
}

// cond renders one clause. Comparisons go through b.Ident and b.Arg rather
// than entsql.EQ and friends: EQ(col, nil) renders "= NULL", which never
// matches, and EQ(col, true) renders a bare column.
func (a *Adapter) cond(w core.Where) (*entsql.Predicate, error) {
	col := w.Field
	var op entsql.Op
	switch w.Op {
	case core.OpEq:
		if w.Value == nil {
			return entsql.IsNull(col), nil
		}
		op = entsql.OpEQ
	case core.OpNe:
		if w.Value == nil {
			return entsql.NotNull(col), nil
		}
		op = entsql.OpNEQ
	case core.OpLt:
		op = entsql.OpLT
	case core.OpLte:
		op = entsql.OpLTE
	case core.OpGt:
		op = entsql.OpGT
	case core.OpGte:
		op = entsql.OpGTE
	case core.OpIn, core.OpNotIn:
		list, ok := w.Value.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%w: where %s %s needs a non-empty []any, got %T", core.ErrInvalid, col, w.Op, w.Value)
		}
		args := make([]any, len(list))
		for i, v := range list {
			args[i] = a.bind(v)
		}
		op = entsql.OpIn
		if w.Op == core.OpNotIn {
			op = entsql.OpNotIn
		}
		return entsql.P(func(b *entsql.Builder) {
			b.Ident(col).WriteOp(op)
			b.Wrap(func(b *entsql.Builder) { b.Args(args...) })
		}), nil
	default:
		return nil, fmt.Errorf("%w: where %s: unknown operator %v", core.ErrInvalid, col, w.Op)
	}
	if w.Value == nil {
		return nil, fmt.Errorf("%w: where %s %s: nil never matches", core.ErrInvalid, col, w.Op)
	}
	v := a.bind(w.Value)
	return entsql.P(func(b *entsql.Builder) { b.Ident(col).WriteOp(op).Arg(v) }), nil
}

// and joins predicates, skipping nil ones.
func and(preds ...*entsql.Predicate) *entsql.Predicate {
	var out []*entsql.Predicate
	for _, p := range preds {
		if p != nil {
			out = append(out, p)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return entsql.And(out...)
}

// inSubquery renders col = (sub).
func inSubquery(col string, sub *entsql.Selector) *entsql.Predicate {
	return entsql.P(func(b *entsql.Builder) {
		b.Ident(col).WriteOp(entsql.OpEQ)
		b.Wrap(func(b *entsql.Builder) { b.Join(sub) })
	})
}

// firstMatch selects the primary key of the first row the guard matches,
// in primary-key order; on PostgreSQL and MySQL it locks that row, so that a
// concurrent writer makes the statement wait and re-check, not miss.
func (a *Adapter) firstMatch(t *core.Table, g *entsql.Predicate) *entsql.Selector {
	pk := t.PrimaryKey().Name
	sel := a.sqlb().Select(pk).From(entsql.Table(t.Name)).OrderBy(pk).Limit(1)
	if g != nil {
		sel.Where(g)
	}
	if a.dialect != dialect.SQLite {
		sel.ForUpdate()
	}
	return sel
}

// queryRows runs a statement that returns rows and reads them all.
func (a *Adapter) queryRows(ctx context.Context, q string, args []any) ([]core.Record, error) {
	var rows entsql.Rows
	if err := a.exec.Query(ctx, q, args, &rows); err != nil {
		return nil, a.mapErr(err)
	}
	defer rows.Close()
	out, err := core.ScanRecords(rows)
	if err != nil {
		return nil, a.mapErr(err)
	}
	if err := rows.Close(); err != nil {
		return nil, a.mapErr(err)
	}
	return out, nil
}

// queryOne runs a statement and returns its first row, or nil.
func (a *Adapter) queryOne(ctx context.Context, q string, args []any) (core.Record, error) {
	recs, err := a.queryRows(ctx, q, args)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return recs[0], nil
}

// execute runs a statement that returns no rows.
func (a *Adapter) execute(ctx context.Context, q string, args []any) (entsql.Result, error) {
	var res entsql.Result
	if err := a.exec.Exec(ctx, q, args, &res); err != nil {
		return nil, a.mapErr(err)
	}
	return res, nil
}

// scalar runs a statement that returns one integer, such as COUNT(*).
func (a *Adapter) scalar(ctx context.Context, q string, args []any) (int64, error) {
	var rows entsql.Rows
	if err := a.exec.Query(ctx, q, args, &rows); err != nil {
		return 0, a.mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("sluiceent: %q returned no row", q)
	}
	var v any
	if err := rows.Scan(&v); err != nil {
		return 0, err
	}
	n, err := core.ParseInt(v)
	if err != nil {
		return 0, err
	}
	return n, rows.Close()
}
