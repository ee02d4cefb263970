package driver

import "fmt"

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
