package driver

import (
	"context"
	"time"
)

// SecondaryStorage is a key-value store with expiry, such as Redis, used by
// the rate limiter and the API-key verifier as an alternative to the
// database. Implementations: core/memory (in process) and adapters/redis.
type SecondaryStorage interface {
	// Get returns the value at key and ok == false when there is none.
	Get(ctx context.Context, key string) (value string, ok bool, err error)
	// Set stores value at key; ttl 0 means no expiry.
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Increment adds by to the counter at key in one atomic step. When the
	// counter does not exist it is created with value by and expiry ttl;
	// an existing counter's expiry is never extended (a fixed window).
	// ttl must be positive.
	Increment(ctx context.Context, key string, by int64, ttl time.Duration) (Counter, error)
}

// Counter is a secondary-storage counter after an increment.
type Counter struct {
	Value int64         // the value after the increment
	TTL   time.Duration // time left before the counter expires
}

// BoundedIncrementer is an optional [SecondaryStorage] capability: add by
// only when the result stays at or below max, in one atomic step, so that a
// denied request leaves the counter as it was. ok is false when it would not
// fit; c then holds the current, unchanged counter (Value 0 when absent).
//
// Without it the rate limiter uses Increment, and a denied request still
// counts until the window ends.
type BoundedIncrementer interface {
	IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (c Counter, ok bool, err error)
}

// TATAdvancer is an optional [SecondaryStorage] capability for the rate
// limiter's GCRA mode: advance the theoretical arrival time (TAT) stored
// at key, in one atomic step. Times are epoch milliseconds of the caller's
// clock, passed as now; the storage's own clock only runs the expiry.
//
// Let t be the stored TAT, or now when there is none or it is earlier.
// When t + increment − now ≤ limit, the TAT becomes t + increment and ok
// is true; otherwise nothing changes and ok is false. tat is the TAT after
// the call (t when refused). A written key expires t + increment − now
// after the call, when its TAT is reached: a TAT at or before now means
// the same as none. An increment of 0 writes nothing and reads t, with ok
// reporting t − now ≤ limit. now, increment and limit must not be
// negative; Redis computes in doubles, so keep them below 2^51.
//
// Without it the rate limiter refuses GCRA on that storage.
type TATAdvancer interface {
	AdvanceTAT(ctx context.Context, key string, now, increment, limit int64) (tat int64, ok bool, err error)
}
