package apikey

import (
	"context"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// EventKind says what an [Event] reports.
type EventKind uint8

// The kinds of [Event]. The zero kind is a verification, so that an Event
// written before the others existed still reads right.
const (
	Verified       EventKind = iota // a Verify, with its Result or Err
	Created                         // a Create that stored a key
	Updated                         // an Update that changed a key
	Deleted                         // a Delete that removed a key
	ExpiredDeleted                  // a DeleteExpired; Count says how many keys
	Rerolled                        // a Reroll that gave a key a new plaintext
	OwnerLimitsSet                  // a SetOwnerLimits; Owner says whose
)

var eventKinds = [...]string{"verified", "created", "updated", "deleted", "expired_deleted", "rerolled", "owner_limits_set"}

// String is the kind in lower case: "verified", "created", "updated",
// "deleted", "expired_deleted", "rerolled" or "owner_limits_set".
func (k EventKind) String() string {
	if int(k) < len(eventKinds) {
		return eventKinds[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is what an observer sees: one verification, or one change to the
// stored keys (Kind says which). See [WithObserver].
type Event struct {
	Kind EventKind
	// KeyID is the key's id, or 0 when the key is unknown (and for
	// ExpiredDeleted, which removes many).
	KeyID int64
	// Key is the key as stored after a verification, a creation, an
	// update or a reroll; nil for a deletion and for an unknown key.
	Key *Key
	// Count is how many keys an ExpiredDeleted removed.
	Count int64
	// Owner is whose limits an OwnerLimitsSet set.
	Owner  string
	Result Result // a verification's result
	// Err is the verification's error (a failure, never a denial). Changes
	// that fail are not reported: the caller has their error.
	Err error
	// Storage is "database", "database+cache" or "storage".
	Storage string
	// Start is when the verification began (wall clock, not WithClock's),
	// and Latency how long it took.
	Start   time.Time
	Latency time.Duration
	// RoundTrips is how many statements or commands the database and the
	// storage sent for it (see driver.RoundTrips).
	RoundTrips int64
}

// Outcome is, for a verification, "valid", the denial's Code (such as
// "RATE_LIMITED"), or "error": the label metrics count by. For a change it
// is the kind ("created", "updated", …).
func (e Event) Outcome() string {
	switch {
	case e.Kind != Verified:
		return e.Kind.String()
	case e.Err != nil:
		return "error"
	case e.Result.Valid:
		return "valid"
	}
	return string(e.Result.Code)
}

// WithObserver calls observe after every [Manager.Verify] and after every
// change that succeeds ([Manager.Create], [Manager.Update],
// [Manager.Reroll], [Manager.Delete] of an existing key,
// [Manager.DeleteExpired]), with the
// caller's context, on the caller's goroutine: keep it quick. Event.Kind
// tells them apart. It is the hook for metrics, audit logs and usage
// analytics; the plaintext of a key is never in an Event. A nil observe is
// refused.
func WithObserver(observe func(ctx context.Context, e Event)) Option {
	return func(o *options) { o.observe, o.observeSet = observe, true }
}

// observed is Verify with the observer told.
func (m *Manager) observed(ctx context.Context, key string, opts []VerifyOption) (Result, error) {
	start := time.Now()
	cctx, trips := driver.WithRoundTrips(ctx)
	r, err := m.verify(cctx, key, opts)
	e := Event{Result: r, Err: err, Storage: m.storage, Start: start, Latency: time.Since(start), RoundTrips: trips.Count()}
	if r.Key != nil {
		e.KeyID, e.Key = r.Key.ID, r.Key
	}
	m.o.observe(ctx, e)
	return r, err
}

// changed tells the observer, if there is one, of a change that succeeded.
func (m *Manager) changed(ctx context.Context, start time.Time, e Event) {
	if m.o.observe == nil {
		return
	}
	e.Start, e.Latency, e.Storage = start, time.Since(start), m.storage
	if e.Key != nil {
		e.KeyID = e.Key.ID
	}
	m.o.observe(ctx, e)
}
