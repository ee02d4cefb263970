package sluicesql

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Create inserts one row and returns it as stored. PostgreSQL and SQLite
// use INSERT … ON CONFLICT DO NOTHING RETURNING, so a taken unique key does
// not abort a surrounding PostgreSQL transaction; no row back is a
// conflict. MariaDB 10.5+ uses INSERT … RETURNING; MySQL inserts and reads
// the row back by its new primary key, in one transaction.
func (a *Adapter) Create(ctx context.Context, t *driver.Table, values []driver.Assignment) (driver.Record, error) {
	f := a.e.features
	render := func(b *builder, returning bool) {
		b.write("INSERT INTO ")
		b.ident(t.Name)
		switch {
		case len(values) > 0:
			b.write(" (")
			for i, v := range values {
				if i > 0 {
					b.write(", ")
				}
				b.ident(v.Column)
			}
			b.write(") VALUES (")
			for i, v := range values {
				if i > 0 {
					b.write(", ")
				}
				if v.Value == nil {
					b.write("NULL")
				} else {
					b.arg(v.Value)
				}
			}
			b.write(")")
		default:
			b.write(b.t.noColumns)
		}
		if !returning {
			return
		}
		b.write(b.t.onConflict)
		b.write(" RETURNING ")
		b.columns(t)
	}
	if f.InsertReturning {
		q, args := a.stmt(t, kindCreate, nil, nil, values, func(b *builder) { render(b, true) })
		rec, err := retried(a, ctx, func() (driver.Record, error) { return a.queryOne(ctx, q, args) })
		if err == nil && rec == nil {
			err = fmt.Errorf("%w: insert into %s: a row with the same unique key exists", core.ErrConflict, t.Name)
		}
		return rec, err
	}
	// MySQL without INSERT … RETURNING: LAST_INSERT_ID() is per connection,
	// so the insert and the read-back share a transaction.
	q, args := a.stmt(t, kindCreate, nil, nil, values, func(b *builder) { render(b, false) })
	pk := t.PrimaryKey().Name
	var out driver.Record
	err := a.writeTx(ctx, func(tx *Adapter) error {
		driver.AddRoundTrips(ctx, 1)
		if _, err := tx.x.Exec(ctx, q, args...); err != nil {
			return err
		}
		var id any
		for _, v := range values {
			if v.Column == pk {
				id = v.Value
			}
		}
		if id == nil {
			n, err := tx.scalar(ctx, "SELECT LAST_INSERT_ID()", nil)
			if err != nil {
				return err
			}
			id = n
		}
		rec, err := tx.findByPK(ctx, t, id)
		if err == nil && rec == nil {
			err = fmt.Errorf("%s: inserted row %s=%v not found", a.e.name(), pk, id)
		}
		out = rec
		return err
	})
	return out, err
}

// findByPK reads one row by primary key.
func (a *Adapter) findByPK(ctx context.Context, t *driver.Table, id any) (driver.Record, error) {
	where := []driver.Where{driver.Where{Column: t.PrimaryKey().Name, Op: driver.OpEq, Value: id}}
	q, args := a.stmt(t, kindFindByPK, where, nil, nil, func(b *builder) {
		b.write("SELECT ")
		b.columns(t)
		b.write(" FROM ")
		b.ident(t.Name)
		b.where(where)
	})
	return a.queryOne(ctx, q, args)
}

// FindOne returns the first matching row in primary-key order, or nil.
func (a *Adapter) FindOne(ctx context.Context, t *driver.Table, where []driver.Where) (driver.Record, error) {
	q, args := a.stmt(t, kindFindOne, where, nil, nil, func(b *builder) { b.selectFirst(t, where, false) })
	return retried(a, ctx, func() (driver.Record, error) { return a.queryOne(ctx, q, args) })
}

// FindMany returns the matching rows, ordered by opts.SortBy and then by
// primary key (or by primary key alone).
func (a *Adapter) FindMany(ctx context.Context, t *driver.Table, where []driver.Where, opts driver.FindOptions) ([]driver.Record, error) {
	if opts.Limit < 0 || opts.Offset < 0 {
		return nil, fmt.Errorf("%w: negative limit or offset", core.ErrInvalid)
	}
	pk := t.PrimaryKey().Name
	sortBy, desc := opts.SortBy, opts.Desc
	if sortBy == "" {
		sortBy, desc = pk, false
	}
	if _, ok := t.ColumnByName(sortBy); !ok {
		return nil, fmt.Errorf("%w: sort by unknown column %q", core.ErrInvalid, sortBy)
	}
	b := a.newBuilder()
	b.read("SELECT ")
	b.columns(t)
	b.write(" FROM ")
	b.ident(t.Name)
	b.where(where)
	b.write(" ORDER BY ")
	b.ident(sortBy)
	if desc {
		b.write(" DESC")
	}
	if sortBy != pk { // ties in primary-key order
		b.write(", ")
		b.ident(pk)
	}
	switch {
	case opts.Limit > 0:
		b.write(" LIMIT ")
		b.arg(int64(opts.Limit))
	case opts.Offset > 0 && a.e.t.offsetNeedsLimit:
		b.write(" LIMIT ") // MySQL and SQLite accept OFFSET only after LIMIT
		b.arg(int64(maxInt64))
	}
	if opts.Offset > 0 {
		b.write(" OFFSET ")
		b.arg(int64(opts.Offset))
	}
	recs, err := retried(a, ctx, func() ([]driver.Record, error) { return a.query(ctx, b.sb.String(), b.args) })
	if recs == nil && err == nil {
		recs = []driver.Record{}
	}
	return recs, err
}

// Update sets columns on at most one matching row, chosen and guarded as
// IncrementOne does, and returns it after the write, or nil.
func (a *Adapter) Update(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (driver.Record, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: Update on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	return a.IncrementOne(ctx, t, where, nil, set)
}

// UpdateMany sets columns on every matching row and returns how many
// matched. MySQL reports changed rows unless the DSN sets clientFoundRows,
// so there the rows are first counted under lock (SELECT COUNT(*) … FOR
// UPDATE) in the same transaction as the UPDATE.
func (a *Adapter) UpdateMany(ctx context.Context, t *driver.Table, where []driver.Where, set []driver.Assignment) (int64, error) {
	if len(set) == 0 {
		return 0, fmt.Errorf("%w: UpdateMany on %s: nothing to set", core.ErrInvalid, t.Name)
	}
	b := a.newBuilder()
	b.write("UPDATE ")
	b.ident(t.Name)
	b.assignments(nil, set)
	b.whereInTx(where) // on MySQL it runs in a transaction, below
	update, uargs := b.sb.String(), b.args
	if !a.e.t.countsChanged {
		var n int64
		err := a.retry(ctx, func() error {
			return a.conflictSafe(ctx, t, set, func(x *Adapter) (err error) {
				n, err = x.exec(ctx, update, uargs)
				return err
			})
		})
		return n, err
	}
	c := a.newBuilder()
	c.read("SELECT COUNT(*) FROM ")
	c.ident(t.Name)
	c.where(where)
	c.write(" FOR UPDATE")
	var matched int64
	err := a.writeTx(ctx, func(tx *Adapter) (err error) {
		if matched, err = tx.scalar(ctx, c.sb.String(), c.args); err != nil || matched == 0 {
			return err
		}
		_, err = tx.exec(ctx, update, uargs)
		return err
	})
	return matched, err
}

// firstMatch writes "pk = (SELECT pk FROM t WHERE … ORDER BY pk LIMIT 1
// [FOR UPDATE])": the row a single-row statement changes. On PostgreSQL
// the lock makes a concurrent writer's statement wait and re-check rather
// than miss; SQLite serialises writers anyway.
func (b *builder) firstMatch(t *driver.Table, where []driver.Where) {
	pk := t.PrimaryKey().Name
	b.ident(pk)
	b.write(" = (SELECT ")
	b.ident(pk)
	b.write(" FROM ")
	b.ident(t.Name)
	b.where(where)
	b.write(" ORDER BY ")
	b.ident(pk)
	b.write(" LIMIT 1")
	if b.t.lockFirstMatch {
		b.write(" FOR UPDATE")
	}
	b.write(")")
}

// Delete removes at most one matching row, the first in primary-key order.
// On a Galera node a miss is run once more after the node caught up
// (rerunAfterMiss).
func (a *Adapter) Delete(ctx context.Context, t *driver.Table, where []driver.Where) (bool, error) {
	b := a.newBuilder()
	b.write("DELETE FROM ")
	b.ident(t.Name)
	switch {
	case a.e.t.deleteLimit:
		// MySQL has DELETE … ORDER BY … LIMIT, and refuses a subquery on
		// the table being deleted from (error 1093).
		b.firstByKey(t, where)
	case t.SelectsOne(where):
		b.where(where)
	default:
		b.write(" WHERE ")
		b.firstMatch(t, where)
		if len(where) > 0 {
			b.write(" AND ")
			b.conds(where)
		}
	}
	_, ok, err := rerunAfterMiss(a, ctx, func() (int64, bool, error) {
		n, err := retried(a, ctx, func() (int64, error) { return a.exec(ctx, b.sb.String(), b.args) })
		return n, n > 0, err
	})
	return ok, err
}

// DeleteMany removes every matching row and returns how many. On MySQL
// outside a transaction the rows are found first and deleted by primary
// key (see deleteManyByKey), so that a large prune locks no row it keeps.
func (a *Adapter) DeleteMany(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	if a.e.t.locksScanned && !a.inTx {
		return a.deleteManyByKey(ctx, t, where)
	}
	b := a.newBuilder()
	b.write("DELETE FROM ")
	b.ident(t.Name)
	b.where(where)
	return retried(a, ctx, func() (int64, error) { return a.exec(ctx, b.sb.String(), b.args) })
}

// Count returns the number of matching rows.
func (a *Adapter) Count(ctx context.Context, t *driver.Table, where []driver.Where) (int64, error) {
	b := a.newBuilder()
	b.read("SELECT COUNT(*) FROM ")
	b.ident(t.Name)
	b.where(where)
	return retried(a, ctx, func() (int64, error) { return a.scalar(ctx, b.sb.String(), b.args) })
}
