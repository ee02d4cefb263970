package core_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// TestNestedInTx checks InTx on a tx DB: it nests through the transaction
// adapter's own Transactor, so an inner error undoes the inner writes only;
// without one it refuses, while the fallback still runs in the transaction.
func TestNestedInTx(t *testing.T) {
	for name, adapter := range incrementPaths {
		t.Run(name+"/an inner error rolls back the inner writes only", func(t *testing.T) {
			testNestedRollsBackInner(t, mustNew(t, adapter(memory.New())))
		})
		t.Run(name+"/an overflow inside a transaction is invalid and leaves it usable", func(t *testing.T) {
			testOverflowInTx(t, mustNew(t, adapter(memory.New())))
		})
	}
	t.Run("without a nested driver.Transactor InTx refuses and the fallback still works", testNestedUnsupported)
}

// testNestedRollsBackInner checks that an error from a nested InTx undoes
// the inner writes and keeps the outer ones.
func testNestedRollsBackInner(t *testing.T, db *core.DB) {
	ctx := context.Background()
	rl := core.ModelRateLimit
	mustCreate(t, db, rl, map[string]any{"key": "a", "count": 1})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, rl, map[string]any{"key": "outer"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 1}}); err != nil || !ok {
			t.Errorf("outer IncrementOne: %v, %v", ok, err)
		}
		err := tx.InTx(ctx, func(ctx context.Context, inner *core.DB) error {
			if _, err := inner.Create(ctx, rl, map[string]any{"key": "inner"}); err != nil {
				return err
			}
			if _, ok, err := inner.IncrementOne(ctx, core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 10}}); err != nil || !ok {
				t.Errorf("inner IncrementOne: %v, %v", ok, err)
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Errorf("nested InTx err = %v, want errBoom", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if row := mustFind(t, db, rl, core.Eq("key", "a")); row.Int("count") != 2 {
		t.Errorf("count = %d, want 2: the outer increment commits, the inner one rolls back", row.Int("count"))
	}
	mustFind(t, db, rl, core.Eq("key", "outer"))
	if n, err := db.Count(ctx, rl, core.Eq("key", "inner")); err != nil || n != 0 {
		t.Errorf("the inner row: %d, %v; want rolled back", n, err)
	}
}

// testOverflowInTx checks that an overflowing increment inside a
// transaction is invalid, changes nothing and leaves the transaction usable.
func testOverflowInTx(t *testing.T, db *core.DB) {
	ctx := context.Background()
	rl := core.ModelRateLimit
	mustCreate(t, db, rl, map[string]any{"key": "a", "count": math.MaxInt64})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		_, _, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 1}})
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("IncrementOne err = %v, want ErrInvalid", err)
		}
		_, err = tx.Create(ctx, rl, map[string]any{"key": "b"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mustFind(t, db, rl, core.Eq("key", "b"))
	if row := mustFind(t, db, rl, core.Eq("key", "a")); row.Int("count") != math.MaxInt64 {
		t.Errorf("count = %d, want unchanged", row.Int("count"))
	}
}

// testNestedUnsupported checks that InTx on a tx DB whose adapter cannot
// nest refuses before running fn, while the fallback still works there.
func testNestedUnsupported(t *testing.T) {
	ctx := context.Background()
	rl := core.ModelRateLimit
	c := &txCounter{Adapter: memory.New().WithoutIncrementOne()} // its tx adapter has no Transaction
	db := mustNew(t, c)
	mustCreate(t, db, rl, map[string]any{"key": "a", "count": 1})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		called := false
		err := tx.InTx(ctx, func(context.Context, *core.DB) error { called = true; return nil })
		if !errors.Is(err, core.ErrUnsupported) || called {
			t.Errorf("nested InTx: err %v, fn called %v; want ErrUnsupported before fn", err, called)
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: rl, Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 1}}); err != nil || !ok {
			t.Errorf("the fallback inside the transaction: %v, %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if row := mustFind(t, db, rl, core.Eq("key", "a")); row.Int("count") != 2 {
		t.Errorf("count = %d, want 2", row.Int("count"))
	}
	if n := c.transactions.Load(); n != 1 {
		t.Errorf("%d transactions, want 1: the fallback runs inside the open one", n)
	}
}
