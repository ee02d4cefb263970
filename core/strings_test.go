package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// unstorableStrings are strings some database would not store byte for
// byte (invalid UTF-8, NUL), each with what its error must say about it.
var unstorableStrings = []struct {
	name, value, want string
}{
	{"invalid UTF-8", "a\xff\xfe", "byte 0xff at offset 1"},
	{"truncated sequence", "ok\xc3", "byte 0xc3 at offset 2"},
	{"lone continuation byte", "\x80", "byte 0x80 at offset 0"},
	{"surrogate half", "a\xed\xa0\x80", "byte 0xed at offset 1"},
	{"overlong encoding", "\xc0\xaf", "byte 0xc0 at offset 0"},
	{"NUL", "a\x00b", "NUL byte at offset 1"},
	{"NUL alone", "\x00", "NUL byte at offset 0"},
}

// stringCalls are the places a caller can give a string s: as a value to
// write and as a value in a where clause.
var stringCalls = []struct {
	op   string
	call func(ctx context.Context, db *core.DB, s string) error
}{
	{"Create", func(ctx context.Context, db *core.DB, s string) error {
		_, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": s})
		return err
	}},
	{"IncrementOne", func(ctx context.Context, db *core.DB, s string) error {
		_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", s)}, Increment: map[string]int64{"count": 1}})
		return err
	}},
	{"IncrementOne", func(ctx context.Context, db *core.DB, s string) error {
		_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelAPIKey, Set: map[string]any{"name": s}})
		return err
	}},
	{"Update", func(ctx context.Context, db *core.DB, s string) error {
		_, _, err := db.Update(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", "k")}, map[string]any{"key": s})
		return err
	}},
	{"UpdateMany", func(ctx context.Context, db *core.DB, s string) error {
		_, err := db.UpdateMany(ctx, core.ModelRateLimit, nil, map[string]any{"key": s})
		return err
	}},
	{"FindOne", func(ctx context.Context, db *core.DB, s string) error {
		_, _, err := db.FindOne(ctx, core.ModelRateLimit, core.Eq("key", s))
		return err
	}},
	{"Count", func(ctx context.Context, db *core.DB, s string) error {
		_, err := db.Count(ctx, core.ModelRateLimit, core.In("key", "k", s))
		return err
	}},
	{"DeleteMany", func(ctx context.Context, db *core.DB, s string) error {
		_, err := db.DeleteMany(ctx, core.ModelRateLimit, core.Gt("key", s))
		return err
	}},
}

// TestUnstorableStringsAreInvalid checks that a string some database would
// not store byte for byte (invalid UTF-8, NUL) is refused with ErrInvalid
// wherever a caller can give one, names the field and the offending byte,
// and never reaches the adapter: so every adapter refuses it the same way.
func TestUnstorableStringsAreInvalid(t *testing.T) {
	rl := core.ModelRateLimit
	ctx := context.Background()
	m := memory.New()
	db := mustNew(t, m)
	mustCreate(t, db, rl, map[string]any{"key": "k", "count": 1})
	mustCreate(t, db, core.ModelAPIKey, apikeyValues("h"))
	for _, b := range unstorableStrings {
		for _, c := range stringCalls {
			t.Run(b.name+"/"+c.op, func(t *testing.T) {
				before := m.Calls()
				err := c.call(ctx, db, b.value)
				if !errors.Is(err, core.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				if m.Calls() != before {
					t.Errorf("the adapter saw %d calls, want none", m.Calls()-before)
				}
				if !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "field \"") {
					t.Errorf("message %q does not name the field and say %q", err, b.want)
				}
			})
		}
	}
	if row := mustFind(t, db, rl); row.Text("key") != "k" || row.Int("count") != 1 {
		t.Errorf("the row changed: %v", row)
	}
}

// TestUnstorableDefaultIsInvalid checks that NewSchema refuses a model with
// a default that cannot be stored, as DB refuses such a value.
func TestUnstorableDefaultIsInvalid(t *testing.T) {
	_, err := core.NewSchema(core.Naming{}, core.Model{Name: "m", Fields: []driver.Field{
		{Name: "id", Type: driver.TypeInt, Primary: true},
		{Name: "s", Type: driver.TypeString, Default: "x\x00"},
	}})
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("NewSchema err = %v, want ErrInvalid", err)
	}
}

// TestStorableStringsPassByteExact is the counterpart: strings that are
// valid UTF-8 without NUL reach the adapter unchanged, however unusual.
func TestStorableStringsPassByteExact(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	db := mustNew(t, m)
	for _, s := range []string{
		"", "k ", " k", "K", "é", "e\u0301", "\uFFFD", "k😀", "\x01\x7f", "tab\there", "\u202e", "a\u200bb",
	} {
		row, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": s})
		if err != nil {
			t.Fatalf("Create %q: %v", s, err)
		}
		if row.Text("key") != s {
			t.Errorf("Create %q returned %q", s, row.Text("key"))
		}
		tb, _ := db.Schema().Table(core.ModelRateLimit)
		rec, err := m.FindOne(ctx, tb, cols(core.Eq("id", row.Int("id"))))
		if err != nil || rec["key"] != s {
			t.Errorf("the adapter stored %q (%v), want %q", rec["key"], err, s)
		}
		if n, err := db.Count(ctx, core.ModelRateLimit, core.Eq("key", s)); err != nil || n != 1 {
			t.Errorf("Count(key = %q) = %d, %v; want 1", s, n, err)
		}
	}
}
