package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
)

// TestGaleraTransactionWaitsForALaggingNode: a node ignores
// wsrep_sync_wait inside a transaction, so a transaction of the engine's
// own (core's fallback, the MySQL locking path, a policy's, InTx) would
// judge rows the node had not yet applied and report a false miss, as the
// conformance suite's multi-row race once did across nodes. Node 2 lags on
// purpose (FLUSH TABLES WITH READ LOCK pauses its appliers); a row created
// on node 1 is not found in a transaction on node 2 whose session has
// wsrep_on=0 (no catching up: the engine sees no Galera node), and is
// found by the engine's transaction on node 2, which begins once the node
// has caught up (SET STATEMENT wsrep_sync_wait=1 FOR SELECT 1, waiting
// until UNLOCK TABLES).
func TestGaleraTransactionWaitsForALaggingNode(t *testing.T) {
	dsns := adaptertest.GaleraDSNs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b := mysqlBackend(false)
	s := core.MustSchema(uniqueNaming(), adaptertest.CounterModel())
	creator := openNode(t, ctx, b, dsns[0], s, true)
	causal := openNode(t, ctx, b, dsns[1], s, false)
	plain := openNode(t, ctx, b, withParam(dsns[1], "wsrep_on=0"), s, false)
	resume := pauseAppliers(t, ctx, b, dsns[1])

	if _, err := creator.Create(ctx, "counter", map[string]any{"name": "lag", "budget": 1}); err != nil {
		t.Fatal(err)
	}
	found := func(db *core.DB) (ok bool, err error) {
		err = db.InTx(ctx, func(ctx context.Context, tx *core.DB) (err error) {
			_, ok, err = tx.FindOne(ctx, "counter", core.Eq("name", "lag"))
			return err
		})
		return ok, err
	}
	if ok, err := found(plain); err != nil || ok {
		t.Fatalf("a transaction without catching up on a node whose appliers are paused: found %v, %v; the lag this test relies on is missing", ok, err)
	}
	done := make(chan error, 1)
	go func() {
		ok, err := found(causal)
		if err == nil && !ok {
			err = errors.New("the engine's transaction on node 2 did not find the row node 1 created: a false miss")
		}
		done <- err
	}()
	awaitStatement(t, ctx, b, dsns[1], "SET STATEMENT wsrep_sync_wait%", done)
	resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// openNode is a core.DB on one node through the engine, the schema's
// tables created first when create; it returns once the node has them.
func openNode(t *testing.T, ctx context.Context, b backend, dsn string, s *core.Schema, create bool) *core.DB {
	t.Helper()
	_, db := openNodePool(t, ctx, b, dsn, s, create)
	return db
}

// openNodePool is openNode with the pool under the core.DB.
func openNodePool(t *testing.T, ctx context.Context, b backend, dsn string, s *core.Schema, create bool) (*sql.DB, *core.DB) {
	t.Helper()
	pool := b.open(t, dsn)
	t.Cleanup(func() { _ = pool.Close() })
	if create {
		createOn(t, ctx, pool, s)
	}
	a, err := sluicesql.NewDB(ctx, pool, sluicesql.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := core.New(a, core.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.FindOne(ctx, "counter", core.Eq("name", "-")); err != nil { // a causal read: the node has the tables
		t.Fatal(err)
	}
	return pool, db
}

// withParam adds one parameter to a go-sql-driver DSN.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

// pauseAppliers makes the node at dsn lag: FLUSH TABLES WITH READ LOCK
// stops it applying other nodes' commits (the others commit on) until the
// returned resume, or the test's end, unlocks it.
func pauseAppliers(t *testing.T, ctx context.Context, b backend, dsn string) (resume func()) {
	t.Helper()
	pool := b.open(t, dsn)
	t.Cleanup(func() { _ = pool.Close() })
	lock, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	locked := true
	resume = func() {
		if locked {
			locked = false
			if _, err := lock.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES"); err != nil {
				t.Error(err)
			}
			_ = lock.Close()
		}
	}
	t.Cleanup(resume)
	return resume
}

// awaitStatement returns once a statement like pattern runs on the node
// at dsn (it shows in the process list): the call sending it waits there.
// done answering first fails the test.
func awaitStatement[T any](t *testing.T, ctx context.Context, b backend, dsn, pattern string, done <-chan T) {
	t.Helper()
	watch := b.open(t, dsn)
	t.Cleanup(func() { _ = watch.Close() })
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		q := "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'"
		if err := watch.QueryRowContext(ctx, q, pattern).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case a := <-done:
			t.Fatalf("answered before waiting on the lagging node for %q: %v", pattern, a)
		case <-ctx.Done():
			t.Fatalf("%q never showed in the node's process list", pattern)
		case <-tick.C:
		}
	}
}
