package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// A tx kept past its InTx (committed or rolled back, at any depth) is
// refused by every call with core.ErrInvalid before the adapter sees it,
// and writes nothing; the DB it came from goes on.
func TestInTxEndedHandleRefused(t *testing.T) {
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		m := memory.New()
		db := mustNew(t, m)
		var outer, inner *core.DB
		_ = db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
			outer = tx
			if err := tx.InTx(ctx, func(_ context.Context, tx *core.DB) error { inner = tx; return nil }); err != nil {
				t.Fatal(err)
			}
			// the savepoint ended: its handle is refused, the transaction's is not
			if _, err := inner.Create(ctx, core.ModelRateLimit, map[string]any{"key": "inner", "count": 1}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("the ended savepoint's tx: Create = %v, want core.ErrInvalid", err)
			}
			if _, err := tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "live", "count": 1}); err != nil {
				t.Errorf("the live tx: %v", err)
			}
			if !commit {
				return errors.New("roll back")
			}
			return nil
		})
		before := m.Calls()
		for name, tx := range map[string]*core.DB{"outer": outer, "inner": inner} {
			if _, err := tx.Create(ctx, core.ModelRateLimit, map[string]any{"key": "late", "count": 1}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("commit %v, %s tx after InTx: Create = %v, want core.ErrInvalid", commit, name, err)
			}
			if _, _, err := tx.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit, Where: []core.Where{core.Eq("key", "live")},
				Increment: map[string]int64{"count": 1}}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("commit %v, %s tx after InTx: IncrementOne = %v, want core.ErrInvalid", commit, name, err)
			}
			if err := tx.InTx(ctx, func(context.Context, *core.DB) error { return nil }); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("commit %v, %s tx after InTx: InTx = %v, want core.ErrInvalid", commit, name, err)
			}
		}
		if n := m.Calls() - before; n != 0 {
			t.Errorf("commit %v: %d adapter calls through ended handles", commit, n)
		}
		if n, err := db.Count(ctx, core.ModelRateLimit, core.Eq("key", "late")); err != nil || n != 0 {
			t.Errorf("commit %v: %d late rows (%v), want none", commit, n, err)
		}
	}
}
