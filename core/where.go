package core

import "github.com/sluice-go/sluice/core/driver"

// Where is one condition on a field of a model, by its logical name. A
// request's where clauses are joined by AND. [DB] checks the value against
// the field's type and hands the adapter a [driver.Where] on its column.
type Where struct {
	Field string
	Op    driver.Op
	Value any
}

// Eq is field = value, or field IS NULL when value is nil.
func Eq(field string, value any) Where { return Where{field, driver.OpEq, value} }

// Ne is field <> value, or field IS NOT NULL when value is nil.
func Ne(field string, value any) Where { return Where{field, driver.OpNe, value} }

// Lt is field < value.
func Lt(field string, value any) Where { return Where{field, driver.OpLt, value} }

// Lte is field <= value.
func Lte(field string, value any) Where { return Where{field, driver.OpLte, value} }

// Gt is field > value.
func Gt(field string, value any) Where { return Where{field, driver.OpGt, value} }

// Gte is field >= value.
func Gte(field string, value any) Where { return Where{field, driver.OpGte, value} }

// In is field IN (values...). The list must not be empty.
func In(field string, values ...any) Where { return Where{field, driver.OpIn, values} }

// NotIn is field NOT IN (values...). The list must not be empty.
func NotIn(field string, values ...any) Where { return Where{field, driver.OpNotIn, values} }

// IsNull is field IS NULL, the same as Eq(field, nil).
func IsNull(field string) Where { return Where{field, driver.OpEq, nil} }

// IsNotNull is field IS NOT NULL, the same as Ne(field, nil).
func IsNotNull(field string) Where { return Where{field, driver.OpNe, nil} }

// FindOptions orders and pages [DB.FindMany]. SortBy is a logical field;
// without it rows come in primary-key order.
type FindOptions struct {
	Limit  int // 0 means no limit
	Offset int
	SortBy string
	Desc   bool
}
