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
type RoundTrips struct{ n atomic.Int64 }

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
