package core

import (
	"context"
	"errors"
	"math"

	"github.com/sluice-go/sluice/core/driver"
)

// PairRequest is an increment of one int field that answers, beside that
// field's value after the write, a second int field's value, each within
// bounds the write is guarded on (see [DB.IncrementPair]).
type PairRequest struct {
	Model string  // logical model name
	Where []Where // selector and guard, joined by AND
	Field string  // the int field incremented
	By    int64   // its delta, not zero
	// Max is the most Field may hold after the write (at least 0): the
	// write is also guarded on 0 ≤ Field + By ≤ Max.
	Max int64
	// Other is the int field answered beside driver.Field, which the write leaves
	// as it is; the write is also guarded on OtherMin ≤ Other ≤ OtherMax.
	Other              string
	OtherMin, OtherMax int64
}

// IncrementPair adds By to Field in at most one row chosen by Where and
// the bounds of req, in one atomic write during which the guard holds, and
// returns Field's value after the write and Other's, with ok == false when
// the guard selected nothing. A rate limiter that does not know a window's
// start learns it with the new count from the write that admits.
//
// It is one statement on every SQL dialect: UPDATE … RETURNING the two
// columns on PostgreSQL and SQLite; on MySQL and MariaDB one UPDATE that
// packs both values, in their ranges, into the integer LAST_INSERT_ID(expr)
// reports (see [driver.PairIncrementer]). Where the adapter cannot (ranges
// too wide to pack, Max × (OtherMax − OtherMin + 1) past int64; an adapter
// without the interface), it is IncrementOne with the same guard.
func (db *DB) IncrementPair(ctx context.Context, req PairRequest) (value, other int64, ok bool, err error) {
	const op = "IncrementPair"
	t, inc, b, err := db.pairRequest(op, req)
	if err != nil {
		return 0, 0, false, err
	}
	guard := append(req.Where[:len(req.Where):len(req.Where)],
		Gte(req.Field, -req.By), Lte(req.Field, req.Max-req.By), Gte(req.Other, req.OtherMin), Lte(req.Other, req.OtherMax))
	if pi, native := db.native.(driver.PairIncrementer); native {
		s := incBuffers.Get().(*incBuffer)
		defer s.release()
		_, where, err := db.prepareInto(op, req.Model, guard, s.where[:0])
		if err != nil {
			return 0, 0, false, err
		}
		value, other, ok, err = pi.IncrementPair(ctx, t, where, inc, b)
		if !errors.Is(err, driver.ErrNoPair) {
			return value, other, ok, wrap(op, t.Model, err)
		}
	}
	row, ok, err := db.IncrementOne(ctx, IncrementRequest{Model: req.Model, Where: guard, Increment: map[string]int64{req.Field: req.By}})
	if err != nil || !ok {
		return 0, 0, false, err
	}
	return row.Int(req.Field), row.Int(req.Other), true, nil
}

// pairRequest checks req, before any I/O, and maps its fields.
func (db *DB) pairRequest(op string, req PairRequest) (*driver.Table, driver.Delta, driver.PairBounds, error) {
	if err := db.initialised(op, req.Model); err != nil {
		return nil, driver.Delta{}, driver.PairBounds{}, err
	}
	t, ok := db.table(req.Model)
	if !ok {
		return nil, driver.Delta{}, driver.PairBounds{}, invalid(op, req.Model, "unknown model %q", req.Model)
	}
	col := func(role, field string) (string, error) {
		c, ok := t.Column(field)
		switch {
		case !ok:
			return "", invalid(op, req.Model, "unknown field %q as %s", field, role)
		case c.Field.Type != driver.TypeInt || c.Field.Primary || c.Field.Nullable:
			return "", invalid(op, req.Model, "field %q cannot be %s: only non-key, non-nullable int fields can", field, role)
		}
		return c.Name, nil
	}
	field, err := col("Field", req.Field)
	if err != nil {
		return nil, driver.Delta{}, driver.PairBounds{}, err
	}
	other, err := col("Other", req.Other)
	if err != nil {
		return nil, driver.Delta{}, driver.PairBounds{}, err
	}
	switch {
	case req.Field == req.Other:
		err = invalid(op, req.Model, "Field and Other are both %q", req.Field)
	case req.By == 0 || req.By == math.MinInt64:
		err = invalid(op, req.Model, "By is %d: it must be non-zero and negatable", req.By)
	case req.Max < 0 || (req.By < 0 && req.Max > math.MaxInt64+req.By):
		err = invalid(op, req.Model, "Max %d with By %d: Max must be at least 0 and Max − By an int64", req.Max, req.By)
	case req.OtherMin > req.OtherMax:
		err = invalid(op, req.Model, "OtherMin %d is above OtherMax %d", req.OtherMin, req.OtherMax)
	}
	if err != nil {
		return nil, driver.Delta{}, driver.PairBounds{}, err
	}
	return t, driver.Delta{Column: field, By: req.By}, driver.PairBounds{Column: other, Min: req.OtherMin, Max: req.OtherMax, ValueMax: req.Max}, nil
}
