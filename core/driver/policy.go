package driver

import (
	"context"
	"time"
)

// PolicyApplier is an optional [SecondaryStorage] capability for the rate
// limiter's policies (several rules on one key, all or nothing): apply
// several steps on several keys in one atomic step, all of them or none.
// adapters/redis runs them in one Lua script and core/memory under its
// locks. Without it the rate limiter refuses policies on that storage.
//
// Each step is a bounded increment ([BoundedIncrementer]: By, Max, TTL)
// or, with TAT set, a TAT advance ([TATAdvancer]: Now, By as the
// increment, Max as the limit). A step fits when it would succeed alone.
// When every step that is not Optional fits, ApplyPolicy applies each
// step that fits (every required one, and the optional ones that fit) and
// ok is true; otherwise it changes nothing and ok is false. Either way it
// reports, in each step, whether it fits and the counter as it was before
// the call: Value (0 when absent; for a TAT step, the stored TAT) and
// TTL (0 when absent or without expiry).
//
// The keys of one call must be able to meet in one atomic step: on Redis
// Cluster, in one slot; the rate limiter's keys of one policy share a hash
// tag ({key}).
type PolicyApplier interface {
	ApplyPolicy(ctx context.Context, steps []PolicyStep) (ok bool, err error)
}

// PolicyStep is one step of [PolicyApplier.ApplyPolicy]: its input, and
// what the call reports.
type PolicyStep struct {
	Key string
	// TAT makes the step a TAT advance; otherwise it is a bounded increment.
	TAT bool
	// By is the increment; Max the bound (a TAT step's limit).
	By, Max int64
	// TTL is a new counter's expiry (bounded increments; positive).
	TTL time.Duration
	// Now is the caller's clock in epoch milliseconds (TAT steps).
	Now int64
	// Optional steps (a shadow rule's) are applied when they fit and the
	// others do; not fitting fails nothing.
	Optional bool

	// Fits, Value and TTLLeft are what the call reports.
	Fits    bool
	Value   int64
	TTLLeft time.Duration
}
