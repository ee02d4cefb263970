package apikey

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// defaultMaxAttempts bounds how many times a verification reads and tries
// its guarded write before it gives up with core.ErrContention.
const defaultMaxAttempts = 10

// defaultRateLimit is the rate limit of a key created without one: 10
// verifications per 24 hours, as in Better Auth.
var defaultRateLimit = RateLimit{Enabled: true, Window: 24 * time.Hour, Max: 10}

type options struct {
	clock       func() time.Time
	maxAttempts int
	rateLimit   RateLimit
	prefix      string // of secondary-storage keys
	withCache   bool   // WithCache was given, perhaps with a nil storage
	cache       driver.SecondaryStorage
	cacheTTL    time.Duration
	dropExpired bool
	keyState    int  // WithKeyStateCache
	keyStateSet bool // WithKeyStateCache was given
	observe     func(context.Context, Event)
	observeSet  bool // WithObserver was given, perhaps with nil
}

// Option configures [New] and [NewStorageOnly].
type Option func(*options)

// WithClock sets the clock (default time.Now), for tests and simulations.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithMaxAttempts sets how many read-and-write attempts a verification
// makes before failing with [core.ErrContention] (default 10).
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// WithDefaultRateLimit sets the rate limit of keys created without one.
// The default is Better Auth's: 10 verifications per 24 hours, a window
// that opens at the first verification; so a key with a quota of 1000 and
// no [CreateParams.RateLimit] stops at 10 a day, answered CodeRateLimited
// with Result.DeniedBy "rateLimit". Give WithDefaultRateLimit(RateLimit{})
// for keys without a rate limit unless Create sets one.
func WithDefaultRateLimit(r RateLimit) Option { return func(o *options) { o.rateLimit = r } }

// WithDeleteExpiredOnVerify makes a verification that finds its key
// expired delete it (the answer is still CodeExpired). By default
// verification never deletes: expired keys stay until [Manager.DeleteExpired]
// or [Manager.Delete], so their owners can still see and renew them.
func WithDeleteExpiredOnVerify() Option { return func(o *options) { o.dropExpired = true } }

// WithStoragePrefix sets the prefix of every secondary-storage key the
// manager uses (default "sluice:apikey:").
func WithStoragePrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithCache caches keys in s, by hash, for ttl (which must be positive),
// with the database as the source of truth: a verification reads the
// cache, and its consuming write still goes to the database, guarded as
// always, so a stale cache entry costs a re-read, never an over-admission.
// A denial decided on a cached entry is confirmed from the database before
// it is answered. A check with [Cost](0) is answered from the cache alone.
// Only for [New].
//
// Changes through the manager ([Manager.Update], [Manager.Delete],
// [Manager.DeleteExpired]) take effect at once, on every server sharing s:
// once one returns without error, no verification sees the key as it was.
// Each key has a generation in s, renewed before and after every change;
// a cache entry is used only under the generation it was read under, so a
// verification that read the key before a change and caches it after is
// ignored. When s refuses to renew the generation, the change fails with
// an error instead (before the database write, nothing has changed; after
// it, the error says so). A cache hit costs two reads of s, the entry and
// its generation. Changes made to the database behind the manager's back
// are seen when the entry expires. A verification of a key that the
// manager remembers ([WithKeyStateCache]) with a cost above 0 goes to the
// database's guarded write first and consults s only if that misses.
func WithCache(s driver.SecondaryStorage, ttl time.Duration) Option {
	return func(o *options) { o.withCache, o.cache, o.cacheTTL = true, s, ttl }
}

// WithKeyStateCache sets how many keys the manager remembers, in its own
// memory, as the database last returned them (default
// 16384 keys, a few hundred bytes each; 0 turns it off). A verification of a remembered
// key skips the read: it plans from the remembered state and sends one
// guarded write that finds the key by its hash, and whose guard re-checks
// in the database everything the plan was decided on (enabled, expiry,
// quota, refill, rate-limit window and counters, and the key's rate-limit
// and refill settings, which must equal the remembered ones). When the key
// has changed in a way that matters, the write matches nothing and the
// verification reads the key and decides again, so a remembered state,
// however old, costs a round trip, never a wrong answer: a key disabled,
// deleted or reconfigured, by this server or any other, is answered as it
// now is. Only for [New].
func WithKeyStateCache(n int) Option {
	return func(o *options) { o.keyState, o.keyStateSet = n, true }
}

func buildOptions(op string, opts []Option) (options, error) {
	o := options{clock: time.Now, maxAttempts: defaultMaxAttempts, rateLimit: defaultRateLimit, prefix: "sluice:apikey:", keyState: defaultKeyStateCache}
	for i, opt := range opts {
		if opt == nil {
			return o, invalidf("%s: option %d of %d is nil", op, i+1, len(opts))
		}
		opt(&o)
	}
	switch {
	case o.withCache && isNil(o.cache):
		return o, invalidf("WithCache: nil storage")
	case o.clock == nil:
		return o, invalidf("WithClock: nil clock")
	case o.observeSet && o.observe == nil:
		return o, invalidf("WithObserver: nil observer")
	case o.maxAttempts < 1:
		return o, invalidf("WithMaxAttempts: %d attempts; need at least 1", o.maxAttempts)
	case o.keyState < 0:
		return o, invalidf("WithKeyStateCache: %d keys is negative; use 0 to turn it off", o.keyState)
	}
	if err := checkRateLimit(o.rateLimit); err != nil {
		return o, fmt.Errorf("WithDefaultRateLimit: %w", err)
	}
	return o, nil
}
