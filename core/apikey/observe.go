package apikey

import (
	"context"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Event is one verification as an observer sees it. See [WithObserver].
type Event struct {
	// KeyID is the verified key's id, or 0 when the key is unknown.
	KeyID  int64
	Result Result
	// Err is the verification's error (a failure, never a denial).
	Err error
	// Storage is "database", "database+cache" or "storage".
	Storage string
	// Start is when the verification began (wall clock, not WithClock's),
	// and Latency how long it took.
	Start   time.Time
	Latency time.Duration
	// RoundTrips is how many statements or commands the database and the
	// storage sent for it (see core.RoundTrips).
	RoundTrips int64
}

// Outcome is "valid", the denial's Code (such as "RATE_LIMITED"), or
// "error": the label metrics count by.
func (e Event) Outcome() string {
	switch {
	case e.Err != nil:
		return "error"
	case e.Result.Valid:
		return "valid"
	}
	return string(e.Result.Code)
}

// WithObserver calls observe after every [Manager.Verify], with the
// request's context, on the caller's goroutine: keep it quick. It is the
// hook for metrics, audit logs and usage analytics. A nil observe is
// refused.
func WithObserver(observe func(ctx context.Context, e Event)) Option {
	return func(o *options) { o.observe, o.observeSet = observe, true }
}

// observed is Verify with the observer told.
func (m *Manager) observed(ctx context.Context, key string, opts []VerifyOption) (Result, error) {
	start := time.Now()
	cctx, trips := core.WithRoundTrips(ctx)
	r, err := m.verify(cctx, key, opts)
	e := Event{Result: r, Err: err, Storage: "database", Start: start, Latency: time.Since(start), RoundTrips: trips.Count()}
	switch {
	case m.store != nil:
		e.Storage = "storage"
	case m.cache != nil:
		e.Storage = "database+cache"
	}
	if r.Key != nil {
		e.KeyID = r.Key.ID
	}
	m.o.observe(ctx, e)
	return r, err
}
