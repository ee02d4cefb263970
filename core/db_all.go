package core

import (
	"context"
	"reflect"

	"github.com/sluice-go/sluice/core/driver"
)

// RowWrite is one row's part of [DB.IncrementAll]: the row whose unique
// field holds Key, the alternatives to write it by, and what the call
// reports.
type RowWrite struct {
	Key any // the row's value of the unique field
	// Cases are the alternatives, in order: the first whose Where holds on
	// the locked row applies its Increment and Set. Their Model is the
	// call's and is not read.
	Cases []IncrementRequest
	// Optional writes apply when a case holds; none holding fails nothing.
	Optional bool

	// Row is the row as locked, before any write (nil when there is none),
	// and Case the index of the case that holds on it, or -1.
	Row  Row
	Case int
}

// IncrementAll applies guarded writes to several rows of model, each
// chosen by its value of the unique field, all of them or none, in one
// statement: the rows are locked in the byte order of their keys and read
// as last committed; when every row exists and each write that is not
// Optional has a case that holds, every write with such a case applies
// and ok is true; otherwise nothing is written and ok is false. Each write
// reports its Row and Case either way (see [driver.AllIncrementer]). Each
// write names a row of its own: a key written twice is refused with
// [ErrInvalid], before any I/O.
//
// Where the adapter cannot do it in one statement (no
// [driver.AllIncrementer], or a dialect that does not declare it: the SQL
// engine declares it for PostgreSQL), it fails wrapping
// [driver.ErrNoAll], having written nothing: the caller then writes in a
// transaction ([DB.InTx]).
func (db *DB) IncrementAll(ctx context.Context, model, field string, writes []RowWrite) (ok bool, err error) {
	const op = "IncrementAll"
	t, _, err := db.prepare(op, model, nil)
	if err != nil {
		return false, err
	}
	c, found := t.Column(field)
	switch {
	case !found:
		return false, invalid(op, model, "unknown field %q", field)
	case !c.Field.Unique && !c.Field.Primary:
		return false, invalid(op, model, "field %q is not unique: a key must choose one row", field)
	case len(writes) == 0:
		return false, invalid(op, model, "no writes")
	}
	ai, native := db.native.(driver.AllIncrementer)
	if !native {
		return false, wrap(op, model, driver.ErrNoAll)
	}
	dw := make([]driver.RowWrite, len(writes))
	for i, w := range writes {
		key, err := whereValue(c.Field, Eq(field, w.Key))
		if err != nil {
			return false, invalid(op, model, "key %v: %v", w.Key, err)
		}
		for j := range i {
			if reflect.DeepEqual(dw[j].Key, key) {
				return false, invalid(op, model, "key %v is written twice (writes %d and %d): each write chooses a row of its own", w.Key, j, i)
			}
		}
		dw[i] = driver.RowWrite{Key: key, Optional: w.Optional, Cases: make([]driver.WriteCase, len(w.Cases))}
		for j, cs := range w.Cases {
			_, where, err := db.prepareInto(op, model, cs.Where, nil)
			if err != nil {
				return false, err
			}
			if len(cs.Increment) == 0 && len(cs.Set) == 0 {
				return false, invalid(op, model, "case %d of key %v: nothing to do: Increment and Set are both empty", j, w.Key)
			}
			inc, set, err := db.writeInto(op, t, cs, nil, nil)
			if err != nil {
				return false, err
			}
			dw[i].Cases[j] = driver.WriteCase{Where: where, Inc: inc, Set: set}
		}
	}
	ok, err = ai.IncrementAll(ctx, t, c.Name, dw)
	if err != nil {
		return false, wrap(op, model, err)
	}
	for i := range writes {
		writes[i].Row, writes[i].Case = nil, dw[i].Case
		if dw[i].Row != nil {
			if writes[i].Row, err = db.convertRow(t, dw[i].Row); err != nil {
				return false, wrap(op, model, err)
			}
		}
	}
	return ok, nil
}
