package core_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// driverRow is an adapter that returns one record in whatever form a test
// gives it, as a database driver might, so DB's conversion can be checked.
type driverRow struct {
	driver.Adapter
	rec driver.Record
}

func (d driverRow) FindOne(context.Context, *driver.Table, []driver.Where) (driver.Record, error) {
	return d.rec, nil
}

func (d driverRow) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return d.rec, nil
}

// readAs returns field of an apikey row whose column holds raw.
func readAs(t *testing.T, column string, raw any) (any, error) {
	t.Helper()
	db := mustNew(t, driverRow{Adapter: memory.New(), rec: driver.Record{"id": int32(1), column: raw}})
	row, ok, err := db.FindOne(context.Background(), core.ModelAPIKey)
	if err != nil {
		return nil, err
	}
	if !ok {
		t.Fatal("FindOne found nothing")
	}
	if row.Int("id") != 1 {
		t.Errorf("id = %v, want int64 1", row["id"])
	}
	field := map[string]string{"request_count": "requestCount", "enabled": "enabled",
		"last_refill_at": "lastRefillAt", "name": "name"}[column]
	return row[field], nil
}

// fromStorageCase is a raw value a driver might return for column and the
// field value DB must make of it.
type fromStorageCase struct {
	name   string
	column string
	raw    any
	want   any // nil means NULL
}

// checkFromStorage reads each case's raw value through DB: a time must come
// back in UTC and at the same instant, anything else deeply equal.
func checkFromStorage(t *testing.T, cases []fromStorageCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAs(t, c.column, c.raw)
			if err != nil {
				t.Fatal(err)
			}
			if tm, ok := got.(time.Time); ok {
				if tm.Location() != time.UTC {
					t.Errorf("time in %v, want UTC", tm.Location())
				}
				if want, _ := c.want.(time.Time); !tm.Equal(want) {
					t.Errorf("got %v, want %v", tm, want)
				}
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", got, got, c.want, c.want)
			}
		})
	}
}

// TestConvertFromStorageIntegers reads every Go integer type and the text
// and float forms drivers use as int64.
func TestConvertFromStorageIntegers(t *testing.T) {
	checkFromStorage(t, []fromStorageCase{
		{"int", "request_count", int(42), int64(42)},
		{"int8", "request_count", int8(-42), int64(-42)},
		{"int16", "request_count", int16(42), int64(42)},
		{"int32", "request_count", int32(42), int64(42)},
		{"int64", "request_count", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"int64 min", "request_count", int64(math.MinInt64), int64(math.MinInt64)},
		{"uint", "request_count", uint(42), int64(42)},
		{"uint8", "request_count", uint8(255), int64(255)},
		{"uint16", "request_count", uint16(42), int64(42)},
		{"uint32", "request_count", uint32(math.MaxUint32), int64(math.MaxUint32)},
		{"uint64", "request_count", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"float64 integral", "request_count", float64(42), int64(42)},
		{"float64 negative", "request_count", float64(-3), int64(-3)},
		{"float32 integral", "request_count", float32(42), int64(42)},
		{"bytes", "request_count", []byte("42"), int64(42)},
		{"string", "request_count", "-42", int64(-42)},
		{"int NULL", "request_count", nil, nil},
	})
}

// TestConvertFromStorageBooleans reads bool, 0/1 in any integer type, and
// text as bool.
func TestConvertFromStorageBooleans(t *testing.T) {
	checkFromStorage(t, []fromStorageCase{
		{"bool true", "enabled", true, true},
		{"bool false", "enabled", false, false},
		{"int64 1", "enabled", int64(1), true},
		{"int64 0", "enabled", int64(0), false},
		{"int 1", "enabled", 1, true},
		{"uint8 0", "enabled", uint8(0), false},
		{"text 1", "enabled", "1", true},
		{"text 0", "enabled", "0", false},
		{"text true", "enabled", "true", true},
		{"text t", "enabled", "t", true},
		{"text f", "enabled", "f", false},
		{"bytes 1", "enabled", []byte("1"), true},
		{"bool NULL", "enabled", nil, nil},
	})
}

// TestConvertFromStorageTimes reads time.Time in any zone, every text
// layout and epoch milliseconds as a time in UTC.
func TestConvertFromStorageTimes(t *testing.T) {
	ms := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	sec := ms.Truncate(time.Second)
	day := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	paris := time.FixedZone("CET", 3600)
	checkFromStorage(t, []fromStorageCase{
		{"time UTC", "last_refill_at", ms, ms},
		{"time in another zone", "last_refill_at", ms.In(paris), ms},
		{"time local", "last_refill_at", ms.Local(), ms},
		{"TimeLayout", "last_refill_at", "2026-03-04T05:06:07.890Z", ms},
		{"TimeLayout bytes", "last_refill_at", []byte("2026-03-04T05:06:07.890Z"), ms},
		{"RFC3339Nano with offset", "last_refill_at", "2026-03-04T06:06:07.89+01:00", ms},
		{"RFC3339 no fraction", "last_refill_at", "2026-03-04T05:06:07Z", sec},
		{"space and colon offset", "last_refill_at", "2026-03-04 06:06:07.890+01:00", ms},
		{"space and hour offset", "last_refill_at", "2026-03-04 06:06:07.89+01", ms},
		{"space and Z", "last_refill_at", "2026-03-04 05:06:07.890Z", ms},
		{"Go String form", "last_refill_at", "2026-03-04 06:06:07.89 +0100 CET", ms},
		{"T without zone is UTC", "last_refill_at", "2026-03-04T05:06:07.890", ms},
		{"space without zone is UTC", "last_refill_at", "2026-03-04 05:06:07.89", ms},
		{"space without fraction", "last_refill_at", "2026-03-04 05:06:07", sec},
		{"date only", "last_refill_at", "2026-03-04", day},
		{"surrounding spaces", "last_refill_at", " 2026-03-04T05:06:07.890Z ", ms},
		{"epoch ms int64", "last_refill_at", ms.UnixMilli(), ms},
		{"epoch ms float64", "last_refill_at", float64(ms.UnixMilli()), ms},
		{"time NULL", "last_refill_at", nil, nil},
	})
}

// TestConvertFromStorageStrings reads text and bytes as string, keeping the
// empty string apart from NULL.
func TestConvertFromStorageStrings(t *testing.T) {
	checkFromStorage(t, []fromStorageCase{
		{"string", "name", "hello", "hello"},
		{"bytes string", "name", []byte("hello"), "hello"},
		{"empty string is not NULL", "name", "", ""},
		{"string NULL", "name", nil, nil},
	})
}

func TestConvertFromStorageErrors(t *testing.T) {
	cases := []struct {
		name   string
		column string
		raw    any
		want   string
	}{
		{"uint64 overflow", "request_count", uint64(math.MaxInt64) + 1, "overflows int64"},
		{"uint overflow", "request_count", uint(math.MaxUint), "overflows int64"},
		{"fractional float", "request_count", 1.5, "is not an integer"},
		{"float at 2^63", "request_count", float64(1 << 63), "is not an integer"},
		{"float below -2^63", "request_count", -float64(1<<63) * 2, "is not an integer"},
		{"NaN", "request_count", math.NaN(), "is not an integer"},
		{"text not a number", "request_count", "ten", "invalid syntax"},
		{"bool as int", "request_count", true, "cannot convert bool to an integer"},
		{"int 2 as bool", "enabled", int64(2), "to a bool"},
		{"text yes as bool", "enabled", "yes", "invalid syntax"},
		{"time as bool", "enabled", time.Now(), "to a bool"},
		{"bad time text", "last_refill_at", "yesterday", `cannot parse "yesterday" as a time`},
		{"bool as time", "last_refill_at", true, "cannot convert bool to a time"},
		{"int as string", "name", 42, "cannot convert int to string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAs(t, c.column, c.raw)
			if err == nil {
				t.Fatalf("got %#v, want an error", got)
			}
			wrappedOnce(t, err, "FindOne", core.ModelAPIKey)
			if errors.Is(err, core.ErrInvalid) {
				t.Errorf("a bad value from storage is not an invalid request: %v", err)
			}
			for _, want := range []string{`column "` + c.column + `"`, c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestConvertToStorage checks what the adapter receives: int64 from any
// integer type, pointers dereferenced, times in UTC truncated to the
// millisecond.
func TestConvertToStorage(t *testing.T) {
	ctx := context.Background()
	n32 := int32(5)
	pn32 := &n32
	when := time.Date(2026, 3, 4, 6, 6, 7, 890_123_456, time.FixedZone("CET", 3600))
	stored := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	s := "label"
	yes := true
	cases := []struct {
		name  string
		field string
		in    any
		want  any
	}{
		{"int", "requestCount", int(7), int64(7)},
		{"int8", "requestCount", int8(-7), int64(-7)},
		{"int16", "requestCount", int16(7), int64(7)},
		{"int32", "requestCount", int32(7), int64(7)},
		{"int64", "requestCount", int64(7), int64(7)},
		{"uint", "requestCount", uint(7), int64(7)},
		{"uint8", "requestCount", uint8(7), int64(7)},
		{"uint16", "requestCount", uint16(7), int64(7)},
		{"uint32", "requestCount", uint32(7), int64(7)},
		{"uint64", "requestCount", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"pointer to int32", "requestCount", &n32, int64(5)},
		{"pointer to pointer", "requestCount", &pn32, int64(5)},
		{"nil pointer to a nullable int", "remaining", (*int64)(nil), nil},
		{"nil to a nullable int", "remaining", nil, nil},
		{"time in another zone", "lastRefillAt", when, stored},
		{"pointer to time", "lastRefillAt", &when, stored},
		{"pointer to string", "name", &s, "label"},
		{"pointer to bool", "enabled", &yes, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := memory.New()
			db := mustNew(t, m)
			mustCreate(t, db, core.ModelAPIKey, merge(apikeyValues("h"), map[string]any{"remaining": 3}))
			row, ok, err := db.Update(ctx, core.ModelAPIKey, []core.Where{core.Eq("key", "h")}, map[string]any{c.field: c.in})
			if err != nil || !ok {
				t.Fatalf("Update: %v, %v", ok, err)
			}
			tb, _ := db.Schema().Table(core.ModelAPIKey)
			col, _ := tb.Column(c.field)
			rec, _ := m.FindOne(ctx, tb, nil)
			got := rec[col.Name]
			if tm, ok := got.(time.Time); ok && tm.Location() != time.UTC {
				t.Errorf("stored time in %v, want UTC", tm.Location())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("adapter received %#v (%T), want %#v (%T)", got, got, c.want, c.want)
			}
			if !reflect.DeepEqual(row[c.field], c.want) {
				t.Errorf("row has %#v, want %#v", row[c.field], c.want)
			}
		})
	}
}

// TestConvertWhereValues checks where values are normalised too: times
// compare at millisecond precision whatever the zone, In lists become []any
// of int64.
func TestConvertWhereValues(t *testing.T) {
	ctx := context.Background()
	db := mustNew(t, memory.New())
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	mustCreate(t, db, core.ModelAPIKey, merge(apikeyValues("h"), map[string]any{"expiresAt": at, "remaining": 3}))
	cases := []struct {
		name  string
		where core.Where
		want  int64
	}{
		{"eq same instant in another zone", core.Eq("expiresAt", at.In(time.FixedZone("X", -7*3600))), 1},
		{"eq with sub-millisecond noise", core.Eq("expiresAt", at.Add(999*time.Microsecond)), 1},
		{"lt one millisecond later", core.Lt("expiresAt", at.Add(time.Millisecond)), 1},
		{"lt the same instant", core.Lt("expiresAt", at), 0},
		{"in with mixed integer types", core.In("remaining", int8(1), uint32(3)), 1},
		{"not in with a pointer", core.NotIn("remaining", new(int64)), 1},
		{"eq uint8", core.Eq("remaining", uint8(3)), 1},
	}
	for _, c := range cases {
		if n, err := db.Count(ctx, core.ModelAPIKey, c.where); err != nil || n != c.want {
			t.Errorf("%s: Count = %d, %v; want %d", c.name, n, err, c.want)
		}
	}
}

func TestRowAccessors(t *testing.T) {
	at := time.UnixMilli(5).UTC()
	r := core.Row{"n": int64(3), "s": "x", "b": true, "t": at, "null": nil}
	if r.Int("n") != 3 || r.Text("s") != "x" || !r.Bool("b") || !r.Time("t").Equal(at) {
		t.Errorf("accessors on %v", r)
	}
	if n, ok := r.NullInt("null"); ok || n != 0 {
		t.Error("NullInt on NULL")
	}
	if s, ok := r.NullText("s"); !ok || s != "x" {
		t.Error("NullText")
	}
	if tm, ok := r.NullTime("null"); ok || !tm.IsZero() {
		t.Error("NullTime on NULL")
	}
	if !r.IsNull("null") || !r.IsNull("absent") || r.IsNull("n") {
		t.Error("IsNull")
	}
	if r.Int("null") != 0 || r.Text("null") != "" || r.Bool("null") || !r.Time("null").IsZero() {
		t.Error("zero values for NULL")
	}
}
