package sluicesql

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// A MariaDB Galera node (Features.CausalReads) answers from what it has
// applied, which may lag the cluster's certified commits. The engine makes
// the answers it takes for the truth causal in three ways: a read outside
// a transaction waits for itself (builder.read's prefix); a transaction
// of the engine's own starts once the node has caught up, since the node
// ignores wsrep_sync_wait inside a transaction (checked on 10.11: a
// causal SELECT after BEGIN answered at once, without a row node 1 had
// committed); and an autocommit write that matched nothing runs once more
// after the node has caught up (rerunAfterMiss).

// causalReadPrefix makes one MariaDB Galera statement causal: the node
// waits until it has applied every write set certified before it began
// (wsrep_sync_wait bit 1: reads), for this statement alone.
const causalReadPrefix = "SET STATEMENT wsrep_sync_wait=1 FOR "

// catchUp, on a Galera node outside a transaction, waits until the node
// has applied every commit the cluster certified before the call: one
// causal SELECT 1 on the executor's node. Whatever runs after it on that
// node, on any connection, sees those commits. Elsewhere it does nothing.
func (a *Adapter) catchUp(ctx context.Context) error {
	if !a.e.features.CausalReads || a.inTx {
		return nil
	}
	_, err := retried(a, ctx, func() (int64, error) { return a.scalar(ctx, causalReadPrefix+"SELECT 1", nil) })
	return err
}

// rerunAfterMiss runs an autocommit write, op, whose ok == false (it
// matched nothing) is taken for the truth. On a Galera node the write may
// have judged rows the node had not yet applied (a row created on another
// node, a counter another node reset), so after a miss the node catches
// up and op runs once more: a miss then is a miss at a moment after the
// call began. Only misses pay: a write that matched was judged on the row
// it locked, which certification keeps current.
func rerunAfterMiss[T any](a *Adapter, ctx context.Context, op func() (T, bool, error)) (T, bool, error) {
	v, ok, err := op()
	if err != nil || ok || !a.e.features.CausalReads || a.inTx {
		return v, ok, err
	}
	if err := a.catchUp(ctx); err != nil {
		return v, false, err
	}
	return op()
}

// errClusterAborted is stillInTransaction's finding: retryable, as a
// deadlock is (see classify), since nothing of the transaction took effect.
var errClusterAborted = errors.New("the cluster aborted the transaction (no longer in it before COMMIT)")

// stillInTransaction, on a Galera node (Features.CausalReads), asks the
// server whether the engine's transaction is still open before it is
// committed. A node that aborted the transaction for another node's
// conflicting write set while the client sat between two statements could
// let the statements after it run outside the transaction, each on its
// own, so that COMMIT had nothing to commit and succeeded: through core's
// fallback and the policies' transactions, across nodes, one caller too
// many was admitted in most runs. Such a transaction is a conflict
// (core.ErrContention), retried as a whole by whoever runs it.
func (a *Adapter) stillInTransaction(ctx context.Context) error {
	if !a.e.features.CausalReads {
		return nil
	}
	n, err := a.scalar(ctx, "SELECT @@in_transaction", nil)
	if err != nil {
		return a.e.mapErr(err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s: %w", core.ErrContention, a.e.name(), errClusterAborted)
	}
	return nil
}
