package ratelimit

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// Event is one decision of a [Limiter] as an observer sees it: what was
// asked, what was answered, and what it cost. See [WithObserver].
type Event struct {
	Key string
	// Rule is the rule decided: for a policy, its binding rule (see
	// [Limiter.ConsumePolicy]; zero on an error), every rule's decision
	// being in Decision.Rules.
	Rule Rule
	// Policy is the policy decided by ConsumePolicy or CheckPolicy; nil
	// for a lone rule.
	Policy   Policy
	Cost     int64 // 0 for Check
	Mode     Mode
	Storage  string // "database", "secondary" or "memory"
	Decision Decision
	// Err is the decision's error: bad input, or a storage failure (then
	// Decision.Allowed is the failure policy's answer).
	Err error
	// Start is when the decision began (wall clock, not WithClock's), and
	// Latency how long it took.
	Start   time.Time
	Latency time.Duration
	// RoundTrips is how many statements or commands the storage sent for
	// this decision (see driver.RoundTrips): 0 for a denial from the denial
	// cache and for Memory storage.
	RoundTrips int64
	// Retries is how many of them were sent again because the database
	// aborted a statement or transaction for a concurrent writer (a
	// deadlock victim, a Galera certification failure; see
	// driver.RoundTrips.Retries).
	Retries int64
	// Node is the index of the cluster node that answered, under
	// route.New (see driver.RoundTrips.Node); -1 otherwise.
	Node int
	// Leased is how many units of the key, under the rule, the limiter
	// holds in its lease after the decision ([WithLeases]; 0 without):
	// claimed from the counter, not yet spent.
	Leased int64
}

// Outcome is "allowed", "denied", "shadow" (admitted, but a shadow rule
// would have denied: [Decision.WouldDeny]) or "error": the label metrics
// count by.
func (e Event) Outcome() string {
	switch {
	case e.Err != nil:
		return "error"
	case e.Decision.Allowed && e.Decision.WouldDeny:
		return "shadow"
	case e.Decision.Allowed:
		return "allowed"
	}
	return "denied"
}

// WithObserver calls observe after every decision (Consume, ConsumeN and
// Check), with the request's context, on the caller's goroutine: keep it
// quick, and hand slow work to another goroutine. It is the hook for
// metrics, logs and traces; see the module sluice/observe/otel for
// OpenTelemetry. A nil observe is refused by New.
func WithObserver(observe func(ctx context.Context, e Event)) Option {
	return func(o *options) { o.observe, o.observeSet = observe, true }
}

// observed is ConsumeN with the observer told.
func (l *Limiter) observed(ctx context.Context, key string, rule Rule, cost int64) (Decision, error) {
	start := time.Now()
	cctx, trips := driver.WithRoundTrips(ctx)
	d, err := l.consumeN(cctx, key, rule, cost)
	l.observe(ctx, Event{Key: key, Rule: rule, Cost: cost, Mode: l.mode, Storage: storageName(l.store),
		Decision: d, Err: err, Start: start, Latency: time.Since(start), RoundTrips: trips.Count(), Retries: trips.Retries(), Node: trips.Node(),
		Leased: l.leases.heldFor(key, rule)})
	return d, err
}

func storageName(s Storage) string {
	switch s.(type) {
	case *dbStorage:
		return "database"
	case *secondaryStorage:
		return "secondary"
	case *memStorage:
		return "memory"
	}
	return "unknown"
}
