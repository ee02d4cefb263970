package driver

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Record is a row as an adapter returns it: physical column name → value in
// whatever form the driver produced (int32, []byte, a time as text, ...).
// core.DB converts it into a typed core.Row keyed by logical field names.
type Record map[string]any

// Assignment sets a column to a value.
type Assignment struct {
	Column string
	Value  any
}

// Delta adds By to a column, in the database: column = column + By.
type Delta struct {
	Column string
	By     int64
}

// FindOptions orders and pages [Adapter.FindMany]. SortBy is a column
// name; without it rows come in primary-key order.
type FindOptions struct {
	Limit  int // 0 means no limit
	Offset int
	SortBy string
	Desc   bool
}

// Adapter is the contract every storage implements. core.DB validates and
// normalises every request before an adapter sees it: names are physical,
// values are int64, string, bool, UTC time.Time truncated to the millisecond,
// or nil, and where clauses are well formed. The where clauses are joined by
// AND; an empty list matches every row.
//
// Errors: a unique-key violation must satisfy errors.Is(err, ErrConflict);
// anything else is passed through, wrapped once by DB.
type Adapter interface {
	// Create inserts one row and returns it as stored, with its primary key.
	// Columns left out take the database's defaults.
	Create(ctx context.Context, t *Table, values []Assignment) (Record, error)
	// FindOne returns the first matching row in primary-key order, or nil.
	FindOne(ctx context.Context, t *Table, where []Where) (Record, error)
	// FindMany returns the matching rows.
	FindMany(ctx context.Context, t *Table, where []Where, opts FindOptions) ([]Record, error)
	// Update sets columns on at most one matching row and returns it as
	// stored after the write, or nil when nothing matched.
	Update(ctx context.Context, t *Table, where []Where, set []Assignment) (Record, error)
	// UpdateMany sets columns on every matching row and returns how many rows
	// matched (not how many changed: on MySQL without clientFoundRows the
	// driver reports changed rows, and the adapter must make up for it).
	UpdateMany(ctx context.Context, t *Table, where []Where, set []Assignment) (int64, error)
	// Delete removes at most one matching row and reports whether it did.
	Delete(ctx context.Context, t *Table, where []Where) (bool, error)
	// DeleteMany removes every matching row and returns how many.
	DeleteMany(ctx context.Context, t *Table, where []Where) (int64, error)
	// Count returns the number of matching rows.
	Count(ctx context.Context, t *Table, where []Where) (int64, error)
}

// Incrementer is implemented by adapters with a native IncrementOne.
//
// IncrementOne applies every delta (column = column + By, computed by the
// database; NULL stays NULL) and every assignment to at most one row, chosen
// by where, in one atomic write during which where still holds: a concurrent
// change to that row re-evaluates the guard. It returns the row as stored
// after the write, or nil when the guard selected nothing. When several rows
// match, exactly one changes.
//
// When an adapter does not implement Incrementer, core.DB emulates IncrementOne
// with the adapter's [Transactor]: read one matching row, then update it by
// primary key, guarded on the original where plus each incremented column
// equal to the value read. A lost race rolls back and retries after a random
// pause (full jitter, the cap doubling from 1 ms up to 32 ms), for at most
// 100 transactions in all, then fails with [ErrContention]:
// one call pauses for at most about 3 s (1+2+4+8+16 ms, then 32 ms) on top of its
// transactions, enough for a loser to outlast a burst of 64 callers on one
// row. The context cuts it short: no pause or new attempt outlasts ctx, and
// a call that ctx ends returns ctx's error, not ErrContention. An adapter
// with neither interface is refused by core.New.
type Incrementer interface {
	IncrementOne(ctx context.Context, t *Table, where []Where, inc []Delta, set []Assignment) (Record, error)
}

// Transactor is implemented by adapters that can run a function in a
// transaction. fn receives an adapter bound to the transaction; if fn
// returns an error the transaction rolls back and Transaction returns it.
// The transaction adapter may implement [Incrementer] too.
//
// Without Transactor, core.DB.InTx fails with [ErrUnsupported] and
// IncrementOne needs a native [Incrementer].
type Transactor interface {
	Transaction(ctx context.Context, fn func(ctx context.Context, tx Adapter) error) error
}

// Unwrapper is implemented by adapters that wrap an ORM object, to give
// callers an escape hatch to it: a *gorm.DB, a bun.IDB, an ent dialect.Driver.
type Unwrapper interface {
	Unwrap() any
}

// SchemaChecker is implemented by adapters that can inspect the tables they
// run on. CheckSchema reports, naming what is missing, when t lacks what
// exact decisions depend on: the table itself or one of its columns, a
// unique index on each field the schema marks
// Unique (without it, two concurrent first requests can each insert a
// counter for the same key), or a comparison that ignores trailing spaces
// on such a field (then two keys share one row). core.DB.CheckSchema runs it;
// adapters without it are taken as sound.
type SchemaChecker interface {
	CheckSchema(ctx context.Context, t *Table) error
}

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
// false when the guard selected nothing. core.DB calls it only with
// inc.By != 0 and a non-nullable column.
//
// ValueIncrementSaves reports whether IncrementValue takes fewer round
// trips than IncrementOne on the adapter's connection (the SQL engine: on
// MySQL, one statement instead of a transaction when the driver reports
// last insert ids; on PostgreSQL and SQLite no, both are one statement,
// though IncrementValue returns one column instead of the row). It is what
// core.DB.NativeValueIncrement reports, by which callers choose a path that
// trades a read for fewer round trips.
type ValueIncrementer interface {
	IncrementValue(ctx context.Context, t *Table, where []Where, inc Delta, set []Assignment) (value int64, ok bool, err error)
	ValueIncrementSaves() bool
}

// RecordOwner is implemented by an adapter whose records are new maps that
// nothing else refers to once returned, such as maps made for each row it
// reads. core.DB then turns each record into its core.Row in place, keyed by
// field names and typed, instead of copying it into a new map. An adapter
// that hands out maps it keeps (a cache, an in-memory table) must not
// implement it, or must return false.
type RecordOwner interface {
	// RecordsOwned reports whether every record the adapter returns is the
	// caller's to modify.
	RecordsOwned() bool
}

// TableCreator is implemented by adapters that can create the tables they
// run on. CreateTables creates those of tables that are missing, each
// with every index its fields declare (Unique, Index). It
// leaves existing tables alone: it never alters or drops one, nor adds an
// index to one, so a table made by other DDL keeps its shape and its rows
// (core.DB.CreateTables reports what such a table lacks). It is safe to call
// at every start and from several processes at once: a process that finds
// a table created by another since it looked counts it as created.
type TableCreator interface {
	CreateTables(ctx context.Context, tables []*Table) error
}

// TxBinder is implemented by adapters that can run on a transaction the
// caller began with the adapter's own ORM and ends themselves: a *sql.Tx,
// a *gorm.DB in a transaction, a bun.Tx, an ent transaction, a pgx.Tx.
// core.DB.WithTx calls it.
//
// BindTx returns an adapter bound to tx, of the same engine as the
// receiver (dialect, statement cache), that never commits or rolls tx back
// and whose [Transactor], when it has one, opens savepoints in tx. It
// refuses, with an error wrapping [ErrInvalid] and before any statement,
// a nil handle, a handle of a type it does not take, and one it can tell
// is not a transaction of the receiver's database without a round trip.
// A handle already committed or rolled back is told by its first
// statement, which fails wrapping ErrInvalid too.
type TxBinder interface {
	BindTx(tx any) (Adapter, error)
}

// LockingFinder is implemented by adapters that can read a row and lock
// it in one statement (SELECT … FOR UPDATE). core.DB.FindOneForUpdate
// calls it on a DB bound to a transaction.
//
// FindOneForUpdate returns the first matching row in primary-key order,
// or nil, as FindOne does. Inside a transaction it locks the row until
// the transaction ends and reads its latest committed version, waiting
// for a concurrent writer to end, where a plain read may answer from the
// transaction's snapshot (MySQL's REPEATABLE READ). Outside one, and on a
// database whose transactions already hold the whole database (SQLite),
// it is FindOne.
type LockingFinder interface {
	FindOneForUpdate(ctx context.Context, t *Table, where []Where) (Record, error)
}

// PairIncrementer is implemented by adapters that can run an IncrementOne
// whose one delta is on a non-nullable integer column and answer, in one
// statement, that column's value after the write and a second integer
// column's value, which the write leaves as it is, instead of the whole
// row (core.DB.IncrementPair).
//
// The write has IncrementOne's contract (see [Incrementer]) for where and
// the delta inc. core.DB has already added to where the guards that b
// states (0 ≤ inc.Column + inc.By ≤ b.ValueMax, b.Min ≤ b.Column ≤ b.Max),
// so an adapter may rely on both values lying in their ranges: on MySQL
// and MariaDB, which have no UPDATE … RETURNING, the SQL engine packs the
// two into the one integer LAST_INSERT_ID(expr) reports. An adapter that
// cannot answer this request in one statement returns [ErrNoPair] having
// written nothing, and core.DB runs IncrementOne instead.
type PairIncrementer interface {
	IncrementPair(ctx context.Context, t *Table, where []Where, inc Delta, b PairBounds) (value, other int64, ok bool, err error)
}

// PairBounds bounds an IncrementPair: the incremented column's value after
// the write lies in [0, ValueMax], and Column, the other column answered,
// holds a value in [Min, Max].
type PairBounds struct {
	Column   string
	Min, Max int64
	ValueMax int64
}

// ErrNoPair is what a [PairIncrementer] returns for a request it cannot
// answer in one statement (for the SQL engine on MySQL: ranges too wide to
// pack into one integer, or an executor whose results carry no last insert
// id). Nothing was written.
var ErrNoPair = errors.New("driver: the pair increment needs more than one statement here")

// PolicyApplier is an optional [SecondaryStorage] capability for the rate
// limiter's policies (several rules on one key, all or nothing): apply
// several steps on several keys in one atomic step, all of them or none.
// adapters/redis runs them in one Lua script and core/memory under its
// locks. Without it the rate limiter refuses policies on that storage.
//
// Each step is a bounded increment ([BoundedIncrementer]: By, Max, TTL)
// or, with TAT set, a TAT advance ([TATAdvancer]: Now, By as the
// increment, Max as the limit). A step fits when it would succeed alone.
// When every step that is not Optional fits, ApplyPolicy applies each
// step that fits (every required one, and the optional ones that fit) and
// ok is true; otherwise it changes nothing and ok is false. Either way it
// reports, in each step, whether it fits and the counter as it was before
// the call: Value (0 when absent; for a TAT step, the stored TAT) and
// TTL (0 when absent or without expiry).
//
// The keys of one call must be able to meet in one atomic step: on Redis
// Cluster, in one slot; the rate limiter's keys of one policy share a hash
// tag ({key}).
type PolicyApplier interface {
	ApplyPolicy(ctx context.Context, steps []PolicyStep) (ok bool, err error)
}

// PolicyStep is one step of [PolicyApplier.ApplyPolicy]: its input, and
// what the call reports.
type PolicyStep struct {
	Key string
	// TAT makes the step a TAT advance; otherwise it is a bounded increment.
	TAT bool
	// By is the increment; Max the bound (a TAT step's limit).
	By, Max int64
	// TTL is a new counter's expiry (bounded increments; positive).
	TTL time.Duration
	// Now is the caller's clock in epoch milliseconds (TAT steps).
	Now int64
	// Optional steps (a shadow rule's) are applied when they fit and the
	// others do; not fitting fails nothing.
	Optional bool

	// Fits, Value and TTLLeft are what the call reports.
	Fits    bool
	Value   int64
	TTLLeft time.Duration
}

// SecondaryStorage is a key-value store with expiry, such as Redis, used by
// the rate limiter and the API-key verifier as an alternative to the
// database. Implementations: core/memory (in process) and adapters/redis.
type SecondaryStorage interface {
	// Get returns the value at key and ok == false when there is none.
	Get(ctx context.Context, key string) (value string, ok bool, err error)
	// Set stores value at key; ttl 0 means no expiry.
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Increment adds by to the counter at key in one atomic step. When the
	// counter does not exist it is created with value by and expiry ttl;
	// an existing counter's expiry is never extended (a fixed window).
	// ttl must be positive.
	Increment(ctx context.Context, key string, by int64, ttl time.Duration) (Counter, error)
}

// Counter is a secondary-storage counter after an increment.
type Counter struct {
	Value int64         // the value after the increment
	TTL   time.Duration // time left before the counter expires
}

// BoundedIncrementer is an optional [SecondaryStorage] capability: add by
// only when the result stays at or below max, in one atomic step, so that a
// denied request leaves the counter as it was. ok is false when it would not
// fit; c then holds the current, unchanged counter (Value 0 when absent).
//
// Without it the rate limiter uses Increment, and a denied request still
// counts until the window ends.
type BoundedIncrementer interface {
	IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (c Counter, ok bool, err error)
}

// TATAdvancer is an optional [SecondaryStorage] capability for the rate
// limiter's GCRA mode: advance the theoretical arrival time (TAT) stored
// at key, in one atomic step. Times are epoch milliseconds of the caller's
// clock, passed as now; the storage's own clock only runs the expiry.
//
// Let t be the stored TAT, or now when there is none or it is earlier.
// When t + increment − now ≤ limit, the TAT becomes t + increment and ok
// is true; otherwise nothing changes and ok is false. tat is the TAT after
// the call (t when refused). A written key expires t + increment − now
// after the call, when its TAT is reached: a TAT at or before now means
// the same as none. An increment of 0 writes nothing and reads t, with ok
// reporting t − now ≤ limit. now, increment and limit must not be
// negative; Redis computes in doubles, so keep them below 2^51.
//
// Without it the rate limiter refuses GCRA on that storage.
type TATAdvancer interface {
	AdvanceTAT(ctx context.Context, key string, now, increment, limit int64) (tat int64, ok bool, err error)
}

// FieldType is the logical type of a field. Each adapter and the generator
// map it to a column type of its dialect.
type FieldType uint8

// The field types. Integers are int64 everywhere; times are instants stored
// in UTC with millisecond precision (timestamptz on PostgreSQL, DATETIME(3) on
// MySQL, fixed-width ISO-8601 text on SQLite, see [FormatTime]).
const (
	TypeString FieldType = iota + 1
	TypeInt
	TypeBool
	TypeTime
)

var typeNames = [...]string{"", "string", "int", "bool", "time"}

// String returns "string", "int", "bool" or "time".
func (t FieldType) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "FieldType(?)"
}

// Field describes one field of a model.
type Field struct {
	Name     string    // logical name, such as "lastRequest"
	Type     FieldType //
	Primary  bool      // the auto-incrementing integer primary key
	Nullable bool      // the column accepts NULL
	Default  any       // value used by Create when the caller gives none; nil for none
	Unique   bool      // a unique index on this column alone
	Index    bool      // a plain index on this column alone
	Size     int       // for strings: the VARCHAR length where the dialect needs one (indexed strings); 0 for unbounded text
	Comment  string    // what the field holds, for generated code
}

// Column is one field of a [Table] with its physical name.
type Column struct {
	Name  string // physical column name
	Field Field  // logical description
}

// Table is a model resolved to physical names. Adapters receive it with every
// call; it is immutable and safe to share.
type Table struct {
	Name    string   // physical table name
	Model   string   // logical model name
	Columns []Column // in model order; Columns[0] is the primary key
	Comment string
	// Optional is the model's Optional: a database may lack the table.
	Optional bool

	byField  map[string]int
	byColumn map[string]int
}

// NewTable returns t ready for use: its columns indexed by field and by
// name. core.Schema makes every table an adapter receives; adapters and
// tests need NewTable only for tables of their own.
func NewTable(t Table) *Table {
	t.byField = make(map[string]int, len(t.Columns))
	t.byColumn = make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		t.byField[c.Field.Name] = i
		t.byColumn[c.Name] = i
	}
	return &t
}

// Column returns the column of a logical field.
func (t *Table) Column(field string) (Column, bool) {
	i, ok := t.byField[field]
	if !ok {
		return Column{}, false
	}
	return t.Columns[i], true
}

// ColumnByName returns the column with a physical name.
func (t *Table) ColumnByName(name string) (Column, bool) {
	i, ok := t.byColumn[name]
	if !ok {
		return Column{}, false
	}
	return t.Columns[i], true
}

// PrimaryKey returns the primary-key column.
func (t *Table) PrimaryKey() Column { return t.Columns[0] }

// SelectsOne reports whether where pins at most one row by itself: an equality with a non-nil value
// on the primary key or a unique column. Such a guard needs no "first
// matching row" subquery to change at most one row.
func (t *Table) SelectsOne(where []Where) bool {
	for _, w := range where {
		if w.Op != OpEq || w.Value == nil {
			continue
		}
		if i, ok := t.byColumn[w.Column]; ok && (t.Columns[i].Field.Primary || t.Columns[i].Field.Unique) {
			return true
		}
	}
	return false
}

// ColumnNames returns the physical column names in model order.
func (t *Table) ColumnNames() []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Op is the comparison of a [Where] clause.
type Op uint8

// The operators a where clause may use. Comparisons follow SQL: a NULL column
// satisfies none of them, except OpEq with a nil value (IS NULL) and OpNe with
// a nil value (IS NOT NULL).
const (
	OpEq    Op = iota + 1 // field = value; IS NULL when value is nil
	OpNe                  // field <> value; IS NOT NULL when value is nil
	OpLt                  // field < value
	OpLte                 // field <= value
	OpGt                  // field > value
	OpGte                 // field >= value
	OpIn                  // field IN (values...)
	OpNotIn               // field NOT IN (values...)
)

var opNames = [...]string{"", "eq", "ne", "lt", "lte", "gt", "gte", "in", "not in"}

// String returns the operator's short name, such as "lte".
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Where is one condition on a column, as an adapter receives it: Column is
// the physical column name and Value is normalised (integers are int64,
// times are UTC truncated to the millisecond, and the value of OpIn and
// OpNotIn is a non-empty []any without nils). An adapter joins a request's
// clauses by AND; an empty list matches every row.
type Where struct {
	Column string
	Op     Op
	Value  any
}

// RoundTrips counts the round trips storages make on behalf of one
// context: the statements a SQL adapter sends (BEGIN and COMMIT included),
// the commands or scripts a key-value store runs. The rate limiter and
// the API-key verifier use it to report each decision's round trips to an
// observer; see [WithRoundTrips].
//
// It also counts the conflicts the storage retried for that context
// (deadlock victims, Galera certification failures, serialization
// failures: [RoundTrips.Retries]) and, under route.New, which node of the
// cluster answered last ([RoundTrips.Node]).
type RoundTrips struct {
	n, retries atomic.Int64
	node       atomic.Int64 // the node's index + 1; 0 for none
}

// Retries returns how many conflicts were retried so far.
func (r *RoundTrips) Retries() int64 {
	if r == nil {
		return 0
	}
	return r.retries.Load()
}

// Node returns the index (in route.New's order) of the cluster node that
// answered the last call, or -1 when no router chose one.
func (r *RoundTrips) Node() int {
	if r == nil {
		return -1
	}
	return int(r.node.Load()) - 1
}

// AddRetries is for adapter authors: call it once per statement or
// transaction retried under ctx because the database aborted it for a
// concurrent writer. It does nothing unless ctx comes from [WithRoundTrips].
func AddRetries(ctx context.Context, n int64) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.retries.Add(n)
	}
}

// SetNode records that node i of a cluster answers the call under ctx
// (route.New calls it). It does nothing unless ctx comes from
// [WithRoundTrips].
func SetNode(ctx context.Context, i int) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.node.Store(int64(i) + 1)
	}
}

// Count returns the round trips counted so far.
func (r *RoundTrips) Count() int64 {
	if r == nil {
		return 0
	}
	return r.n.Load()
}

type roundTripsKey struct{}

// WithRoundTrips returns a context under which adapters count their round
// trips into the returned counter, and the counter. Without it, counting
// costs a context lookup and nothing else.
func WithRoundTrips(ctx context.Context) (context.Context, *RoundTrips) {
	r := new(RoundTrips)
	return context.WithValue(ctx, roundTripsKey{}, r), r
}

// AddRoundTrips is for adapter authors: call it once per statement,
// command or script sent to the server under ctx. It does nothing unless
// ctx comes from [WithRoundTrips].
func AddRoundTrips(ctx context.Context, n int64) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.n.Add(n)
	}
}
