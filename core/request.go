package core

import (
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// This file holds the values a request to [DB] names and returns: the
// [Where] conditions that guard it and the [Row] it answers.

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

// Row is a row as [DB] returns it: logical field name → value, typed by the
// schema as int64, string, bool, time.Time (UTC) or nil for NULL.
type Row map[string]any

// IsNull reports whether the field is NULL or absent.
func (r Row) IsNull(field string) bool { return r[field] == nil }

// Int returns an integer field, 0 when NULL.
func (r Row) Int(field string) int64 { n, _ := r.NullInt(field); return n }

// NullInt returns an integer field and whether it is not NULL.
func (r Row) NullInt(field string) (int64, bool) { n, ok := r[field].(int64); return n, ok }

// Text returns a string field, "" when NULL.
func (r Row) Text(field string) string { s, _ := r[field].(string); return s }

// NullText returns a string field and whether it is not NULL.
func (r Row) NullText(field string) (string, bool) { s, ok := r[field].(string); return s, ok }

// Bool returns a boolean field, false when NULL.
func (r Row) Bool(field string) bool { b, _ := r[field].(bool); return b }

// Time returns a time field, the zero time when NULL.
func (r Row) Time(field string) time.Time { t, _ := r.NullTime(field); return t }

// NullTime returns a time field and whether it is not NULL.
func (r Row) NullTime(field string) (time.Time, bool) { t, ok := r[field].(time.Time); return t, ok }
