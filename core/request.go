package core

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// This file holds the values a request to [DB] names and returns: the
// [Where] conditions that guard it and the [Row] it answers, and how their
// values convert to and from what the adapters store (toStorage,
// fromStorage; the rule for storable text is driver.StorableText).

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

// toBool converts booleans, 0/1 integers and their text forms.
func toBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case []byte:
		return toBool(string(x))
	case string:
		return strconv.ParseBool(x)
	}
	n, err := driver.ParseInt(v)
	if err != nil || (n != 0 && n != 1) {
		return false, fmt.Errorf("cannot convert %T(%v) to a bool", v, v)
	}
	return n == 1, nil
}

// fromStorage converts a value an adapter returned to the field's Go type:
// int64, string, bool, time.Time in UTC, or nil.
func fromStorage(f driver.Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch f.Type {
	case driver.TypeInt:
		if _, ok := v.(int64); ok {
			return v, nil // already the field's type: no new boxing
		}
		return driver.ParseInt(v)
	case driver.TypeBool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return toBool(v)
	case driver.TypeTime:
		if t, ok := v.(time.Time); ok && t.Location() == time.UTC {
			return v, nil // already a UTC time: no new boxing
		}
		return driver.ParseTime(v)
	case driver.TypeString:
		switch x := v.(type) {
		case string:
			return v, nil // already a string: no new boxing
		case []byte:
			return string(x), nil
		}
	}
	return nil, fmt.Errorf("cannot convert %T to %s", v, f.Type)
}

// toStorage checks that a caller's value suits the field and normalises it:
// any integer becomes int64, times become UTC truncated to the millisecond
// (the precision every dialect keeps), strings must be valid UTF-8 without
// NUL (see driver.StorableText), pointers are dereferenced, nil stays nil.
func toStorage(f driver.Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil
		}
		return toStorage(f, rv.Elem().Interface())
	}
	switch f.Type {
	case driver.TypeInt:
		switch v.(type) {
		case int64:
			return v, nil // already normalised: no new boxing
		case int, int8, int16, int32, uint, uint8, uint16, uint32, uint64:
			n, err := driver.ParseInt(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			return n, nil
		}
	case driver.TypeString:
		if s, ok := v.(string); ok {
			if err := driver.StorableText(s); err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			return v, nil // the caller's boxed string: no new boxing
		}
	case driver.TypeBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case driver.TypeTime:
		if t, ok := v.(time.Time); ok {
			if t.Location() == time.UTC && t.Nanosecond()%int(time.Millisecond) == 0 && t == t.Round(0) {
				return v, nil // already what is stored (no monotonic reading either): no new boxing
			}
			return t.UTC().Truncate(time.Millisecond), nil
		}
	}
	return nil, fmt.Errorf("field %q is %s, got %T", f.Name, f.Type, v)
}
