package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/memory"
)

// TestWithTx: a DB bound to a transaction of db is taken as it is; a nil
// handle, a DB not bound to a transaction or bound from another DB are
// ErrInvalid; an adapter that cannot bind a caller's handle is
// ErrUnsupported.
func TestWithTx(t *testing.T) {
	ctx := context.Background()
	db, other := mustNew(t, memory.New()), mustNew(t, memory.New())
	if db.InTransaction() || db.Root() != db {
		t.Errorf("a root DB: InTransaction %v, Root %p (want false, itself)", db.InTransaction(), db.Root())
	}
	if _, err := db.WithTx(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("WithTx(nil) = %v, want ErrInvalid", err)
	}
	if _, err := db.WithTx(db); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("WithTx(a DB not bound to a transaction) = %v, want ErrInvalid", err)
	}
	if _, err := db.WithTx("a handle"); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("WithTx on an adapter without driver.TxBinder = %v, want ErrUnsupported", err)
	}
	err := db.InTx(ctx, func(ctx context.Context, tx *core.DB) error {
		if !tx.InTransaction() || tx.Root() != db {
			t.Errorf("InTx's tx: InTransaction %v, Root the outer DB %v", tx.InTransaction(), tx.Root() == db)
		}
		if got, err := db.WithTx(tx); err != nil || got != tx {
			t.Errorf("WithTx(InTx's tx) = %p, %v; want it as it is", got, err)
		}
		if _, err := other.WithTx(tx); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("another DB's WithTx(tx) = %v, want ErrInvalid", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
