package sqltest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// waitForLockWaiter returns once PostgreSQL shows a session waiting on a
// lock in a statement on e's rate-limit table.
func waitForLockWaiter(t *testing.T, e *env) {
	t.Helper()
	table, _ := e.schema.Table(core.ModelRateLimit)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	for waiting := 0; waiting == 0; {
		err := e.sqldb.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, table.Name).Scan(&waiting)
		if err != nil {
			t.Fatalf("waiting for a transaction to wait on a lock: %v", err)
		}
	}
}

// TestInTxOfAnotherPoolRefused: a *sql.Tx begun on another pool than the
// adapter's (here on the same database, which database/sql cannot tell
// from another one) is refused with core.ErrInvalid, and nothing is
// charged.
func TestInTxOfAnotherPoolRefused(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		l, err := ratelimit.New(ratelimit.Database(e.db), ratelimit.WithFailOpen())
		if err != nil {
			t.Fatal(err)
		}
		other := e.b.open(t, e.dsn)
		defer other.Close()
		tx, err := other.BeginTx(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		d, err := l.In(tx).Consume(e.ctx, "k", ratelimit.Rule{Window: time.Minute, Max: 5})
		if !errors.Is(err, core.ErrInvalid) || d.Allowed || !strings.Contains(err.Error(), "another *sql.DB") {
			t.Errorf("Consume in another pool's transaction: %+v, %v; want denied, ErrInvalid naming the pool", d, err)
		}
		if n, err := e.db.Count(e.ctx, core.ModelRateLimit); err != nil || n != 0 {
			t.Errorf("%d rows (%v), want none charged", n, err)
		}
	})
}

// TestInTxSecondTransactionWaits states the cost of charging in a
// transaction on PostgreSQL: the charged key's row stays locked until the
// first transaction commits, so a second one charging the same key waits
// (seen in pg_stat_activity as waiting on a lock), then decides on the
// committed charge.
func TestInTxSecondTransactionWaits(t *testing.T) {
	e := newEnv(t, postgresBackend())
	l, err := ratelimit.New(ratelimit.Database(e.db))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	if _, err := l.Consume(e.ctx, "k", rule); err != nil { // the row in place
		t.Fatal(err)
	}
	first, err := e.sqldb.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	if d, err := l.In(first).Consume(e.ctx, "k", rule); err != nil || !d.Allowed || d.Remaining != 3 {
		t.Fatalf("the first transaction: %+v, %v", d, err)
	}
	type result struct {
		d   ratelimit.Decision
		err error
	}
	second := make(chan result, 1)
	go func() {
		tx, err := e.sqldb.BeginTx(e.ctx, nil)
		if err != nil {
			second <- result{err: err}
			return
		}
		d, err := l.In(tx).Consume(e.ctx, "k", rule)
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		second <- result{d, err}
	}()
	waitForLockWaiter(t, e)
	select {
	case r := <-second:
		t.Fatalf("the second transaction decided while the first held the row: %+v, %v", r.d, r.err)
	default:
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-second
	if r.err != nil || !r.d.Allowed || r.d.Remaining != 2 {
		t.Errorf("the second transaction after the first committed: %+v, %v; want admitted with 2 left", r.d, r.err)
	}
}

// TestInTxFreshKeyConflictKeepsTransactionUsable: on PostgreSQL, where an
// error aborts the whole transaction, two transactions charging one fresh
// key both insert its row; the second's insert waits for the first and,
// once it commits, finds the key taken. That conflict (ON CONFLICT DO
// NOTHING) does not abort the second transaction: it charges the row the
// first made, writes after the charge, and commits.
func TestInTxFreshKeyConflictKeepsTransactionUsable(t *testing.T) {
	e := newEnv(t, postgresBackend())
	l, err := ratelimit.New(ratelimit.Database(e.db))
	if err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 5}
	first, err := e.sqldb.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	if d, err := l.In(first).Consume(e.ctx, "fresh", rule); err != nil || !d.Allowed || d.Remaining != 4 {
		t.Fatalf("the first transaction: %+v, %v", d, err)
	}
	second := make(chan error, 1)
	go func() {
		tx, err := e.sqldb.BeginTx(e.ctx, nil)
		if err != nil {
			second <- err
			return
		}
		defer tx.Rollback()
		d, err := l.In(tx).Consume(e.ctx, "fresh", rule)
		switch {
		case err != nil:
		case !d.Allowed || d.Remaining != 3:
			err = errors.New("not admitted with 3 left after the first's commit")
		default:
			txdb, werr := e.db.WithTx(tx)
			if err = werr; err == nil {
				_, err = txdb.Create(e.ctx, "counter", map[string]any{"name": "after"})
			}
			if err == nil {
				err = tx.Commit()
			}
		}
		second <- err
	}()
	waitForLockWaiter(t, e)
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second transaction: %v", err)
	}
	if n, err := e.db.Count(e.ctx, "counter", core.Eq("name", "after")); err != nil || n != 1 {
		t.Errorf("the second transaction's write after the charge: %d rows, %v", n, err)
	}
	if d, err := l.Check(e.ctx, "fresh", rule); err != nil || d.Remaining != 3 {
		t.Errorf("after both: %+v, %v; want 3 left", d, err)
	}
}
