package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

var errBoom = errors.New("boom")

// failing is an adapter whose every call fails with err, to see how DB
// wraps adapter errors.
type failing struct {
	driver.Adapter
	err error
}

func (f failing) Create(context.Context, *driver.Table, []driver.Assignment) (driver.Record, error) {
	return nil, f.err
}
func (f failing) FindOne(context.Context, *driver.Table, []driver.Where) (driver.Record, error) {
	return nil, f.err
}
func (f failing) FindMany(context.Context, *driver.Table, []driver.Where, driver.FindOptions) ([]driver.Record, error) {
	return nil, f.err
}
func (f failing) Update(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (driver.Record, error) {
	return nil, f.err
}
func (f failing) UpdateMany(context.Context, *driver.Table, []driver.Where, []driver.Assignment) (int64, error) {
	return 0, f.err
}
func (f failing) Delete(context.Context, *driver.Table, []driver.Where) (bool, error) {
	return false, f.err
}
func (f failing) DeleteMany(context.Context, *driver.Table, []driver.Where) (int64, error) {
	return 0, f.err
}
func (f failing) Count(context.Context, *driver.Table, []driver.Where) (int64, error) {
	return 0, f.err
}
func (f failing) IncrementOne(context.Context, *driver.Table, []driver.Where, []driver.Delta, []driver.Assignment) (driver.Record, error) {
	return nil, f.err
}
func (f failing) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return fn(ctx, f)
}

// TestAdapterErrorsWrappedOnce checks every DB method: an adapter error comes
// back as one *core.Error naming the operation and model, with the sentinel
// the adapter used still visible to errors.Is.
func TestAdapterErrorsWrappedOnce(t *testing.T) {
	ctx := context.Background()
	rl := core.ModelRateLimit
	methods := []struct {
		op   string
		call func(db *core.DB) error
	}{
		{"IncrementOne", func(db *core.DB) error {
			_, _, err := db.IncrementOne(ctx, core.IncrementRequest{Model: rl, Increment: map[string]int64{"count": 1}})
			return err
		}},
		{"Create", func(db *core.DB) error { _, err := db.Create(ctx, rl, map[string]any{"key": "a"}); return err }},
		{"FindOne", func(db *core.DB) error { _, _, err := db.FindOne(ctx, rl); return err }},
		{"FindMany", func(db *core.DB) error { _, err := db.FindMany(ctx, rl, nil, nil); return err }},
		{"Update", func(db *core.DB) error { _, _, err := db.Update(ctx, rl, nil, map[string]any{"count": 1}); return err }},
		{"UpdateMany", func(db *core.DB) error { _, err := db.UpdateMany(ctx, rl, nil, map[string]any{"count": 1}); return err }},
		{"Delete", func(db *core.DB) error { _, err := db.Delete(ctx, rl); return err }},
		{"DeleteMany", func(db *core.DB) error { _, err := db.DeleteMany(ctx, rl); return err }},
		{"Count", func(db *core.DB) error { _, err := db.Count(ctx, rl); return err }},
	}
	causes := []struct {
		name  string
		err   error
		kind  error // the sentinel errors.Is must find; nil for none
		words string
	}{
		{"plain", errBoom, nil, ": boom"},
		{"conflict", errors.Join(core.ErrConflict, errBoom), core.ErrConflict, ": unique conflict\nboom"},
		{"wrapped conflict", wrapf(core.ErrConflict, "duplicate key"), core.ErrConflict, ": unique conflict: duplicate key"},
		{"not found", wrapf(core.ErrNotFound, "gone"), core.ErrNotFound, ": not found: gone"},
		{"context", context.Canceled, nil, ": context canceled"},
	}
	for _, fallback := range []bool{false, true} {
		for _, cause := range causes {
			var opts []core.Option
			if fallback {
				opts = append(opts, core.WithFallback())
			}
			db := mustNew(t, failing{Adapter: memory.New(), err: cause.err}, opts...)
			for _, m := range methods {
				name := cause.name + "/" + m.op
				if fallback {
					name += "/fallback"
				}
				t.Run(name, func(t *testing.T) {
					err := m.call(db)
					if !errors.Is(err, cause.err) {
						t.Fatalf("err = %v, want it to wrap %v", err, cause.err)
					}
					if cause.kind != nil && !errors.Is(err, cause.kind) {
						t.Errorf("errors.Is(%v, %v) = false", err, cause.kind)
					}
					var e *core.Error
					if errors.As(err, &e) && e.Kind != cause.kind {
						t.Errorf("Kind = %v, want %v", e.Kind, cause.kind)
					}
					wrappedOnce(t, err, m.op, rl)
					if want := "sluice: " + m.op + " " + rl + cause.words; err.Error() != want {
						t.Errorf("message %q, want %q", err, want)
					}
				})
			}
		}
	}
}

// wrapf wraps a sentinel the way adapters do.
func wrapf(sentinel error, msg string) error { return fmt.Errorf("%w: %s", sentinel, msg) }

// The TestSentinels tests check each sentinel on a real path to it.

// TestSentinelsConflict checks ErrConflict on a duplicate unique key, from
// each call that can write one, and that the refused write changes nothing.
func TestSentinelsConflict(t *testing.T) {
	ctx := context.Background()

	t.Run("duplicate unique key in Create", func(t *testing.T) {
		db := mustNew(t, memory.New())
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a"})
		_, err := db.Create(ctx, core.ModelRateLimit, map[string]any{"key": "a"})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
		wrappedOnce(t, err, "Create", core.ModelRateLimit)
		if !strings.Contains(err.Error(), "unique conflict") || strings.Count(err.Error(), "unique conflict") != 1 {
			t.Errorf("message %q should say unique conflict once", err)
		}
		if n, _ := db.Count(ctx, core.ModelRateLimit); n != 1 {
			t.Errorf("%d rows after the conflict, want 1", n)
		}
	})

	t.Run("duplicate unique key in Update and IncrementOne", func(t *testing.T) {
		db := mustNew(t, memory.New())
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a"})
		mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "b"})
		_, _, err := db.Update(ctx, core.ModelRateLimit, []core.Where{core.Eq("key", "b")}, map[string]any{"key": "a"})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("Update err = %v, want ErrConflict", err)
		}
		wrappedOnce(t, err, "Update", core.ModelRateLimit)
		_, _, err = db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", "b")}, Increment: map[string]int64{"count": 1}, Set: map[string]any{"key": "a"}})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("IncrementOne err = %v, want ErrConflict", err)
		}
		wrappedOnce(t, err, "IncrementOne", core.ModelRateLimit)
		if row := mustFind(t, db, core.ModelRateLimit, core.Eq("key", "b")); row.Int("count") != 0 {
			t.Errorf("count = %d after the refused write, want 0", row.Int("count"))
		}
	})
}

// TestSentinelsFromNew checks which adapters and options New refuses, with
// which sentinel, and which it accepts.
func TestSentinelsFromNew(t *testing.T) {
	t.Run("ErrUnsupported without IncrementOne and Transaction", func(t *testing.T) {
		db, err := core.New(bare{memory.New()})
		if db != nil || !errors.Is(err, core.ErrUnsupported) {
			t.Fatalf("New = %v, %v; want nil, ErrUnsupported", db, err)
		}
		wrappedOnce(t, err, "New", "")
		for _, want := range []string{"core_test.bare", "neither IncrementOne nor Transaction"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
		}
		// Forcing the fallback needs transactions just as much.
		a, _ := newNativeOnly()
		if _, err := core.New(a, core.WithFallback()); !errors.Is(err, core.ErrUnsupported) {
			t.Errorf("New(native only, WithFallback) err = %v, want ErrUnsupported", err)
		}
	})

	t.Run("accepts either capability", func(t *testing.T) {
		a, _ := newNativeOnly()
		if db := mustNew(t, a); !db.NativeIncrement() {
			t.Error("native-only adapter: NativeIncrement() = false")
		}
		if db := mustNew(t, memory.New().WithoutIncrementOne()); db.NativeIncrement() {
			t.Error("transaction-only adapter: NativeIncrement() = true")
		}
		if db := mustNew(t, memory.New(), core.WithFallback()); db.NativeIncrement() {
			t.Error("WithFallback: NativeIncrement() = true")
		}
	})

	t.Run("ErrInvalid with a nil adapter or a bad naming", func(t *testing.T) {
		if _, err := core.New(nil); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("New(nil) err = %v, want ErrInvalid", err)
		}
		_, err := core.New(memory.New(), core.WithNaming(core.Naming{Tables: map[string]string{"nope": "x"}}))
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("New(bad naming) err = %v, want ErrInvalid", err)
		}
	})
}

// TestSentinelsFromInTx checks ErrUnsupported from InTx on an adapter
// without transactions, before fn runs or the adapter sees a call.
func TestSentinelsFromInTx(t *testing.T) {
	a, m := newNativeOnly()
	db := mustNew(t, a)
	called := false
	err := db.InTx(context.Background(), func(context.Context, *core.DB) error { called = true; return nil })
	if !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("InTx err = %v, want ErrUnsupported", err)
	}
	if called {
		t.Error("fn ran without a transaction")
	}
	if m.Calls() != 0 {
		t.Errorf("the adapter saw %d calls", m.Calls())
	}
	wrappedOnce(t, err, "InTx", "")
	if !strings.Contains(err.Error(), "no transactions") {
		t.Errorf("message %q does not say why", err)
	}
}

// TestErrorFormat pins the message format and Unwrap of *core.Error.
func TestErrorFormat(t *testing.T) {
	cause := errors.New("cause")
	cases := []struct {
		err  *core.Error
		want string
		is   []error
	}{
		{&core.Error{Op: "Count", Model: "m", Err: cause}, "sluice: Count m: cause", []error{cause}},
		{&core.Error{Op: "Count", Model: "m", Kind: core.ErrNotFound, Err: cause}, "sluice: Count m: not found: cause", []error{cause, core.ErrNotFound}},
		{&core.Error{Op: "Create", Model: "m", Kind: core.ErrConflict, Err: wrapf(core.ErrConflict, "k")}, "sluice: Create m: unique conflict: k", []error{core.ErrConflict}},
		{&core.Error{Op: "New", Kind: core.ErrUnsupported}, "sluice: New: unsupported", []error{core.ErrUnsupported}},
		{&core.Error{Op: "InTx"}, "sluice: InTx", nil},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		for _, target := range c.is {
			if !errors.Is(c.err, target) {
				t.Errorf("errors.Is(%q, %v) = false", c.err, target)
			}
		}
		if errors.Is(c.err, core.ErrInvalid) {
			t.Errorf("errors.Is(%q, ErrInvalid) = true", c.err)
		}
	}
}
