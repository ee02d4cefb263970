package core

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core/driver"
)

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
func fromStorage(f Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch f.Type {
	case TypeInt:
		if _, ok := v.(int64); ok {
			return v, nil // already the field's type: no new boxing
		}
		return driver.ParseInt(v)
	case TypeBool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return toBool(v)
	case TypeTime:
		return driver.ParseTime(v)
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
			n, err := driver.ParseInt(v)
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
