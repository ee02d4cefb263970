package core

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

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
	n, err := toInt64(v)
	if err != nil || (n != 0 && n != 1) {
		return false, fmt.Errorf("cannot convert %T(%v) to a bool", v, v)
	}
	return n == 1, nil
}

// fromStorage converts a value an adapter returned to the field's Go type:
// int64, string, bool, time.Time in UTC, or nil.
func fromStorage(f Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch f.Type {
	case TypeInt:
		if _, ok := v.(int64); ok {
			return v, nil // already the field's type: no new boxing
		}
		return toInt64(v)
	case TypeBool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return toBool(v)
	case TypeTime:
		return ParseTime(v)
	case TypeString:
		switch x := v.(type) {
		case string:
			return v, nil // already a string: no new boxing
		case []byte:
			return string(x), nil
		}
	}
	return nil, fmt.Errorf("cannot convert %T to %s", v, f.Type)
}

// storableString refuses what some database would not store byte for byte:
// invalid UTF-8 (PostgreSQL refuses it, MySQL refuses or truncates it, and a
// driver may rewrite it to U+FFFD, so two distinct keys would share a row)
// and NUL (PostgreSQL refuses it in text, C-string APIs cut at it). Checking
// here, before any adapter runs, makes every adapter refuse the same way.
func storableString(s string) error {
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

// toStorage checks that a caller's value suits the field and normalises it:
// any integer becomes int64, times become UTC truncated to the millisecond
// (the precision every dialect keeps), strings must be valid UTF-8 without
// NUL (see storableString), pointers are dereferenced, nil stays nil.
func toStorage(f Field, v any) (any, error) {
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
	case TypeInt:
		switch v.(type) {
		case int64:
			return v, nil // already normalised: no new boxing
		case int, int8, int16, int32, uint, uint8, uint16, uint32, uint64:
			n, err := toInt64(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			return n, nil
		}
	case TypeString:
		if s, ok := v.(string); ok {
			if err := storableString(s); err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			return v, nil // the caller's boxed string: no new boxing
		}
	case TypeBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case TypeTime:
		if t, ok := v.(time.Time); ok {
			return t.UTC().Truncate(time.Millisecond), nil
		}
	}
	return nil, fmt.Errorf("field %q is %s, got %T", f.Name, f.Type, v)
}
