package driver

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
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

// PairBounds bounds an IncrementPair: the incremented column's value after
// the write lies in [0, ValueMax], and Column, the other column answered,
// holds a value in [Min, Max].
type PairBounds struct {
	Column   string
	Min, Max int64
	ValueMax int64
}

// RowWrite is one row's part of [AllIncrementer.IncrementAll]: its input,
// and what the call reports.
type RowWrite struct {
	Key   any         // the row's value of the unique column
	Cases []WriteCase // the alternatives, in order: the first that holds applies
	// Optional writes are applied when a case holds; none holding fails
	// nothing.
	Optional bool

	// Row and Case are what the call reports.
	Row  Record
	Case int
}

// WriteCase is one alternative of a [RowWrite]: the guard Where, joined by
// AND, and the deltas and assignments applied when it holds.
type WriteCase struct {
	Where []Where
	Inc   []Delta
	Set   []Assignment
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

// Counter is a secondary-storage counter after an increment.
type Counter struct {
	Value int64         // the value after the increment
	TTL   time.Duration // time left before the counter expires
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

// TimeLayout is the fixed-width UTC text form of a time, the same as
// JavaScript's toISOString. Adapters store times in it where the database
// has no time type (SQLite), so that text order is time order and rows
// written by Better Auth compare correctly.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime returns t in UTC, truncated to the millisecond, as [TimeLayout].
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// timeLayouts are the forms in which drivers hand back times as text.
var timeLayouts = []string{
	TimeLayout,
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999-07", // PostgreSQL's text form: +00, not +00:00
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// ParseTime parses a time in any form a driver may return: a time.Time,
// text in one of the usual layouts (no zone means UTC), or an integer of
// epoch milliseconds. The result is in UTC.
func ParseTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case []byte:
		return ParseTime(string(x))
	case string:
		s := strings.TrimSpace(x)
		if layout := layoutOf(s); layout != "" {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC(), nil
			}
		}
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("cannot parse %q as a time", x)
	}
	if n, err := toInt64(v); err == nil {
		return time.UnixMilli(n).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("cannot convert %T to a time", v)
}

// layoutOf picks, from its shape, the one layout that parses s when s is
// a date and time with a 'T' or a space between them, an optional
// fraction and an optional zone (Z, ±hh:mm or ±hh); "" for any other
// text, which ParseTime then tries in every layout. Each failed
// time.Parse allocates its error, and MySQL's text form, for one, would
// fail seven layouts before it met its own.
func layoutOf(s string) string {
	if len(s) < len("2006-01-02 15:04:05") || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return ""
	}
	i := len("2006-01-02 15:04:05")
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
	}
	zone, t := s[i:], s[10] == 'T'
	if !t && s[10] != ' ' {
		return ""
	}
	switch {
	case zone == "":
		return pick(t, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999")
	case zone == "Z", len(zone) == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':':
		return pick(t, time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00")
	case len(zone) == 3 && (zone[0] == '+' || zone[0] == '-'):
		return pick(t, "2006-01-02T15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07")
	}
	return ""
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// ParseInt converts an integer in any form a driver may return it: any Go
// integer type, an integral float64, or decimal text (MySQL's text protocol
// gives []byte). Values outside int64 are an error.
func ParseInt(v any) (int64, error) { return toInt64(v) }

// toInt64 converts any integer form a driver may return.
func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", x)
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", x)
		}
		return int64(x), nil
	case float64:
		// 1<<63 is exact as a float64 while MaxInt64 is not: float64(MaxInt64)
		// rounds up to 1<<63, which int64 cannot hold.
		if x != math.Trunc(x) || x >= 1<<63 || x < -(1<<63) {
			return 0, fmt.Errorf("%v is not an integer", x)
		}
		return int64(x), nil
	case float32:
		return toInt64(float64(x))
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("cannot convert %T to an integer", v)
}

// StorableText reports why s is not text that every storage keeps byte
// for byte, or nil: invalid UTF-8 (PostgreSQL refuses it, MySQL refuses or
// truncates it, encoding/json rewrites it to U+FFFD, and a driver may
// rewrite it, so two distinct keys would share a row) and NUL (PostgreSQL
// refuses it in text, C-string APIs cut at it). The error names the
// offending byte's offset, never s itself. core.DB applies it to every
// string it writes, before any adapter runs, so every adapter receives
// only such text and refuses the same strings; packages that store a
// caller's text some other way (as JSON, in a key-value store, as
// core/apikey's storage-only mode) apply it themselves.
func StorableText(s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("string contains a NUL byte at offset %d, which not every database stores", i)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("string is not valid UTF-8: byte 0x%02x at offset %d", s[i], i)
		}
		i += size
	}
	return nil
}

type rerunKey struct{}

// Rerunnable returns ctx marked for a [Transactor]: the function of a
// Transaction called with it has no effect outside its transaction and may
// run again, as a whole, when the database aborts the transaction for
// concurrent writers (a deadlock victim, a serialization failure, a
// cluster's certification conflict). An adapter that retries its own
// transactions then retries this one by the same rule, at the top level
// only (a nested Transaction is a savepoint of the caller's). sluice's
// policies mark the transaction each decision runs in (through
// core.DB.InTx); a transaction whose function is a caller's, which may do
// anything, is never marked.
func Rerunnable(ctx context.Context) context.Context {
	return context.WithValue(ctx, rerunKey{}, true)
}

// IsRerunnable reports whether ctx was marked by [Rerunnable].
func IsRerunnable(ctx context.Context) bool {
	v, _ := ctx.Value(rerunKey{}).(bool)
	return v
}
