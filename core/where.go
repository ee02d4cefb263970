package core

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

// Where is one condition. A request's where clauses are joined by AND.
//
// At the [DB] level Field is a logical field name of the model; at the
// [Adapter] level it is the physical column name and Value is normalised:
// integers are int64, times are UTC truncated to the millisecond, and the
// value of OpIn and OpNotIn is a non-empty []any without nils.
type Where struct {
	Field string
	Op    Op
	Value any
}

// Eq is field = value, or field IS NULL when value is nil.
func Eq(field string, value any) Where { return Where{field, OpEq, value} }

// Ne is field <> value, or field IS NOT NULL when value is nil.
func Ne(field string, value any) Where { return Where{field, OpNe, value} }

// Lt is field < value.
func Lt(field string, value any) Where { return Where{field, OpLt, value} }

// Lte is field <= value.
func Lte(field string, value any) Where { return Where{field, OpLte, value} }

// Gt is field > value.
func Gt(field string, value any) Where { return Where{field, OpGt, value} }

// Gte is field >= value.
func Gte(field string, value any) Where { return Where{field, OpGte, value} }

// In is field IN (values...). The list must not be empty.
func In(field string, values ...any) Where { return Where{field, OpIn, values} }

// NotIn is field NOT IN (values...). The list must not be empty.
func NotIn(field string, values ...any) Where { return Where{field, OpNotIn, values} }

// IsNull is field IS NULL, the same as Eq(field, nil).
func IsNull(field string) Where { return Where{field, OpEq, nil} }

// IsNotNull is field IS NOT NULL, the same as Ne(field, nil).
func IsNotNull(field string) Where { return Where{field, OpNe, nil} }
