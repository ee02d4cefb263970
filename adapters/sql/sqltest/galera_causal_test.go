package sqltest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sluicesql "github.com/sluice-go/sluice/adapters/sql"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

// TestGaleraCausalReadWaitsForALaggingNode is the deterministic proof
// behind RunCluster's KeyCreatedThenVerifiedElsewhere, whose misses
// without causal reads are statistical: it makes node 2 lag on purpose.
// FLUSH TABLES WITH READ LOCK on node 2 pauses its appliers (the node
// desyncs; the others commit on), so a key created on node 1 is not on
// node 2 until UNLOCK TABLES. A verifier on node 2 whose session has
// wsrep_on=0 (the engine then sees no Galera node: no causal reads, as
// before #38) finds the key INVALID, every time; the verifier the engine
// makes on node 2 waits (SET STATEMENT wsrep_sync_wait=1) and, once the
// node has applied the commit, finds it valid.
func TestGaleraCausalReadWaitsForALaggingNode(t *testing.T) {
	dsns := adaptertest.GaleraDSNs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b := mysqlBackend(false)
	s := core.MustSchema(uniqueNaming(), adaptertest.CounterModel())
	open := func(dsn string, create bool) *apikey.Manager {
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
		if _, _, err := db.FindOne(ctx, core.ModelAPIKey, core.Eq("key", "-")); err != nil { // the node has the tables
			t.Fatal(err)
		}
		m, err := apikey.New(db)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	creator := open(dsns[0], true)
	causal := open(dsns[1], false)
	sep := "?"
	if strings.Contains(dsns[1], "?") {
		sep = "&"
	}
	plain := open(dsns[1]+sep+"wsrep_on=0", false)

	lockPool := b.open(t, dsns[1])
	t.Cleanup(func() { _ = lockPool.Close() })
	lock, err := lockPool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_, _ = lock.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES")
		}
	}()

	key, _, err := creator.Create(ctx, apikey.CreateParams{ReferenceID: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := plain.Verify(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid {
		t.Fatal("a verifier without causal reads found the key on a node whose appliers are paused: the lag this test relies on is missing")
	}

	type answer struct {
		r   apikey.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := causal.Verify(ctx, key)
		done <- answer{r, err}
	}()
	// The causal read is waiting on node 2 before the node catches up.
	watch := b.open(t, dsns[1])
	t.Cleanup(func() { _ = watch.Close() })
	for waiting := 0; waiting == 0; {
		select {
		case a := <-done:
			t.Fatalf("the causal verification answered while node 2 lagged: %+v, %v", a.r, a.err)
		case <-ctx.Done():
			t.Fatal("the causal read never showed in node 2's process list")
		case <-time.After(10 * time.Millisecond):
		}
		if err := watch.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SET STATEMENT wsrep_sync_wait%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	locked = false
	a := <-done
	if a.err != nil || !a.r.Valid {
		t.Fatalf("the causal verification on node 2 after it caught up: %+v, %v; want valid", a.r, a.err)
	}
}
