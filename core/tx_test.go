package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// TestInTx runs each InTx test on a fresh DB, on the memory store with its
// native IncrementOne and without it, where the fallback does the work.
func TestInTx(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, db *core.DB)
	}{
		{"the tx DB sees its writes and they commit", testInTxCommits},
		{"an error rolls back every write", testInTxRollsBack},
		{"an error from a DB call inside is returned as it is", testInTxReturnsCallErrors},
	}
	for name, adapter := range incrementPaths {
		for _, test := range tests {
			t.Run(name+"/"+test.name, func(t *testing.T) { test.run(t, mustNew(t, adapter(memory.New()))) })
		}
	}
	t.Run("the tx DB has no native IncrementOne under WithFallback", testInTxFallbackInside)
}

// testInTxCommits checks that the tx DB is like db, sees its own writes and
// commits them when fn returns nil.
func testInTxCommits(t *testing.T, db *core.DB) {
	ctx := context.Background()
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "old", "count": 5})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if tx == db {
			t.Error("fn got the outer DB")
		}
		if tx.NativeIncrement() != db.NativeIncrement() {
			t.Errorf("tx NativeIncrement() = %v, outer %v", tx.NativeIncrement(), db.NativeIncrement())
		}
		if tx.Schema() != db.Schema() {
			t.Error("tx has another schema")
		}
		if _, err := tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "new", "count": 1}); err != nil {
			return err
		}
		if row, ok, err := tx.FindOne(ctx, core.ModelRateLimit, core.Eq("key", "new")); err != nil || !ok || row.Int("count") != 1 {
			t.Errorf("tx FindOne = %v, %v, %v", row, ok, err)
		}
		row, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", "old"), core.Gt("count", 0)}, Increment: map[string]int64{"count": -5}})
		if err != nil || !ok || row.Int("count") != 0 {
			t.Errorf("tx IncrementOne = %v, %v, %v", row, ok, err)
		}
		if n, err := tx.Count(ctx, core.ModelRateLimit); err != nil || n != 2 {
			t.Errorf("tx Count = %d, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	if row := mustFind(t, db, core.ModelRateLimit, core.Eq("key", "new")); row.Int("count") != 1 {
		t.Errorf("committed row %v", row)
	}
	if row := mustFind(t, db, core.ModelRateLimit, core.Eq("key", "old")); row.Int("count") != 0 {
		t.Errorf("committed increment %v", row)
	}
}

// testInTxRollsBack checks that an error from fn undoes every kind of write
// fn made, and comes back wrapped once.
func testInTxRollsBack(t *testing.T, db *core.DB) {
	ctx := context.Background()
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a", "count": 5})
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "b", "count": 7})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if _, err := tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "c"}); err != nil {
			return err
		}
		if _, ok, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
			Where: []core.Where{core.Eq("key", "a")}, Increment: map[string]int64{"count": 1}, Set: map[string]any{"lastRequest": 9}}); err != nil || !ok {
			t.Errorf("tx IncrementOne: %v, %v", ok, err)
		}
		if _, err := tx.UpdateMany(ctx, core.ModelRateLimit, nil, map[string]any{"lastRequest": 3}); err != nil {
			return err
		}
		if ok, err := tx.Delete(ctx, core.ModelRateLimit, core.Eq("key", "b")); err != nil || !ok {
			t.Errorf("tx Delete: %v, %v", ok, err)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("InTx err = %v, want errBoom", err)
	}
	wrappedOnce(t, err, "InTx", "")
	rows, err := db.FindMany(ctx, core.ModelRateLimit, nil, &core.FindOptions{SortBy: "key"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("after rollback: %v, %v", rows, err)
	}
	if rows[0].Text("key") != "a" || rows[0].Int("count") != 5 || rows[0].Int("lastRequest") != 0 ||
		rows[1].Text("key") != "b" || rows[1].Int("count") != 7 || rows[1].Int("lastRequest") != 0 {
		t.Errorf("rows not restored: %v", rows)
	}
}

// testInTxReturnsCallErrors checks that the error of a tx DB call that fn
// returns comes back as that call's error, not wrapped again by InTx.
func testInTxReturnsCallErrors(t *testing.T, db *core.DB) {
	ctx := context.Background()
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a"})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		_, err := tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "a"})
		return err
	})
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	wrappedOnce(t, err, "Create", core.ModelRateLimit)
	err = db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		_, err := tx.Count(ctx, "nope")
		return err
	})
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	wrappedOnce(t, err, "Count", "nope")
}

// testInTxFallbackInside checks that under WithFallback the tx DB's
// IncrementOne takes the fallback too, inside the open transaction.
func testInTxFallbackInside(t *testing.T) {
	ctx := context.Background()
	s := &spy{Memory: memory.New()}
	db := mustNew(t, s, core.WithFallback())
	mustCreate(t, db, core.ModelRateLimit, map[string]any{"key": "a", "count": 1})
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if tx.NativeIncrement() {
			t.Error("tx NativeIncrement() = true")
		}
		_, _, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Increment: map[string]int64{"count": 1}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.increments.Load() != 0 {
		t.Errorf("native IncrementOne ran %d times", s.increments.Load())
	}
	if s.transactions.Load() != 1 {
		t.Errorf("%d transactions, want 1: the fallback runs inside the open one", s.transactions.Load())
	}
	if row := mustFind(t, db, core.ModelRateLimit); row.Int("count") != 2 {
		t.Errorf("count = %d, want 2", row.Int("count"))
	}
}
