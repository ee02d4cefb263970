package driver

import (
	"context"
	"sync/atomic"
)

// RoundTrips counts the round trips storages make on behalf of one
// context: the statements a SQL adapter sends (BEGIN and COMMIT included),
// the commands or scripts a key-value store runs. The rate limiter and
// the API-key verifier use it to report each decision's round trips to an
// observer; see [WithRoundTrips].
//
// It also counts the conflicts the storage retried for that context
// (deadlock victims, Galera certification failures, serialization
// failures: [RoundTrips.Retries]) and, under core.Route, which node of the
// cluster answered last ([RoundTrips.Node]).
type RoundTrips struct {
	n, retries atomic.Int64
	node       atomic.Int64 // the node's index + 1; 0 for none
}

// Retries returns how many conflicts were retried so far.
func (r *RoundTrips) Retries() int64 {
	if r == nil {
		return 0
	}
	return r.retries.Load()
}

// Node returns the index (in core.Route's order) of the cluster node that
// answered the last call, or -1 when no router chose one.
func (r *RoundTrips) Node() int {
	if r == nil {
		return -1
	}
	return int(r.node.Load()) - 1
}

// AddRetries is for adapter authors: call it once per statement or
// transaction retried under ctx because the database aborted it for a
// concurrent writer. It does nothing unless ctx comes from [WithRoundTrips].
func AddRetries(ctx context.Context, n int64) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.retries.Add(n)
	}
}

// SetNode records that node i of a cluster answers the call under ctx
// (core.Route calls it). It does nothing unless ctx comes from
// [WithRoundTrips].
func SetNode(ctx context.Context, i int) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.node.Store(int64(i) + 1)
	}
}

// Count returns the round trips counted so far.
func (r *RoundTrips) Count() int64 {
	if r == nil {
		return 0
	}
	return r.n.Load()
}

type roundTripsKey struct{}

// WithRoundTrips returns a context under which adapters count their round
// trips into the returned counter, and the counter. Without it, counting
// costs a context lookup and nothing else.
func WithRoundTrips(ctx context.Context) (context.Context, *RoundTrips) {
	r := new(RoundTrips)
	return context.WithValue(ctx, roundTripsKey{}, r), r
}

// AddRoundTrips is for adapter authors: call it once per statement,
// command or script sent to the server under ctx. It does nothing unless
// ctx comes from [WithRoundTrips].
func AddRoundTrips(ctx context.Context, n int64) {
	if r, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		r.n.Add(n)
	}
}
