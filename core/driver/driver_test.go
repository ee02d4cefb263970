package driver

import (
	"strings"
	"testing"
	"time"
)

func TestParseAndFormatTime(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("X", 5*3600))
	if got := FormatTime(at); got != "2026-12-31T18:59:59.999Z" {
		t.Errorf("FormatTime = %q", got)
	}
	// Text order is time order, which the SQLite adapters rely on.
	early, late := FormatTime(time.UnixMilli(999)), FormatTime(time.UnixMilli(1000))
	if !(early < late) || len(early) != len(late) {
		t.Errorf("FormatTime is not fixed-width and ordered: %q, %q", early, late)
	}
	back, err := ParseTime(FormatTime(at))
	if err != nil || !back.Equal(at.Truncate(time.Millisecond)) || back.Location() != time.UTC {
		t.Errorf("ParseTime(FormatTime(t)) = %v, %v", back, err)
	}
	for _, bad := range []any{"", "2026-13-01", struct{}{}, 1.5} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%#v) succeeded", bad)
		}
	}
}

// TestNewTableIndexesColumns: a table made by NewTable finds each column
// by its field and by its name, and knows which clauses pin one row.
func TestNewTableIndexesColumns(t *testing.T) {
	tb := NewTable(Table{Name: "rate_limit", Model: "rateLimit", Columns: []Column{
		{Name: "id", Field: Field{Name: "id", Type: TypeInt, Primary: true}},
		{Name: "key_name", Field: Field{Name: "key", Type: TypeString, Unique: true}},
		{Name: "count", Field: Field{Name: "count", Type: TypeInt}},
	}})
	if c, ok := tb.Column("key"); !ok || c.Name != "key_name" {
		t.Errorf("Column(key) = %v, %v; want key_name", c, ok)
	}
	if c, ok := tb.ColumnByName("key_name"); !ok || c.Field.Name != "key" {
		t.Errorf("ColumnByName(key_name) = %v, %v; want field key", c, ok)
	}
	if _, ok := tb.Column("key_name"); ok {
		t.Error("Column found a field by its column name")
	}
	if tb.PrimaryKey().Name != "id" {
		t.Errorf("PrimaryKey = %v", tb.PrimaryKey())
	}
	cases := []struct {
		where []Where
		want  bool
	}{
		{[]Where{{Column: "key_name", Op: OpEq, Value: "k"}}, true},
		{[]Where{{Column: "id", Op: OpEq, Value: int64(1)}, {Column: "count", Op: OpLt, Value: int64(3)}}, true},
		{[]Where{{Column: "key_name", Op: OpEq, Value: nil}}, false}, // IS NULL pins nothing
		{[]Where{{Column: "key", Op: OpEq, Value: "k"}}, false},      // a field name is no column
		{[]Where{{Column: "count", Op: OpEq, Value: int64(1)}}, false},
	}
	for _, c := range cases {
		if got := tb.SelectsOne(c.where); got != c.want {
			t.Errorf("SelectsOne(%v) = %v, want %v", c.where, got, c.want)
		}
	}
}

// TestParseTimeTakesEachDriversForm: every form a driver hands back parses
// to the same instant as trying every layout in turn would give, and the
// forms of MySQL, SQLite and PostgreSQL's text protocol parse without a
// failed attempt (each of which allocates its error).
func TestParseTimeTakesEachDriversForm(t *testing.T) {
	forms := []string{
		"2026-12-02T03:47:51.123Z",            // TimeLayout: SQLite, Better Auth
		"2026-12-02T03:47:51.123456789+05:30", // RFC 3339
		"2026-12-02T03:47:51Z",
		"2026-12-02 03:47:51.123",       // MySQL and MariaDB
		"2026-12-02 03:47:51",           // MySQL without fraction
		"2026-12-02 03:47:51.123+00",    // PostgreSQL's text form
		"2026-12-02 03:47:51.5-07",      //
		"2026-12-02 03:47:51.123+01:00", //
		"2026-12-02 03:47:51.123Z",      //
		"2026-12-02T03:47:51.123",       // no zone: UTC
		"2026-12-02 03:47:51 +0000 UTC", // time.Time.String: the slow path
		"2026-12-02",                    // a date alone: the slow path
		" 2026-12-02 03:47:51.123 ",     // spaces around
	}
	for _, f := range forms {
		got, err := ParseTime(f)
		if err != nil {
			t.Errorf("ParseTime(%q): %v", f, err)
			continue
		}
		var want time.Time
		for _, layout := range timeLayouts {
			if w, err := time.Parse(layout, strings.TrimSpace(f)); err == nil {
				want = w.UTC()
				break
			}
		}
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v; every layout in turn gives %v", f, got, want)
		}
	}
	for _, f := range []string{"2026-12-02 03:47:51.123", "2026-12-02T03:47:51.123Z"} {
		v := any(f) // boxed once, as a driver's value is
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseTime(v) }); n != 0 {
			t.Errorf("ParseTime(%q) allocates %v times; want none (no failed layout)", f, n)
		}
	}
	for _, bad := range []string{"2026-12-02X03:47:51", "2026-12-02 03:47:51.12+1", "2026-12-02 03:47:61"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) succeeded", bad)
		}
	}
}
