package apikey

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

var errRollback = errors.New("roll back")

// inTx runs fn in a transaction of e's database, committed when commit
// is true and rolled back otherwise.
func (e *env) inTx(t *testing.T, commit bool, fn func(ctx context.Context, tx *core.DB)) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx *core.DB) error {
		fn(ctx, tx)
		if !commit {
			return errRollback
		}
		return nil
	})
	if commit && err != nil || !commit && !errors.Is(err, errRollback) {
		t.Fatalf("InTx: %v", err)
	}
}

// TestInCommitKeepsRollbackRefunds: a verification through In spends the
// quota in the caller's transaction; a rollback refunds it, and the next
// verification outside, in database and cached mode, is exact.
func TestInCommitKeepsRollbackRefunds(t *testing.T) {
	for name, e := range map[string]*env{"database": newEnv(t), "cached": newEnv(t, WithCache(memory.NewStorage(), time.Hour))} {
		t.Run(name, func(t *testing.T) {
			quota := int64(3)
			plain, _ := e.create(t, CreateParams{Remaining: &quota})
			remaining := func(r Result) int64 {
				if r.Key == nil || r.Key.Remaining == nil {
					return -1
				}
				return *r.Key.Remaining
			}
			e.inTx(t, true, func(ctx context.Context, tx *core.DB) {
				if r, err := e.m.In(tx).Verify(ctx, plain); err != nil || !r.Valid || remaining(r) != 2 {
					t.Errorf("committed: %+v, %v; want valid with 2 left", r, err)
				}
			})
			e.inTx(t, false, func(ctx context.Context, tx *core.DB) {
				v := e.m.In(tx)
				for want := int64(1); want >= 0; want-- {
					if r, err := v.Verify(ctx, plain); err != nil || !r.Valid || remaining(r) != want {
						t.Errorf("rolled back: %+v, %v; want valid with %d left", r, err, want)
					}
				}
				if r, err := v.Verify(ctx, plain); err != nil || r.Code != CodeUsageExceeded {
					t.Errorf("rolled back, over quota: %+v, %v; want usage exceeded", r, err)
				}
			})
			for want := int64(1); want >= 0; want-- {
				if r := e.verify(t, plain); !r.Valid || remaining(r) != want {
					t.Errorf("outside after the rollback: %+v; want valid with %d left", r, want)
				}
			}
			if r := e.verify(t, plain); r.Code != CodeUsageExceeded {
				t.Errorf("outside, over quota: %+v", r)
			}
		})
	}
}

// TestInRefuses: what a view cannot do fails with core.ErrInvalid and
// writes nothing.
func TestInRefuses(t *testing.T) {
	ctx := context.Background()
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want ErrInvalid naming %q", err, want)
		}
	}
	e := newEnv(t)
	quota := int64(5)
	plain, k := e.create(t, CreateParams{Remaining: &quota})
	t.Run("nil transaction", func(t *testing.T) {
		_, err := e.m.In(nil).Verify(ctx, plain)
		refused(t, err, "nil transaction")
	})
	t.Run("a DB not bound to a transaction", func(t *testing.T) {
		_, err := e.m.In(e.db).Verify(ctx, plain)
		refused(t, err, "not bound to a transaction")
	})
	t.Run("a transaction of another core.DB", func(t *testing.T) {
		other := newEnv(t)
		other.inTx(t, true, func(ctx context.Context, tx *core.DB) {
			_, err := e.m.In(tx).Verify(ctx, plain)
			refused(t, err, "another core.DB")
		})
	})
	t.Run("storage-only manager", func(t *testing.T) {
		sm, _, _ := newStoreEnv(t)
		e.inTx(t, true, func(ctx context.Context, tx *core.DB) {
			_, err := sm.In(tx).Verify(ctx, plain)
			refused(t, err, "NewStorageOnly")
		})
	})
	t.Run("a change to a key on a manager WithCache", func(t *testing.T) {
		c := newEnv(t, WithCache(memory.NewStorage(), time.Hour))
		cplain, ck := c.create(t, CreateParams{})
		off := false
		c.inTx(t, true, func(ctx context.Context, tx *core.DB) {
			_, err := c.m.In(tx).Update(ctx, ck.ID, UpdateParams{Enabled: &off})
			refused(t, err, "WithCache")
		})
		if r := c.verify(t, cplain); !r.Valid {
			t.Errorf("the key after the refused change: %+v, want valid", r)
		}
	})
	if got, err := e.m.Get(ctx, k.ID); err != nil || got.Remaining == nil || *got.Remaining != quota {
		t.Errorf("the key after refusals: %+v, %v; want %d left", got, err, quota)
	}
}
