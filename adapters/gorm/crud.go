package sluicegorm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluice-go/sluice/core"
)

// Create inserts one row and returns it as stored. A unique-key violation
// fails with core.ErrConflict. On PostgreSQL the insert is
// INSERT ... ON CONFLICT DO NOTHING RETURNING, so a conflict does not abort
// a surrounding transaction.
func (a *Adapter) Create(ctx context.Context, t *core.Table, values []core.Assignment) (core.Record, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("INSERT INTO ", ts.name)
	switch {
	case len(values) > 0:
		s.w(" (")
		for i, v := range values {
			if i > 0 {
				s.w(", ")
			}
			s.w(ts.col(a, v.Column))
		}
		s.w(") VALUES (")
		for i, v := range values {
			if i > 0 {
				s.w(", ")
			}
			s.arg(v.Value)
		}
		s.w(")")
	case a.dialect == mysql:
		s.w(" () VALUES ()")
	default:
		s.w(" DEFAULT VALUES")
	}
	switch a.dialect {
	case postgres:
		s.w(" ON CONFLICT DO NOTHING RETURNING ", ts.columns)
		rec, err := s.queryOne(ctx)
		if err == nil && rec == nil {
			err = fmt.Errorf("%w: %s: a row with the same primary key or unique value exists", core.ErrConflict, t.Name)
		}
		return rec, err
	case sqlite:
		s.w(" RETURNING ", ts.columns)
		rec, err := s.queryOne(ctx)
		if err == nil && rec == nil {
			err = fmt.Errorf("%w: INSERT INTO %s", errNoRow, t.Name)
		}
		return rec, err
	}
	return a.createMySQL(ctx, t, ts, s, values)
}

// createMySQL inserts, then reads the row back by the id the server
// reported (MySQL has no INSERT ... RETURNING).
func (a *Adapter) createMySQL(ctx context.Context, t *core.Table, ts *tableSQL, s *stmt, values []core.Assignment) (core.Record, error) {
	var id any
	for _, v := range values {
		if v.Column == ts.pkName {
			id = v.Value
		}
	}
	res, _, err := s.exec(ctx)
	if err != nil {
		return nil, err
	}
	if id == nil {
		if res == nil {
			return nil, fmt.Errorf("%w: INSERT INTO %s gave no result", errNoRow, t.Name)
		}
		if id, err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	rec, err := a.stmt(ts).w("SELECT ", ts.columns, " FROM ", ts.name, " WHERE ", ts.pk, " = ").arg(id).queryOne(ctx)
	if err == nil && rec == nil {
		err = fmt.Errorf("%w: %s %s = %v was deleted right after its insert", errNoRow, t.Name, ts.pkName, id)
	}
	return rec, err
}

// FindOne returns the first matching row in primary-key order, or nil.
func (a *Adapter) FindOne(ctx context.Context, t *core.Table, where []core.Where) (core.Record, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("SELECT ", ts.columns, " FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return nil, err
	}
	s.w(" ORDER BY ", ts.pk, " LIMIT 1")
	return s.queryOne(ctx)
}

// FindMany returns the matching rows, ordered by opts.SortBy and then the
// primary key, or by the primary key alone.
func (a *Adapter) FindMany(ctx context.Context, t *core.Table, where []core.Where, opts core.FindOptions) ([]core.Record, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("SELECT ", ts.columns, " FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return nil, err
	}
	dir := ""
	if opts.Desc {
		dir = " DESC"
	}
	s.w(" ORDER BY ")
	if opts.SortBy != "" && opts.SortBy != ts.pkName {
		s.w(ts.col(a, opts.SortBy), dir, ", ", ts.pk)
	} else {
		s.w(ts.pk, dir)
	}
	switch {
	case opts.Limit > 0:
		s.w(" LIMIT ", strconv.Itoa(opts.Limit))
	case opts.Offset > 0 && a.dialect == mysql:
		s.w(" LIMIT 18446744073709551615") // MySQL has no OFFSET without LIMIT
	case opts.Offset > 0 && a.dialect == sqlite:
		s.w(" LIMIT -1")
	}
	if opts.Offset > 0 {
		s.w(" OFFSET ", strconv.Itoa(opts.Offset))
	}
	recs, err := s.query(ctx)
	if recs == nil && err == nil {
		recs = []core.Record{}
	}
	return recs, err
}

// Update sets columns on at most one matching row, the first in
// primary-key order, and returns it after the write, or nil. It is
// IncrementOne without deltas, with the same guarantees.
func (a *Adapter) Update(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (core.Record, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: Update: nothing to set", core.ErrInvalid)
	}
	if a.dialect == mysql {
		return a.updateOneMySQL(ctx, t, where, nil, set)
	}
	return a.updateOneReturning(ctx, t, where, nil, set)
}

// UpdateMany sets columns on every matching row and returns how many rows
// matched. PostgreSQL and SQLite report matched rows. MySQL reports rows
// changed unless the DSN sets clientFoundRows, so there the rows are first
// locked with SELECT pk ... FOR UPDATE, and exactly those are updated.
func (a *Adapter) UpdateMany(ctx context.Context, t *core.Table, where []core.Where, set []core.Assignment) (int64, error) {
	if len(set) == 0 {
		return 0, fmt.Errorf("%w: UpdateMany: nothing to set", core.ErrInvalid)
	}
	ts := a.table(t)
	if a.dialect != mysql {
		s := a.stmt(ts).w("UPDATE ", ts.name, " SET ")
		s.set(nil, set)
		if err := s.where(where, false); err != nil {
			return 0, err
		}
		_, n, err := s.exec(ctx)
		return n, err
	}
	var n int64
	err := a.atomically(ctx, func(tx *Adapter) error {
		s := tx.stmt(ts).w("SELECT ", ts.pk, " FROM ", ts.name)
		if err := s.where(where, false); err != nil {
			return err
		}
		s.w(" ORDER BY ", ts.pk, " FOR UPDATE")
		recs, err := s.query(ctx)
		if err != nil {
			return err
		}
		const chunk = 500
		for i := 0; i < len(recs); i += chunk {
			ids := make([]any, 0, chunk)
			for _, r := range recs[i:min(i+chunk, len(recs))] {
				ids = append(ids, r[ts.pkName])
			}
			u := tx.stmt(ts).w("UPDATE ", ts.name, " SET ")
			u.set(nil, set)
			if err := u.where([]core.Where{{Field: ts.pkName, Op: core.OpIn, Value: ids}}, false); err != nil {
				return err
			}
			if _, _, err := u.exec(ctx); err != nil {
				return err
			}
		}
		n = int64(len(recs))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Delete removes at most one matching row, the first in primary-key order,
// and reports whether it did.
func (a *Adapter) Delete(ctx context.Context, t *core.Table, where []core.Where) (bool, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("DELETE FROM ", ts.name)
	var err error
	switch {
	case t.SelectsOne(where):
		err = s.where(where, false)
	case a.dialect == mysql:
		if err = s.where(where, false); err == nil {
			s.w(" ORDER BY ", ts.pk, " LIMIT 1")
		}
	default:
		err = a.firstRowGuard(s, ts, where)
	}
	if err != nil {
		return false, err
	}
	_, n, err := s.exec(ctx)
	return n > 0, err
}

// DeleteMany removes every matching row and returns how many.
func (a *Adapter) DeleteMany(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("DELETE FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return 0, err
	}
	_, n, err := s.exec(ctx)
	return n, err
}

// Count returns the number of matching rows.
func (a *Adapter) Count(ctx context.Context, t *core.Table, where []core.Where) (int64, error) {
	ts := a.table(t)
	s := a.stmt(ts).w("SELECT COUNT(*) AS n FROM ", ts.name)
	if err := s.where(where, false); err != nil {
		return 0, err
	}
	rec, err := s.queryOne(ctx)
	if err != nil {
		return 0, err
	}
	switch n := rec["n"].(type) {
	case int64:
		return n, nil
	case []byte:
		return strconv.ParseInt(string(n), 10, 64)
	case string:
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, fmt.Errorf("sluicegorm: COUNT(*) returned %T", rec["n"])
}
