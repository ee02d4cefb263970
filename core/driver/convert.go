package driver

import (
	"fmt"
	"math"
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
