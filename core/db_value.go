package core

import "context"

// ValueIncrementer is implemented by adapters that can run an IncrementOne
// whose one delta is on a non-nullable column and answer with that
// column's value after the write rather than the whole row. On MySQL and
// MariaDB, where no UPDATE returns rows, that is one statement and one
// round trip, where the whole row takes a transaction.
//
// IncrementValue has IncrementOne's contract (see [Incrementer]: one
// atomic write to at most one row chosen by where, during which where
// still holds; overflow fails with [ErrInvalid] and writes nothing;
// deadlock victims retried) for the deltas {inc} and the assignments set,
// and returns inc.Column's value as stored after the write, with ok ==
// false when the guard selected nothing. [DB] calls it only with
// inc.By != 0 and a non-nullable column.
//
// ValueIncrementSaves reports whether IncrementValue takes fewer round
// trips than IncrementOne on the adapter's connection (the SQL engine: on
// MySQL, one statement instead of a transaction when the driver reports
// last insert ids; on PostgreSQL and SQLite no, both are one statement,
// though IncrementValue returns one column instead of the row). It is what
// [DB.NativeValueIncrement] reports, by which callers choose a path that
// trades a read for fewer round trips.
type ValueIncrementer interface {
	IncrementValue(ctx context.Context, t *Table, where []Where, inc Delta, set []Assignment) (value int64, ok bool, err error)
	ValueIncrementSaves() bool
}

// NativeValueIncrement reports whether [DB.IncrementValue] runs on the
// adapter's [ValueIncrementer] in fewer round trips than IncrementOne
// (see ValueIncrementSaves); when it is false a caller needing more than
// the one value should call IncrementOne.
func (db *DB) NativeValueIncrement() bool {
	if db == nil || db.native == nil {
		return false
	}
	vi, ok := db.adapter.(ValueIncrementer)
	return ok && vi.ValueIncrementSaves()
}

// IncrementValue is [DB.IncrementOne] for a request whose Increment has
// exactly one field, answering with that field's value after the write
// instead of the row: ok == false when the guard selected nothing.
//
// When the adapter implements [ValueIncrementer] (and IncrementOne runs
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
	vi, native := db.adapter.(ValueIncrementer)
	var c Column
	var found bool
	if t, ok := db.schema.Table(req.Model); ok {
		c, found = t.Column(field)
	}
	if !native || db.native == nil || by == 0 || !found || c.Field.Nullable || c.Field.Type != TypeInt || c.Field.Primary {
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
	value, ok, err = vi.IncrementValue(ctx, t, where, Delta{Column: c.Name, By: by}, set)
	if err != nil {
		return 0, false, wrap(op, t.Model, err)
	}
	return value, ok, nil
}
