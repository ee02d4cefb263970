package sqltest_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// TestGaleraCallerTxAcrossNodes is why RunCluster runs a caller's
// transactions (Limiter.In) on one node only, and what a user gets across
// nodes: two callers' transactions on two nodes charge one key; the first
// commits; the second, whose charge the cluster can no longer certify,
// fails at its own COMMIT (database/sql's, not sluice's) with the driver's
// error 1213, and nothing of it is stored: the caller repeats the
// transaction. The stored count is the committed charge alone.
func TestGaleraCallerTxAcrossNodes(t *testing.T) {
	dsns := adaptertest.GaleraDSNs(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pools, dbs := galeraNodes(t, ctx, dsns[:2])
	var ls []*ratelimit.Limiter
	for _, db := range dbs {
		l, err := ratelimit.New(ratelimit.Database(db))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	rule := ratelimit.Rule{Window: time.Hour, Max: 10}
	if d, err := ls[0].Consume(ctx, "k", rule); err != nil || !d.Allowed { // the row exists on every node
		t.Fatalf("first charge: %+v, %v", d, err)
	}
	var txs []*sql.Tx
	for i := range 2 {
		tx, err := pools[i].BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		d, err := ls[i].In(tx).Consume(ctx, "k", rule)
		if err != nil || !d.Allowed {
			t.Fatalf("node %d: the charge in the caller's transaction: %+v, %v", i+1, d, err)
		}
		txs = append(txs, tx)
	}
	if err := txs[0].Commit(); err != nil {
		t.Fatalf("node 1's commit: %v", err)
	}
	err := txs[1].Commit()
	if err == nil || !strings.Contains(err.Error(), "Error 1213") {
		t.Fatalf("node 2's commit after node 1 committed a charge of the same key: %v, want the driver's error 1213 (a certification conflict)", err)
	}
	d, err := ls[1].Check(ctx, "k", rule)
	if err != nil {
		t.Fatal(err)
	}
	if d.Remaining != rule.Max-2 {
		t.Fatalf("remaining %d, want %d: the first charge and node 1's committed one, not node 2's", d.Remaining, rule.Max-2)
	}
}
