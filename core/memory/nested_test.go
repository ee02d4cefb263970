package memory_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// txView gives the transactions of a store through one of its views.
type txView func(m *memory.Memory) driver.Transactor

// errAbort is returned by a transaction's function to roll it back.
var errAbort = errors.New("abort")

// TestNestedTransaction checks that a transaction adapter's Transaction is
// a savepoint: an error from its function undoes that function's writes
// only, a nil return keeps them in the enclosing transaction, and the
// enclosing transaction's own fate decides for both.
func TestNestedTransaction(t *testing.T) {
	views := map[string]txView{
		"native":   func(m *memory.Memory) driver.Transactor { return m },
		"fallback": func(m *memory.Memory) driver.Transactor { return m.WithoutIncrementOne().(driver.Transactor) },
	}
	cases := []struct {
		name string
		test func(t *testing.T, view txView)
	}{
		{"an inner error undoes the inner writes only", testInnerErrorUndoesInnerWrites},
		{"an inner commit stays subject to the enclosing transaction", testInnerCommitFollowsEnclosing},
		{"a panicking inner function is undone", testPanickingInnerIsUndone},
		{"a nested transaction after the enclosing one ended fails", testNestedAfterEndFails},
	}
	for name, view := range views {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) { c.test(t, view) })
		}
	}
	t.Run("core.DB nests InTx through it", testDBNestsInTx)
}

func testInnerErrorUndoesInnerWrites(t *testing.T, view txView) {
	ctx := context.Background()
	_, m, tb := fixture(t)
	before, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	var inside []driver.Record
	err := view(m).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		if _, err := tx.Update(ctx, tb, cols(core.Eq("name", "a")), []driver.Assignment{{Column: "n", Value: int64(10)}}); err != nil {
			return err
		}
		nested, ok := tx.(driver.Transactor)
		if !ok {
			t.Fatal("the transaction adapter has no Transaction")
		}
		err := nested.Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			_, isInc := inner.(driver.Incrementer)
			_, outerInc := tx.(driver.Incrementer)
			if isInc != outerInc {
				t.Errorf("the nested adapter has IncrementOne %v, the enclosing one %v", isInc, outerInc)
			}
			// the row the enclosing transaction changed, changed again
			if _, err := inner.Update(ctx, tb, cols(core.Eq("name", "a")), []driver.Assignment{{Column: "n", Value: int64(20)}}); err != nil {
				return err
			}
			if _, err := inner.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "ghost"}}); err != nil {
				return err
			}
			if _, err := inner.DeleteMany(ctx, tb, cols(core.Eq("name", "b"))); err != nil {
				return err
			}
			if _, err := inner.UpdateMany(ctx, tb, nil, []driver.Assignment{{Column: "tag", Value: "q"}}); err != nil {
				return err
			}
			return errAbort
		})
		if !errors.Is(err, errAbort) {
			t.Errorf("nested Transaction err = %v, want abort", err)
		}
		// the enclosing transaction goes on after the inner rollback
		if _, err := tx.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "kept"}}); err != nil {
			return err
		}
		inside, _ = tx.FindMany(ctx, tb, nil, driver.FindOptions{})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	if !reflect.DeepEqual(inside, after) {
		t.Errorf("the commit changed what the transaction saw:\ninside %v\nafter  %v", inside, after)
	}
	want := append([]driver.Record(nil), before...)
	want[0] = clone(want[0])
	want[0]["n"] = int64(10)
	kept := driver.Record{"id": int64(6), "name": "kept", "n": nil, "flag": nil, "at": nil, "tag": nil, "slot": nil}
	want = append(want, kept) // id 5 went to the rolled-back "ghost"
	if !reflect.DeepEqual(want, after) {
		t.Errorf("after the commit:\ngot  %v\nwant %v", after, want)
	}
}

func testInnerCommitFollowsEnclosing(t *testing.T, view txView) {
	ctx := context.Background()
	_, m, tb := fixture(t)
	before, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	err := view(m).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		err := tx.(driver.Transactor).Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
			// two levels deep
			return inner.(driver.Transactor).Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
				_, err := inner.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "deep"}})
				return err
			})
		})
		if err != nil {
			return err
		}
		if n, _ := tx.Count(ctx, tb, cols(core.Eq("name", "deep"))); n != 1 {
			t.Errorf("the committed inner write is not visible to the enclosing transaction")
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("err = %v, want abort", err)
	}
	after, _ := m.FindMany(ctx, tb, nil, driver.FindOptions{})
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the enclosing rollback kept the inner writes:\nbefore %v\nafter  %v", before, after)
	}
}

func testPanickingInnerIsUndone(t *testing.T, view txView) {
	ctx := context.Background()
	_, m, tb := fixture(t)
	err := view(m).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		func() {
			defer func() { _ = recover() }()
			_ = tx.(driver.Transactor).Transaction(ctx, func(ctx context.Context, inner driver.Adapter) error {
				if _, err := inner.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "panic"}}); err != nil {
					return err
				}
				panic("inner")
			})
		}()
		_, err := tx.Create(ctx, tb, []driver.Assignment{{Column: "name", Value: "after"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.Count(ctx, tb, cols(core.In("name", "panic", "after"))); n != 1 {
		t.Errorf("%d of the rows panic and after exist, want only after", n)
	}
}

func testNestedAfterEndFails(t *testing.T, view txView) {
	ctx := context.Background()
	_, m, _ := fixture(t)
	var leaked driver.Adapter
	if err := view(m).Transaction(ctx, func(_ context.Context, tx driver.Adapter) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	called := false
	err := leaked.(driver.Transactor).Transaction(ctx, func(context.Context, driver.Adapter) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("nested Transaction on an ended transaction: err %v, fn called %v", err, called)
	}
}

func testDBNestsInTx(t *testing.T) {
	ctx := context.Background()
	db, m, tb := fixture(t)
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, "item", map[string]any{"name": "outer"}); err != nil {
			return err
		}
		err := tx.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			if _, err := tx.Create(ctx, "item", map[string]any{"name": "inner"}); err != nil {
				return err
			}
			return errAbort
		})
		if !errors.Is(err, errAbort) {
			t.Errorf("nested InTx err = %v, want abort", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.Count(ctx, tb, cols(core.Eq("name", "outer"))); n != 1 {
		t.Error("the outer write was lost")
	}
	if n, _ := m.Count(ctx, tb, cols(core.Eq("name", "inner"))); n != 0 {
		t.Error("the inner write survived its rollback")
	}
}

// TestIncrementOverflowIsInvalid checks that a delta taking an int64 past
// either end fails with core.ErrInvalid and changes nothing, while the ends
// themselves can be reached.
func TestIncrementOverflowIsInvalid(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		start, by int64
		ok        bool
	}{
		{math.MaxInt64 - 1, 1, true},
		{math.MaxInt64 - 1, 2, false},
		{math.MaxInt64, math.MaxInt64, false},
		{math.MinInt64 + 1, -1, true},
		{math.MinInt64 + 1, -2, false},
		{-1, math.MinInt64, false},
		{0, math.MinInt64, true},
		{1, math.MinInt64, true},
		{math.MinInt64, math.MaxInt64, true},
	}
	for _, c := range cases {
		db, m, tb := fixture(t)
		if _, _, err := db.Update(ctx, "item", []core.Where{core.Eq("name", "a")}, map[string]any{"n": c.start}); err != nil {
			t.Fatal(err)
		}
		before, _ := m.FindOne(ctx, tb, cols(core.Eq("name", "a")))
		rec, err := m.IncrementOne(ctx, tb, cols(core.Eq("name", "a")), []driver.Delta{{Column: "n", By: c.by}},
			[]driver.Assignment{{Column: "tag", Value: "changed"}})
		after, _ := m.FindOne(ctx, tb, cols(core.Eq("name", "a")))
		switch {
		case c.ok && (err != nil || rec["n"] != c.start+c.by):
			t.Errorf("%d + %d: got %v, %v; want %d", c.start, c.by, rec, err, c.start+c.by)
		case !c.ok && !errors.Is(err, core.ErrInvalid):
			t.Errorf("%d + %d: err = %v, want ErrInvalid", c.start, c.by, err)
		case !c.ok && !reflect.DeepEqual(before, after):
			t.Errorf("%d + %d: the refused write changed the row from %v to %v", c.start, c.by, before, after)
		}
	}
}

func clone(r driver.Record) driver.Record {
	out := driver.Record{}
	for k, v := range r {
		out[k] = v
	}
	return out
}
