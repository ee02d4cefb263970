package core

import "time"

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
