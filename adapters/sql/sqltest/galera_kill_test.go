package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/ratelimit"
	"github.com/sluice-go/sluice/gen"
)

// TestGaleraNodeKilled kills the last node of the Galera cluster with
// SIGKILL in the middle of a burst of rate-limit decisions spread over one
// pool per node, then restarts it. No key is over-admitted; the only
// errors are core.ErrUnavailable, from the killed node's limiter; the other
// nodes decide on; once the node has rejoined, its pool decides again,
// exactly, and reads what the others wrote while it was away. It needs the
// cluster's folder (SLUICE_GALERA_DIR) and runs alone: CI runs it in a
// step of its own, as the other suites would see the node go.
func TestGaleraNodeKilled(t *testing.T) {
	dir := adaptertest.GaleraDir(t)
	dsns := adaptertest.GaleraDSNs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	_, dbs := galeraNodes(t, ctx, dsns)
	victim := len(dbs) - 1
	clock := adaptertest.NewClock(time.UnixMilli(1_767_225_600_000))
	var ls []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db), ratelimit.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	keys := []string{"k0", "k1", "k2", "k3"}
	rule := ratelimit.Rule{Window: time.Hour, Max: 150}
	admitted := burstKillingANode(t, ctx, ls, keys, rule, victim, func() { kill(t, dir, victim) })
	for k, key := range keys {
		row, ok, err := dbs[0].FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", key, ok, err)
		}
		if n, c := admitted[k], row.Int("count"); n > rule.Max || c > rule.Max || c < n {
			t.Errorf("%s: %d admitted, count %d stored, max %d: over-admitted or lost", key, n, c, rule.Max)
		}
	}
	restart(t, ctx, dir, victim, dsns[victim])
	checkRejoined(t, ctx, dbs, ls, victim, keys)
}

// burstKillingANode spreads 8 callers per limiter, 40 decisions each
// (about twice the keys' budget), over keys, and calls kill when a fifth of
// them are done. It returns how many each key admitted, and fails the test
// when no call failed (the node did not die mid-burst) or when one failed
// on a surviving node or with an error other than core.ErrUnavailable.
func burstKillingANode(t *testing.T, ctx context.Context, ls []*ratelimit.Limiter, keys []string, rule ratelimit.Rule, victim int, kill func()) []int64 {
	const callers, each = 8, 40
	var done atomic.Int64
	var killOnce sync.Once
	admitted := make([]atomic.Int64, len(keys))
	var failed, wrongNode, wrongClass atomic.Int64
	var firstErr atomic.Value
	adaptertest.Release(len(ls)*callers, func(g int) {
		node := g % len(ls)
		for i := range each {
			if done.Add(1) == int64(len(ls)*callers*each/5) {
				killOnce.Do(kill)
			}
			k := (g + i) % len(keys)
			d, err := ls[node].Consume(ctx, keys[k], rule)
			switch {
			case err != nil:
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				if node != victim {
					wrongNode.Add(1)
				}
				if !errors.Is(err, core.ErrUnavailable) {
					wrongClass.Add(1)
				}
			case d.Allowed:
				admitted[k].Add(1)
			}
		}
	})
	if wrongNode.Load() > 0 || wrongClass.Load() > 0 {
		t.Errorf("%d errors (%d on the surviving nodes, %d not core.ErrUnavailable), first: %v", failed.Load(), wrongNode.Load(), wrongClass.Load(), firstErr.Load())
	}
	if failed.Load() == 0 {
		t.Errorf("no call failed: the node was not killed mid-burst")
	}
	t.Logf("%d calls failed with core.ErrUnavailable on the killed node", failed.Load())
	counts := make([]int64, len(keys))
	for k := range admitted {
		counts[k] = admitted[k].Load()
	}
	return counts
}

// checkRejoined: the rejoined node reads what the others wrote while it
// was away, and its pool decides again, exactly, with the others on a
// fresh key.
func checkRejoined(t *testing.T, ctx context.Context, dbs []*core.DB, ls []*ratelimit.Limiter, victim int, keys []string) {
	t.Helper()
	for _, key := range keys {
		row, _, err := dbs[victim].FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
		if err != nil {
			t.Fatalf("after the rejoin: %v", err)
		}
		want, _, _ := dbs[0].FindOne(ctx, core.ModelRateLimit, core.Eq("key", key))
		if row.Int("count") != want.Int("count") {
			t.Errorf("%s: the rejoined node reads count %d, the others %d", key, row.Int("count"), want.Int("count"))
		}
	}
	var after, afterErr atomic.Int64
	adaptertest.Release(64, func(g int) {
		d, err := ls[(victim+g)%len(ls)].Consume(ctx, "fresh", ratelimit.Rule{Window: time.Hour, Max: 10})
		if err != nil {
			afterErr.Add(1)
			return
		}
		if d.Allowed {
			after.Add(1)
		}
	})
	if after.Load() != 10 || afterErr.Load() != 0 {
		t.Errorf("after the rejoin 64 requests on a fresh key with max 10 over every node: %d admitted, %d errors", after.Load(), afterErr.Load())
	}
}

// createOn creates the schema's tables through pool, dropped at the end.
func createOn(t *testing.T, ctx context.Context, pool *sql.DB, s *core.Schema) {
	t.Helper()
	stmts, err := gen.DDL(s, gen.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range gen.DropDDL(s, gen.MySQL) {
			_, _ = pool.ExecContext(context.Background(), q)
		}
	})
	for _, q := range stmts {
		if _, err := pool.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// kill sends SIGKILL to node i (from 0) of the cluster in dir and waits for
// it to exit.
func kill(t *testing.T, dir string, i int) {
	raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d", i+1), "pid"))
	if err != nil {
		t.Errorf("reading the node's pid: %v", err)
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Errorf("the node's pid: %v", err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("killing node %d (pid %d): %v", i+1, pid, err)
	}
}

// restart starts node i again with its run script and waits, polling the
// server's status, until it has rejoined and is Synced.
func restart(t *testing.T, ctx context.Context, dir string, i int, dsn string) {
	t.Helper()
	run := filepath.Join(dir, fmt.Sprintf("node%d", i+1), "run")
	if out, err := exec.CommandContext(ctx, "sh", run).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", run, err, out)
	}
	pool, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		var name, state string
		if err := pool.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state); err == nil && state == "Synced" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %d did not rejoin: %v (see %s)", i+1, ctx.Err(), filepath.Dir(run))
		case <-tick.C:
		}
	}
}

// galeraNodes opens one pool and one core.DB per node of dsns over a
// counter table of a name of its own, created through the first node and
// seen by each (a read on each waits for the replicated DDL).
func galeraNodes(t *testing.T, ctx context.Context, dsns []string) ([]*sql.DB, []*core.DB) {
	t.Helper()
	b := mysqlBackend(false)
	s := core.MustSchema(uniqueNaming(), adaptertest.CounterModel())
	var pools []*sql.DB
	var dbs []*core.DB
	for i, dsn := range dsns {
		pool, db := openNodePool(t, ctx, b, dsn, s, i == 0)
		pools, dbs = append(pools, pool), append(dbs, db)
	}
	return pools, dbs
}
