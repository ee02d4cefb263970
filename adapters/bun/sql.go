package sluicebun

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// sqlConn is what *sql.DB, *sql.Tx and *sql.Conn share: the database/sql
// handle under a *bun.DB, bun.Tx or bun.Conn.
type sqlConn interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// sqlConnOf returns the database/sql handle under db, or nil for a bun.IDB
// of another kind.
func sqlConnOf(db bun.IDB) sqlConn {
	switch db := db.(type) {
	case *bun.DB:
		return db.DB
	case bun.Tx:
		return db.Tx
	case *bun.Tx:
		return db.Tx
	case bun.Conn:
		return db.Conn
	case *bun.Conn:
		return db.Conn
	}
	return nil
}

// params collects the values of one statement. bun writes values into the
// SQL text; on PostgreSQL the adapter binds them as $n parameters instead
// (see [Adapter.placeholders]), and then params keeps them in order.
type params struct {
	a    *Adapter
	list []any
	err  error // a value that cannot be stored; reported before any I/O
}

func (a *Adapter) params() *params { return &params{a: a} }

// add returns what to give a bun query builder for the value v: v itself,
// converted for storage, when bun inlines values, or a $n placeholder.
func (p *params) add(v any) any {
	v = p.a.storage(v)
	if s, ok := v.(string); ok && strings.IndexByte(s, 0) >= 0 && p.err == nil {
		// PostgreSQL text cannot hold NUL, bun's SQLite dialect refuses it
		// and its MySQL dialect silently drops it: refuse it everywhere.
		p.err = fmt.Errorf("%w: the string %q contains a NUL byte, which cannot be stored", core.ErrInvalid, s)
	}
	if !p.a.placeholders {
		if v == nil {
			return bun.Safe("NULL") // bun.In panics on an untyped nil
		}
		return v
	}
	p.list = append(p.list, v)
	return bun.Safe("$" + strconv.Itoa(len(p.list)))
}

// storage converts a normalised value into what the dialect stores: SQLite
// has no time type and keeps times as core.FormatTime text, whose order is
// time order; elsewhere a time goes in as UTC (mysqldialect writes the wall
// clock of the value's own location, so it must already be UTC).
func (a *Adapter) storage(v any) any {
	t, ok := v.(time.Time)
	if !ok {
		return v
	}
	if a.dialect == dialect.SQLite {
		return core.FormatTime(t)
	}
	return t.UTC()
}

// cond renders where clauses, joined by AND, as one bun expression and its
// arguments; "" when there are none. Columns go through bun.Ident, so
// reserved words such as `key` are quoted. Eq and Ne with nil become IS NULL
// and IS NOT NULL: bun would render "= NULL", which never matches.
func (p *params) cond(where []core.Where) (string, []any, error) {
	var b strings.Builder
	args := make([]any, 0, 2*len(where))
	for i, w := range where {
		if i > 0 {
			b.WriteString(" AND ")
		}
		args = append(args, bun.Ident(w.Field))
		switch w.Op {
		case core.OpEq, core.OpNe:
			switch {
			case w.Value == nil && w.Op == core.OpEq:
				b.WriteString("? IS NULL")
				continue
			case w.Value == nil:
				b.WriteString("? IS NOT NULL")
				continue
			case w.Op == core.OpEq:
				b.WriteString("? = ?")
			default:
				b.WriteString("? <> ?")
			}
			args = append(args, p.add(w.Value))
		case core.OpLt, core.OpLte, core.OpGt, core.OpGte:
			b.WriteString("? " + [...]string{core.OpLt: "<", core.OpLte: "<=", core.OpGt: ">", core.OpGte: ">="}[w.Op] + " ?")
			args = append(args, p.add(w.Value))
		case core.OpIn, core.OpNotIn:
			list, ok := w.Value.([]any)
			if !ok || len(list) == 0 {
				return "", nil, fmt.Errorf("%w: where %s %s needs a non-empty []any, got %T", core.ErrInvalid, w.Field, w.Op, w.Value)
			}
			items := make([]any, len(list))
			for j, v := range list {
				items[j] = p.add(v)
			}
			if w.Op == core.OpIn {
				b.WriteString("? IN (?)")
			} else {
				b.WriteString("? NOT IN (?)")
			}
			args = append(args, bun.In(items))
		default:
			return "", nil, fmt.Errorf("%w: where %s: unknown operator %v", core.ErrInvalid, w.Field, w.Op)
		}
	}
	return b.String(), args, nil
}

// whereAll is the condition for an empty where list: bun refuses UPDATE and
// DELETE without a WHERE, and an empty list means every row.
const whereAll = "1 = 1"

// guarded applies a condition from cond to a query builder.
func guarded[Q interface{ Where(string, ...any) Q }](q Q, expr string, args []any) Q {
	if expr == "" {
		return q.Where(whereAll)
	}
	return q.Where(expr, args...)
}

// columns is the quoted column list of t, for SELECT and RETURNING.
func columns(t *core.Table) schema.QueryAppender {
	idents := make([]bun.Ident, len(t.Columns))
	for i, c := range t.Columns {
		idents[i] = bun.Ident(c.Name)
	}
	return bun.In(idents)
}

// query runs a statement built with bun and returns its rows as records.
// It scans into plain values rather than through a bun model, so that every
// driver's natural types reach core.DB, which converts them.
func (a *Adapter) query(ctx context.Context, q schema.QueryAppender, p *params) ([]core.Record, error) {
	if p.err != nil {
		return nil, p.err
	}
	text, err := q.AppendQuery(a.gen, nil)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if a.placeholders {
		rows, err = a.conn.QueryContext(ctx, string(text), p.list...)
	} else {
		rows, err = a.db.QueryContext(ctx, string(text))
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return core.ScanRecords(rows)
}

// queryOne runs q and returns its first row, or nil when it returned none.
func (a *Adapter) queryOne(ctx context.Context, q schema.QueryAppender, p *params) (core.Record, error) {
	recs, err := a.query(ctx, q, p)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return recs[0], nil
}

// exec runs a statement built with bun and returns its result.
func (a *Adapter) exec(ctx context.Context, q schema.QueryAppender, p *params) (sql.Result, error) {
	if p.err != nil {
		return nil, p.err
	}
	text, err := q.AppendQuery(a.gen, nil)
	if err != nil {
		return nil, err
	}
	if a.placeholders {
		return a.conn.ExecContext(ctx, string(text), p.list...)
	}
	return a.db.ExecContext(ctx, string(text))
}

// affected runs a statement and returns how many rows it affected.
func (a *Adapter) affected(ctx context.Context, q schema.QueryAppender, p *params) (int64, error) {
	res, err := a.exec(ctx, q, p)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
