package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/core/driver"
)

// DB is the portable handle that users and the algorithms call, as
// database/sql.DB wraps a driver. It validates requests before any I/O, maps
// logical names to physical ones, runs IncrementOne natively or through the
// transaction fallback, converts returned values, and wraps adapter errors
// once. A DB is safe for concurrent use.
type DB struct {
	adapter driver.Adapter
	schema  *Schema
	native  driver.Incrementer // nil: use the fallback
	// value answers IncrementValue when IncrementOne is native (nil: read
	// the field from IncrementOne's row), and cheapValue is whether it
	// takes fewer round trips than IncrementOne: both read once, where
	// the adapter is wrapped (New, bind), as the one answer to "can this
	// adapter return the value cheaply?".
	value      driver.ValueIncrementer
	cheapValue bool
	txr        driver.Transactor // nil: no transactions
	inTx       bool              // bound to a transaction (made by InTx or WithTx)
	root       *DB               // the DB a bound one derives from; nil for a root
	owned      bool              // the adapter's records are DB's to reuse (driver.RecordOwner)
	// ended is set once the transaction of InTx that made this DB has
	// ended: every later call is refused before it reaches the adapter
	// (nil: not made by InTx).
	ended *atomic.Bool
}

// ownsRecords reports whether a's records are DB's to reuse.
func ownsRecords(a driver.Adapter) bool {
	o, ok := a.(driver.RecordOwner)
	return ok && o.RecordsOwned()
}

type options struct {
	naming       Naming
	schema       *Schema
	forceFallbck bool
}

// Option configures [New].
type Option func(*options)

// WithNaming sets how logical names map to tables and columns (default:
// snake_case, singular).
func WithNaming(n Naming) Option { return func(o *options) { o.naming = n } }

// WithSchema uses a schema built with [NewSchema], for example one with
// extra models. It takes precedence over WithNaming.
func WithSchema(s *Schema) Option { return func(o *options) { o.schema = s } }

// WithFallback makes IncrementOne use the transaction fallback even when the
// adapter has a native one: for tests and comparisons.
func WithFallback() Option { return func(o *options) { o.forceFallbck = true } }

// New wraps an adapter. It fails with [ErrUnsupported] when the adapter has
// neither a native IncrementOne nor transactions for the fallback, and with
// [ErrInvalid] when the naming is invalid.
func New(a driver.Adapter, opts ...Option) (*DB, error) {
	if a == nil {
		return nil, invalid("New", "", "nil adapter")
	}
	if rv := reflect.ValueOf(a); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, invalid("New", "", "nil adapter (a typed nil %T)", a)
	}
	var o options
	for i, opt := range opts {
		if opt == nil {
			return nil, invalid("New", "", "option %d is nil", i)
		}
		opt(&o)
	}
	s := o.schema
	if s == nil {
		var err error
		if s, err = NewSchema(o.naming); err != nil {
			return nil, err
		}
	}
	db := &DB{adapter: a, schema: s, owned: ownsRecords(a)}
	db.txr, _ = a.(driver.Transactor)
	if inc, ok := a.(driver.Incrementer); ok && !o.forceFallbck {
		db.native = inc
	}
	db.value, db.cheapValue = valueIncrementer(db.native, a)
	if db.native == nil && db.txr == nil {
		return nil, &Error{Op: "New", Kind: ErrUnsupported,
			Err: fmt.Errorf("adapter %T implements neither IncrementOne nor Transaction, so IncrementOne cannot be made atomic", a)}
	}
	return db, nil
}

// Schema returns the resolved schema; nil for a DB not made by [New].
func (db *DB) Schema() *Schema {
	if db == nil {
		return nil
	}
	return db.schema
}

// Adapter returns the wrapped adapter; use [driver.Unwrapper] on it to reach the
// ORM. It is nil for a DB not made by [New].
func (db *DB) Adapter() driver.Adapter {
	if db == nil {
		return nil
	}
	return db.adapter
}

// NativeIncrement reports whether IncrementOne runs natively rather than
// through the transaction fallback.
func (db *DB) NativeIncrement() bool { return db != nil && db.native != nil }

// initialised refuses a nil or zero DB (one not made by [New]), which has
// neither an adapter nor a schema to work with, with an error instead of
// a nil-pointer panic.
func (db *DB) initialised(op, model string) error {
	if db == nil || db.adapter == nil || db.schema == nil {
		return invalid(op, model, "the DB is not initialised: make it with core.New or an adapter's Open")
	}
	if db.ended != nil && db.ended.Load() {
		return invalid(op, model, "the transaction this DB was bound to by InTx has ended (committed or rolled back): use the tx of a live InTx")
	}
	return nil
}

// IncrementRequest is the input of [DB.IncrementOne].
type IncrementRequest struct {
	Model     string           // logical model name
	Where     []Where          // selector and guard, joined by AND
	Increment map[string]int64 // field → delta, applied in the database
	Set       map[string]any   // field → absolute value
	// Returning, when not empty, names the only fields the caller reads
	// from the row returned: an adapter that can answer with fewer
	// columns (driver.ReturningIncrementer) returns these, and the
	// returned Row may lack the others.
	Returning []string
}

// IncrementOne applies req's deltas and assignments to at most one row,
// chosen by req.Where, in one atomic write during which req.Where still
// holds. It returns the row as stored after the write and ok == true, or
// ok == false when the guard selected nothing: no match is not an error.
// See [driver.Incrementer] for the contract and the fallback.
func (db *DB) IncrementOne(ctx context.Context, req IncrementRequest) (row Row, ok bool, err error) {
	const op = "IncrementOne"
	// The mapped request of a usual size (the where clauses, deltas and
	// assignments the adapter receives) lives in a pooled buffer, reused
	// once IncrementOne returns: an adapter keeps no slice DB passes it
	// beyond the call.
	s := incBuffers.Get().(*incBuffer)
	defer s.release()
	t, where, err := db.prepareInto(op, req.Model, req.Where, s.where[:0])
	if err != nil {
		return nil, false, err
	}
	if len(req.Increment) == 0 && len(req.Set) == 0 {
		return nil, false, invalid(op, req.Model, "nothing to do: Increment and Set are both empty")
	}
	inc, set, err := db.writeInto(op, t, req, s.inc[:0], s.set[:0])
	if err != nil {
		return nil, false, err
	}
	for _, f := range req.Returning {
		if _, ok := t.Column(f); !ok {
			return nil, false, invalid(op, req.Model, "unknown field %q in Returning", f)
		}
	}
	var rec driver.Record
	r, narrow := db.native.(driver.ReturningIncrementer)
	switch {
	case narrow && len(req.Returning) > 0:
		rec, err = r.IncrementReturning(ctx, t, where, inc, set, req.Returning)
	case db.native != nil:
		rec, err = db.native.IncrementOne(ctx, t, where, inc, set)
	default:
		rec, err = db.fallbackIncrement(ctx, t, where, inc, set)
	}
	return db.result(op, t, rec, err)
}

// writeInto maps req's deltas and assignments (fields of t's model) into
// inc and set, in the order of their fields.
func (db *DB) writeInto(op string, t *driver.Table, req IncrementRequest, inc []driver.Delta, set []driver.Assignment) ([]driver.Delta, []driver.Assignment, error) {
	var buf [8]string
	for _, field := range sortedKeys(req.Increment, buf[:0]) {
		c, ok := t.Column(field)
		if !ok {
			return nil, nil, invalid(op, t.Model, "unknown field %q in Increment", field)
		}
		if c.Field.Type != driver.TypeInt || c.Field.Primary {
			return nil, nil, invalid(op, t.Model, "field %q cannot be incremented: only non-key int fields can", field)
		}
		if _, both := req.Set[field]; both {
			return nil, nil, invalid(op, t.Model, "field %q is in both Increment and Set", field)
		}
		inc = append(inc, driver.Delta{Column: c.Name, By: req.Increment[field]})
	}
	set, err := db.assignmentsInto(op, t, req.Set, set)
	return inc, set, err
}

// incBuffer holds IncrementOne's mapped request of a usual size.
type incBuffer struct {
	where [20]driver.Where // an API-key verification's guard has up to 18
	inc   [2]driver.Delta
	set   [6]driver.Assignment
}

var incBuffers = sync.Pool{New: func() any { return new(incBuffer) }}

// release clears the buffer, so that the pool holds no caller's values,
// and returns it to the pool.
func (s *incBuffer) release() {
	*s = incBuffer{}
	incBuffers.Put(s)
}

// Create inserts a row. Fields left out take the schema's defaults; a
// non-nullable field without a default must be given. A duplicate unique
// key fails with [ErrConflict].
func (db *DB) Create(ctx context.Context, model string, values map[string]any) (Row, error) {
	const op = "Create"
	t, _, err := db.prepare(op, model, nil)
	if err != nil {
		return nil, err
	}
	set, err := db.assignments(op, t, values)
	if err != nil {
		return nil, err
	}
	for _, c := range t.Columns {
		if _, given := values[c.Field.Name]; given || c.Field.Primary {
			continue
		}
		if c.Field.Default == nil {
			if !c.Field.Nullable {
				return nil, invalid(op, model, "field %q is required", c.Field.Name)
			}
			continue
		}
		v, err := toStorage(c.Field, c.Field.Default) // checked by NewSchema
		if err != nil {
			return nil, invalid(op, model, "default of %v", err)
		}
		set = append(set, driver.Assignment{Column: c.Name, Value: v})
	}
	rec, err := db.adapter.Create(ctx, t, set)
	row, _, err := db.result(op, t, rec, err)
	if err == nil && row == nil {
		err = &Error{Op: op, Model: model, Err: errors.New("adapter returned no row")}
	}
	return row, err
}

// FindOne returns the first row matching where, in primary-key order, and
// ok == false when there is none.
func (db *DB) FindOne(ctx context.Context, model string, where ...Where) (Row, bool, error) {
	const op = "FindOne"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return nil, false, err
	}
	rec, err := db.adapter.FindOne(ctx, t, w)
	return db.result(op, t, rec, err)
}

// FindMany returns the rows matching where; opts may be nil.
func (db *DB) FindMany(ctx context.Context, model string, where []Where, opts *FindOptions) ([]Row, error) {
	const op = "FindMany"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return nil, err
	}
	var o driver.FindOptions
	if opts != nil {
		o = driver.FindOptions{Limit: opts.Limit, Offset: opts.Offset, SortBy: opts.SortBy, Desc: opts.Desc}
		if o.Limit < 0 || o.Offset < 0 {
			return nil, invalid(op, model, "negative limit or offset")
		}
		if o.SortBy != "" {
			c, ok := t.Column(o.SortBy)
			if !ok {
				return nil, invalid(op, model, "unknown sort field %q", o.SortBy)
			}
			o.SortBy = c.Name
		}
	}
	recs, err := db.adapter.FindMany(ctx, t, w, o)
	if err != nil {
		return nil, wrap(op, model, err)
	}
	rows := make([]Row, 0, len(recs))
	for _, rec := range recs {
		row, err := db.convertRow(t, rec)
		if err != nil {
			return nil, wrap(op, model, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Update sets fields on at most one row matching where and returns it as
// stored after the write, or ok == false when nothing matched.
func (db *DB) Update(ctx context.Context, model string, where []Where, set map[string]any) (Row, bool, error) {
	const op = "Update"
	t, w, a, err := db.prepareSet(op, model, where, set)
	if err != nil {
		return nil, false, err
	}
	rec, err := db.adapter.Update(ctx, t, w, a)
	return db.result(op, t, rec, err)
}

// UpdateMany sets fields on every row matching where and returns how many matched.
func (db *DB) UpdateMany(ctx context.Context, model string, where []Where, set map[string]any) (int64, error) {
	const op = "UpdateMany"
	t, w, a, err := db.prepareSet(op, model, where, set)
	if err != nil {
		return 0, err
	}
	n, err := db.adapter.UpdateMany(ctx, t, w, a)
	return n, wrap(op, model, err)
}

// Delete removes at most one row matching where and reports whether it did.
func (db *DB) Delete(ctx context.Context, model string, where ...Where) (bool, error) {
	const op = "Delete"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return false, err
	}
	ok, err := db.adapter.Delete(ctx, t, w)
	return ok, wrap(op, model, err)
}

// DeleteMany removes every row matching where and returns how many.
func (db *DB) DeleteMany(ctx context.Context, model string, where ...Where) (int64, error) {
	const op = "DeleteMany"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return 0, err
	}
	n, err := db.adapter.DeleteMany(ctx, t, w)
	return n, wrap(op, model, err)
}

// Count returns the number of rows matching where.
func (db *DB) Count(ctx context.Context, model string, where ...Where) (int64, error) {
	const op = "Count"
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return 0, err
	}
	n, err := db.adapter.Count(ctx, t, w)
	return n, wrap(op, model, err)
}

// InTx runs fn in a transaction: fn's tx is a DB bound to it, and an error
// from fn rolls back. Once InTx returns, tx is refused by every call with
// an error wrapping [ErrInvalid], before the adapter sees it: a handle kept
// past its transaction never writes, on any adapter. Without a
// [driver.Transactor] it fails with [ErrUnsupported].
// On a tx DB it opens a nested transaction (a savepoint) through the
// transaction adapter's own Transactor, so an error from the inner fn rolls
// back the inner writes only; a transaction adapter without one fails with
// [ErrUnsupported] rather than run fn without a way to undo it.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx *DB) error) error {
	if err := db.initialised("InTx", ""); err != nil {
		return err
	}
	if db.txr == nil {
		return &Error{Op: "InTx", Kind: ErrUnsupported, Err: fmt.Errorf("adapter %T has no transactions", db.adapter)}
	}
	if _, flat := db.txr.(sameTx); flat {
		return &Error{Op: "InTx", Kind: ErrUnsupported, Err: fmt.Errorf("transaction adapter %T has no nested transactions (driver.Transactor), so an error from fn could not roll back fn's writes alone", db.adapter)}
	}
	// A tx kept past the transaction's end is refused by every call, with
	// ErrInvalid, whatever the adapter answers on an ended transaction.
	ended := new(atomic.Bool)
	defer ended.Store(true)
	return wrap("InTx", "", db.txr.Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		b := db.bind(tx)
		b.ended = ended
		return fn(ctx, b)
	}))
}

// bind returns a DB on a transaction adapter. Its transactions nest through
// the transaction adapter's own Transactor (savepoints) when it has one;
// otherwise the fallback runs directly in the transaction, whose guarded
// write never needs undoing, and InTx refuses to nest.
func (db *DB) bind(tx driver.Adapter) *DB {
	inner := &DB{adapter: tx, schema: db.schema, txr: sameTx{tx}, inTx: true, owned: ownsRecords(tx), root: db.Root()}
	if nested, ok := tx.(driver.Transactor); ok {
		inner.txr = nested
	}
	if db.native != nil {
		inner.native, _ = tx.(driver.Incrementer)
	}
	// The transaction adapter runs on the wrapped adapter's connection:
	// whether the value is cheap was decided when that was wrapped.
	if inner.value, _ = valueIncrementer(inner.native, tx); inner.value != nil {
		inner.cheapValue = db.cheapValue
	}
	return inner
}

// sameTx runs the fallback's attempts in the transaction already open.
type sameTx struct{ tx driver.Adapter }

func (s sameTx) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return fn(ctx, s.tx)
}

// prepare resolves the model and validates and maps the where clauses.
func (db *DB) prepare(op, model string, where []Where) (*driver.Table, []driver.Where, error) {
	return db.prepareInto(op, model, where, make([]driver.Where, 0, len(where)))
}

// table returns the resolved table of a logical model: Schema.Table, read
// here, where every request looks it up.
func (db *DB) table(model string) (*driver.Table, bool) {
	t, ok := db.schema.byName[model]
	return t, ok
}

// prepareInto is prepare appending the mapped clauses to out.
func (db *DB) prepareInto(op, model string, where []Where, out []driver.Where) (*driver.Table, []driver.Where, error) {
	if err := db.initialised(op, model); err != nil {
		return nil, nil, err
	}
	t, ok := db.table(model)
	if !ok {
		return nil, nil, invalid(op, model, "unknown model %q", model)
	}
	for _, w := range where {
		c, ok := t.Column(w.Field)
		if !ok {
			return nil, nil, invalid(op, model, "unknown field %q in where", w.Field)
		}
		v, err := whereValue(c.Field, w)
		if err != nil {
			return nil, nil, invalid(op, model, "where %s %s: %v", w.Field, w.Op, err)
		}
		out = append(out, driver.Where{Column: c.Name, Op: w.Op, Value: v})
	}
	return t, out, nil
}

func (db *DB) prepareSet(op, model string, where []Where, set map[string]any) (*driver.Table, []driver.Where, []driver.Assignment, error) {
	t, w, err := db.prepare(op, model, where)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(set) == 0 {
		return nil, nil, nil, invalid(op, model, "nothing to set")
	}
	a, err := db.assignments(op, t, set)
	return t, w, a, err
}

// whereValue checks that the operator and value fit the field.
func whereValue(f driver.Field, w Where) (any, error) {
	switch w.Op {
	case driver.OpEq, driver.OpNe:
		return toStorage(f, w.Value)
	case driver.OpLt, driver.OpLte, driver.OpGt, driver.OpGte:
		if f.Type == driver.TypeBool {
			return nil, fmt.Errorf("booleans cannot be ordered")
		}
		v, err := toStorage(f, w.Value)
		if err == nil && v == nil {
			err = fmt.Errorf("nil cannot be compared with %s (NULL never matches); use Eq or Ne with nil", w.Op)
		}
		return v, err
	case driver.OpIn, driver.OpNotIn:
		rv := reflect.ValueOf(w.Value)
		if w.Value == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
			return nil, fmt.Errorf("needs a list of values, got %T", w.Value)
		}
		if rv.Len() == 0 {
			return nil, fmt.Errorf("needs at least one value")
		}
		list := make([]any, rv.Len())
		for i := range list {
			v, err := toStorage(f, rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			if v == nil {
				return nil, fmt.Errorf("nil in a list never matches; use Eq or Ne with nil")
			}
			list[i] = v
		}
		return list, nil
	}
	return nil, fmt.Errorf("unknown operator %v", w.Op)
}

// assignments validates and maps absolute values, in a deterministic order.
func (db *DB) assignments(op string, t *driver.Table, values map[string]any) ([]driver.Assignment, error) {
	return db.assignmentsInto(op, t, values, make([]driver.Assignment, 0, len(values)+4))
}

// assignmentsInto is assignments appending to out.
func (db *DB) assignmentsInto(op string, t *driver.Table, values map[string]any, out []driver.Assignment) ([]driver.Assignment, error) {
	var buf [8]string
	for _, field := range sortedKeys(values, buf[:0]) {
		c, ok := t.Column(field)
		if !ok {
			return nil, invalid(op, t.Model, "unknown field %q", field)
		}
		if c.Field.Primary && op != "Create" {
			return nil, invalid(op, t.Model, "the primary key %q cannot be set", field)
		}
		v, err := toStorage(c.Field, values[field])
		if err != nil {
			return nil, invalid(op, t.Model, "%v", err)
		}
		if v == nil && !c.Field.Nullable {
			return nil, invalid(op, t.Model, "field %q cannot be NULL", field)
		}
		out = append(out, driver.Assignment{Column: c.Name, Value: v})
	}
	return out, nil
}

// result converts one adapter record, or nil for no match.
func (db *DB) result(op string, t *driver.Table, rec driver.Record, err error) (Row, bool, error) {
	if err != nil {
		return nil, false, wrap(op, t.Model, err)
	}
	if rec == nil {
		return nil, false, nil
	}
	row, err := db.convertRow(t, rec)
	if err != nil {
		return nil, false, wrap(op, t.Model, err)
	}
	return row, true, nil
}

// convertRow types a record and keys it by field names: in the record
// itself when the adapter hands it over (see [driver.RecordOwner]), in a new Row
// otherwise.
func (db *DB) convertRow(t *driver.Table, rec driver.Record) (Row, error) {
	if db.owned && len(t.Columns) <= maxInPlace {
		return convertInPlace(t, rec)
	}
	row := make(Row, len(t.Columns))
	for _, c := range t.Columns {
		sv, ok := rec[c.Name]
		if !ok && len(rec) < len(t.Columns) {
			continue // a record of some columns (driver.ReturningIncrementer)
		}
		v, err := fromStorage(c.Field, sv)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		row[c.Field.Name] = v
	}
	return row, nil
}

// maxInPlace bounds the columns convertInPlace holds on the stack.
const maxInPlace = 32

// convertInPlace converts every value first, so that a failure leaves rec
// as it was, then rekeys rec: clearing a map keeps its storage, and as
// many entries as it held fit again without allocating.
func convertInPlace(t *driver.Table, rec driver.Record) (Row, error) {
	var (
		buf    [maxInPlace]any
		absent [maxInPlace]bool // not in a record of some columns (driver.ReturningIncrementer)
	)
	vals := buf[:len(t.Columns)]
	some := len(rec) < len(t.Columns)
	for i, c := range t.Columns {
		sv, ok := rec[c.Name]
		if !ok && some {
			absent[i] = true
			continue
		}
		v, err := fromStorage(c.Field, sv)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		vals[i] = v
	}
	clear(rec)
	for i, c := range t.Columns {
		if !absent[i] {
			rec[c.Field.Name] = vals[i]
		}
	}
	return Row(rec), nil
}

// sortedKeys appends m's keys to buf, sorted: with a caller's array as buf
// a small map costs no allocation.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// addChecked adds a delta to a value read for the fallback, refusing
// overflow as an invalid request, as a native IncrementOne must.
func addChecked(cur, by int64) (int64, error) {
	if (by > 0 && cur > math.MaxInt64-by) || (by < 0 && cur < math.MinInt64-by) {
		return 0, fmt.Errorf("%w: %d + %d overflows int64", ErrInvalid, cur, by)
	}
	return cur + by, nil
}

// CheckSchema asks the adapter, when it implements [driver.SchemaChecker], whether
// the tables of the given models (every model of the schema when none is
// named, except the optional ones: see [Model.Optional]) have what exact
// decisions depend on, such as the unique index on a rate-limit key. The rate limiter and the API-key manager run it before
// their first decision; call it at start-up to fail early.
func (db *DB) CheckSchema(ctx context.Context, models ...string) error {
	const op = "CheckSchema"
	if db == nil || db.adapter == nil {
		return invalid(op, "", "the DB is not initialised: make it with core.New or an adapter's Open")
	}
	return db.checkSchema(ctx, op, models)
}

// checkSchema is CheckSchema, its errors named after op.
func (db *DB) checkSchema(ctx context.Context, op string, models []string) error {
	sc, ok := db.adapter.(driver.SchemaChecker)
	if !ok {
		return nil
	}
	if len(models) == 0 {
		for _, m := range db.schema.Models() {
			if t, _ := db.table(m); !t.Optional {
				models = append(models, m)
			}
		}
	}
	for _, m := range models {
		t, ok := db.table(m)
		if !ok {
			return invalid(op, m, "unknown model %q", m)
		}
		if err := sc.CheckSchema(ctx, t); err != nil {
			return wrap(op, m, err)
		}
	}
	return nil
}

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
	if t, ok := db.table(req.Model); ok {
		c, found = t.Column(field)
	}
	if vi == nil || by == 0 || !found || c.Field.Nullable || c.Field.Type != driver.TypeInt || c.Field.Primary {
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
