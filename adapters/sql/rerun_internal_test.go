package sluicesql

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// abortingDB is a Beginner whose first commits fail as the database
// aborting the transaction for a concurrent writer: a deadlock victim at
// COMMIT (Galera's certification failure), or, on a Galera node, a
// transaction found no longer open before COMMIT.
type abortingDB struct {
	fails  int // commits to fail
	inTx   bool
	abort  error
	begins int
}

func (d *abortingDB) Exec(context.Context, string, ...any) (sql.Result, error) { return nil, nil }
func (d *abortingDB) Query(context.Context, string, ...any) (Rows, error) {
	return nil, errors.New("no queries")
}
func (d *abortingDB) Begin(context.Context) (Tx, error) { d.begins++; return abortingTx{d}, nil }

type abortingTx struct{ d *abortingDB }

func (t abortingTx) Exec(context.Context, string, ...any) (sql.Result, error) { return nil, nil }
func (t abortingTx) Query(context.Context, string, ...any) (Rows, error) {
	return nil, errors.New("no queries")
}
func (t abortingTx) Rollback(context.Context) error { return nil }
func (t abortingTx) Commit(context.Context) error {
	if t.d.fails > 0 {
		t.d.fails--
		return t.d.abort
	}
	return nil
}

// A transaction marked driver.Rerunnable (a policy's) is retried as a
// whole when the database aborts it for a concurrent writer, by the
// engine's rule for its own transactions, and counted in Retries; an
// unmarked one (a caller's) runs once and fails with core.ErrContention,
// for the caller to repeat; and so does a marked one whose aborts outlast
// the rule.
func TestRerunnableTransactionRetried(t *testing.T) {
	deadlock := errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction")
	for _, abort := range []error{deadlock, errClusterAborted} {
		newAdapter := func(fails int) (*Adapter, *abortingDB) {
			db := &abortingDB{fails: fails, abort: abort}
			return &Adapter{e: &engine{opts: Options{Name: "test"}, features: Features{Dialect: MySQL}, t: MySQL.traits()}, x: db, root: true}, db
		}
		runs := 0
		fn := func(context.Context, driver.Adapter) error { runs++; return nil }

		a, _ := newAdapter(3)
		ctx, rt := driver.WithRoundTrips(context.Background())
		if err := a.Transaction(driver.Rerunnable(ctx), fn); err != nil {
			t.Fatalf("%v: a rerunnable transaction aborted 3 times: %v, want it retried to success", abort, err)
		}
		if runs != 4 || rt.Retries() != 3 {
			t.Errorf("%v: fn ran %d times with %d retries counted, want 4 and 3", abort, runs, rt.Retries())
		}

		runs = 0
		a, _ = newAdapter(1)
		if err := a.Transaction(context.Background(), fn); !errors.Is(err, core.ErrContention) || runs != 1 {
			t.Errorf("%v: a caller's transaction aborted once: %v after %d runs, want core.ErrContention after 1", abort, err, runs)
		}

		runs = 0
		a, db := newAdapter(1 << 30)
		a.e.busyWait = 0
		err := a.Transaction(driver.Rerunnable(context.Background()), fn)
		if !errors.Is(err, core.ErrContention) || runs < maxAttempts || db.begins != runs {
			t.Errorf("%v: a rerunnable transaction always aborted: %v after %d runs, want core.ErrContention after at least %d", abort, err, runs, maxAttempts)
		}
	}
}
