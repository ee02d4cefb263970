package sluicegorm

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core"
	"gorm.io/gorm"
)

// tableSQL holds the quoted names of one table, computed once per
// *core.Table and adapter family.
type tableSQL struct {
	name    string            // quoted table name
	pk      string            // quoted primary-key column
	pkName  string            // physical primary-key column
	columns string            // quoted column list, for SELECT and RETURNING
	quoted  map[string]string // physical column → quoted
}

func (a *Adapter) table(t *core.Table) *tableSQL {
	if ts, ok := a.tables.Load(t); ok {
		return ts.(*tableSQL)
	}
	ts := &tableSQL{name: a.quote(t.Name), pk: a.quote(t.PrimaryKey().Name), pkName: t.PrimaryKey().Name,
		quoted: map[string]string{}}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = a.quote(c.Name)
		ts.quoted[c.Name] = cols[i]
	}
	ts.columns = strings.Join(cols, ", ")
	a.tables.Store(t, ts)
	return ts
}

// col returns a column's quoted name.
func (ts *tableSQL) col(a *Adapter, name string) string {
	if q, ok := ts.quoted[name]; ok {
		return q
	}
	return a.quote(name)
}

// quote quotes an identifier the way the gorm dialector does: "name" on
// PostgreSQL and SQLite, `name` on MySQL (where key is reserved).
func (a *Adapter) quote(name string) string {
	var b strings.Builder
	a.db.Dialector.QuoteTo(&b, name)
	return b.String()
}

// stmt builds one statement, with the bind variables of the gorm dialector
// ($n on PostgreSQL, ? elsewhere) written as it goes, and hands it to
// gorm's Row and Raw callbacks ready-made: gorm's logger and plugins see
// every statement, and the hot path does not re-scan the SQL text to
// replace placeholders.
type stmt struct {
	a    *Adapter
	ts   *tableSQL
	sql  strings.Builder
	args []any
}

func (a *Adapter) stmt(ts *tableSQL) *stmt {
	s := &stmt{a: a, ts: ts, args: make([]any, 0, 8)}
	s.sql.Grow(256)
	return s
}

func (s *stmt) w(parts ...string) *stmt {
	for _, p := range parts {
		s.sql.WriteString(p)
	}
	return s
}

// arg writes a placeholder and binds v in the form the dialect stores:
// times are UTC instants, and on SQLite the fixed-width text of
// core.FormatTime, whose text order is time order.
func (s *stmt) arg(v any) *stmt {
	if t, ok := v.(time.Time); ok {
		if s.a.dialect == sqlite {
			v = core.FormatTime(t)
		} else {
			v = t.UTC()
		}
	}
	s.args = append(s.args, v)
	if s.a.dialect == postgres {
		s.sql.WriteByte('$')
		s.sql.WriteString(strconv.Itoa(len(s.args)))
	} else {
		s.sql.WriteByte('?')
	}
	return s
}

// where writes " WHERE c1 AND c2 ..." (nothing for an empty list), or with
// and set, " AND c1 AND c2 ...".
func (s *stmt) where(where []core.Where, and bool) error {
	for i, w := range where {
		switch {
		case and || i > 0:
			s.w(" AND ")
		default:
			s.w(" WHERE ")
		}
		col := s.ts.col(s.a, w.Field)
		switch w.Op {
		case core.OpEq, core.OpNe:
			switch {
			case w.Value == nil && w.Op == core.OpEq:
				s.w(col, " IS NULL")
			case w.Value == nil:
				s.w(col, " IS NOT NULL")
			case w.Op == core.OpEq:
				s.w(col, " = ").arg(w.Value)
			default:
				s.w(col, " <> ").arg(w.Value)
			}
		case core.OpLt:
			s.w(col, " < ").arg(w.Value)
		case core.OpLte:
			s.w(col, " <= ").arg(w.Value)
		case core.OpGt:
			s.w(col, " > ").arg(w.Value)
		case core.OpGte:
			s.w(col, " >= ").arg(w.Value)
		case core.OpIn, core.OpNotIn:
			list, ok := w.Value.([]any)
			if !ok || len(list) == 0 {
				return fmt.Errorf("%w: where %s %s: needs a non-empty []any, got %T", core.ErrInvalid, w.Field, w.Op, w.Value)
			}
			if w.Op == core.OpIn {
				s.w(col, " IN (")
			} else {
				s.w(col, " NOT IN (")
			}
			for j, v := range list {
				if j > 0 {
					s.w(", ")
				}
				s.arg(v)
			}
			s.w(")")
		default:
			return fmt.Errorf("%w: where %s: unknown operator %v", core.ErrInvalid, w.Field, w.Op)
		}
	}
	return nil
}

// set writes "c1 = c1 + ?, c2 = ?" for the deltas and then the assignments.
// A delta is computed by the database, so NULL + delta stays NULL.
func (s *stmt) set(inc []core.Delta, set []core.Assignment) {
	for i, d := range inc {
		if i > 0 {
			s.w(", ")
		}
		col := s.ts.col(s.a, d.Column)
		s.w(col, " = ", col, " + ").arg(d.By)
	}
	for i, as := range set {
		if i > 0 || len(inc) > 0 {
			s.w(", ")
		}
		s.w(s.ts.col(s.a, as.Column), " = ").arg(as.Value)
	}
}

// gorm returns a *gorm.DB holding the built statement. a.db is a NewDB
// session, so Raw starts a fresh statement; setting its fields is what Raw
// and WithContext would do, without scanning the SQL for placeholders and
// cloning a second statement.
func (s *stmt) gorm(ctx context.Context) *gorm.DB {
	tx := s.a.db.Raw("")
	tx.Statement.Context = ctx
	tx.Statement.SQL.WriteString(s.sql.String())
	tx.Statement.Vars = s.args
	return tx
}

// query runs the statement through gorm's Row callbacks and returns every
// row it produced.
func (s *stmt) query(ctx context.Context) ([]core.Record, error) {
	rows, err := s.gorm(ctx).Rows()
	if err != nil {
		return nil, s.a.mapErr(err)
	}
	recs, err := scan(rows)
	return recs, s.a.mapErr(err)
}

// queryOne runs the statement and returns its first row, or nil.
func (s *stmt) queryOne(ctx context.Context) (core.Record, error) {
	recs, err := s.query(ctx)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return recs[0], nil
}

// exec runs the statement through gorm's Raw callbacks (those of db.Exec)
// and returns the driver's result: RowsAffected, and on MySQL LastInsertId.
func (s *stmt) exec(ctx context.Context) (sql.Result, int64, error) {
	tx := s.gorm(ctx)
	res := gorm.WithResult()
	res.ModifyStatement(tx.Statement)
	tx = tx.Callback().Raw().Execute(tx)
	return res.Result, tx.RowsAffected, s.a.mapErr(tx.Error)
}

// scan reads every row into records and closes rows.
func scan(rows *sql.Rows) (recs []core.Record, err error) {
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	return core.ScanRecords(rows)
}
