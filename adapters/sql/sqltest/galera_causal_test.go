package sqltest_test

import (
	"context"
	"testing"
	"time"

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
	verifier := func(dsn string, create bool) *apikey.Manager {
		m, err := apikey.New(openNode(t, ctx, b, dsn, s, create))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	creator := verifier(dsns[0], true)
	causal := verifier(dsns[1], false)
	plain := verifier(withParam(dsns[1], "wsrep_on=0"), false)
	resume := pauseAppliers(t, ctx, b, dsns[1])

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
	awaitStatement(t, ctx, b, dsns[1], "SET STATEMENT wsrep_sync_wait%", done)
	resume()
	a := <-done
	if a.err != nil || !a.r.Valid {
		t.Fatalf("the causal verification on node 2 after it caught up: %+v, %v; want valid", a.r, a.err)
	}
}
