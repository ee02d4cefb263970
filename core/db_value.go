package core

import (
	"context"

	"github.com/sluice-go/sluice/core/driver"
)

// NativeValueIncrement reports whether [DB.IncrementValue] runs on the
// adapter's [driver.ValueIncrementer] in fewer round trips than IncrementOne
// (see ValueIncrementSaves); when it is false a caller needing more than
// the one value should call IncrementOne. It is decided once, when the
// adapter is wrapped ([New]): an adapter that later loses its cheap path
// still answers IncrementValue, by IncrementOne's row.
func (db *DB) NativeValueIncrement() bool { return db != nil && db.cheapValue }

// valueIncrementer returns a's value increment and whether it saves round
// trips, when IncrementOne is native; nil otherwise.
func valueIncrementer(native driver.Incrementer, a driver.Adapter) (driver.ValueIncrementer, bool) {
	vi, ok := a.(driver.ValueIncrementer)
	if !ok || native == nil {
		return nil, false
	}
	return vi, vi.ValueIncrementSaves()
}

// IncrementValue is [DB.IncrementOne] for a request whose Increment has
// exactly one field, answering with that field's value after the write
// instead of the row: ok == false when the guard selected nothing.
//
// When the adapter implements [driver.ValueIncrementer] (and IncrementOne runs
// natively), the field is not nullable and its delta is not zero, the
// adapter answers, whether or not it saves round trips; otherwise
// IncrementValue is IncrementOne and reads the field from the row, with
// the same result.
func (db *DB) IncrementValue(ctx context.Context, req IncrementRequest) (value int64, ok bool, err error) {
	const op = "IncrementValue"
	if err := db.initialised(op, req.Model); err != nil {
		return 0, false, err
	}
	if len(req.Increment) != 1 {
		return 0, false, invalid(op, req.Model, "Increment must hold exactly one field, not %d", len(req.Increment))
	}
	var field string
	var by int64
	for f, d := range req.Increment {
		field, by = f, d
	}
	vi := db.value
	var c driver.Column
	var found bool
	if t, ok := db.schema.Table(req.Model); ok {
		c, found = t.Column(field)
	}
	if vi == nil || by == 0 || !found || c.Field.Nullable || c.Field.Type != TypeInt || c.Field.Primary {
		row, ok, err := db.IncrementOne(ctx, req)
		if err != nil || !ok {
			return 0, false, err
		}
		return row.Int(field), true, nil
	}
	if _, both := req.Set[field]; both {
		return 0, false, invalid(op, req.Model, "field %q is in both Increment and Set", field)
	}
	s := incBuffers.Get().(*incBuffer) // as IncrementOne's: the adapter keeps none of it
	defer s.release()
	t, where, err := db.prepareInto(op, req.Model, req.Where, s.where[:0])
	if err != nil {
		return 0, false, err
	}
	set, err := db.assignmentsInto(op, t, req.Set, s.set[:0])
	if err != nil {
		return 0, false, err
	}
	value, ok, err = vi.IncrementValue(ctx, t, where, driver.Delta{Column: c.Name, By: by}, set)
	if err != nil {
		return 0, false, wrap(op, t.Model, err)
	}
	return value, ok, nil
}
