package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

func TestInTx(t *testing.T) {
	ctx := context.Background()
	adapters := map[string]func(m *memory.Memory) driver.Adapter{
		"native":   func(m *memory.Memory) driver.Adapter { return m },
		"fallback": func(m *memory.Memory) driver.Adapter { return m.WithoutIncrementOne() },
	}
	for name, adapter := range adapters {
		t.Run(name+"/the tx DB sees its writes and they commit", func(t *testing.T) {
			db := mustNew(t, adapter(memory.New()))
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
		})

		t.Run(name+"/an error rolls back every write", func(t *testing.T) {
			db := mustNew(t, adapter(memory.New()))
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
		})

		t.Run(name+"/an error from a DB call inside is returned as it is", func(t *testing.T) {
			db := mustNew(t, adapter(memory.New()))
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
		})
	}

	t.Run("the tx DB has no native IncrementOne under WithFallback", func(t *testing.T) {
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
	})
}
