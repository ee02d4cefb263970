package apikey

import (
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core"
)

// DefaultMaxAttempts bounds how many times a verification reads and tries
// its guarded write before it gives up with [core.ErrContention].
const DefaultMaxAttempts = 10

// DefaultRateLimit is the rate limit of a key created without one: 10
// requests per 24 hours, as in Better Auth.
var DefaultRateLimit = RateLimit{Enabled: true, Window: 24 * time.Hour, Max: 10}

// Manager creates, verifies and manages API keys. It is safe for
// concurrent use. Build it with [New] or [NewStorageOnly].
type Manager struct {
	db       *core.DB              // nil in storage-only mode
	cache    core.SecondaryStorage // cached mode: keys by hash, the database stays the truth
	cacheTTL time.Duration
	store    *storeOnly // storage-only mode
	o        options
}

type options struct {
	clock       func() time.Time
	maxAttempts int
	rateLimit   RateLimit
	prefix      string // of secondary-storage keys
	cache       core.SecondaryStorage
	cacheTTL    time.Duration
	dropExpired bool
}

// Option configures [New] and [NewStorageOnly].
type Option func(*options)

// WithClock sets the clock (default time.Now), for tests and simulations.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithMaxAttempts sets how many read-and-write attempts a verification
// makes before failing with [core.ErrContention] (default [DefaultMaxAttempts]).
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// WithDefaultRateLimit sets the rate limit of keys created without one
// (default [DefaultRateLimit]).
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
// it is answered. Updates and deletions through the manager invalidate the
// entry. A check with [Cost](0) is answered from the cache alone. Only for
// [New].
func WithCache(s core.SecondaryStorage, ttl time.Duration) Option {
	return func(o *options) { o.cache, o.cacheTTL = s, ttl }
}

func buildOptions(opts []Option) (options, error) {
	o := options{clock: time.Now, maxAttempts: DefaultMaxAttempts, rateLimit: DefaultRateLimit, prefix: "sluice:apikey:"}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.clock == nil:
		return o, invalidf("WithClock: nil clock")
	case o.maxAttempts < 1:
		return o, invalidf("WithMaxAttempts: %d attempts; need at least 1", o.maxAttempts)
	}
	if err := checkRateLimit(o.rateLimit); err != nil {
		return o, fmt.Errorf("WithDefaultRateLimit: %w", err)
	}
	return o, nil
}

// New returns a manager keeping keys in db's apikey model. With
// [WithCache] keys are also cached in a secondary storage.
func New(db *core.DB, opts ...Option) (*Manager, error) {
	if db == nil {
		return nil, invalidf("New: nil *core.DB")
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := db.Schema().Table(core.ModelAPIKey); !ok {
		return nil, invalidf("New: the schema has no %q model", core.ModelAPIKey)
	}
	m := &Manager{db: db, o: o}
	if o.cache != nil {
		if o.cacheTTL <= 0 {
			return nil, invalidf("WithCache: ttl %v must be positive", o.cacheTTL)
		}
		m.cache, m.cacheTTL = o.cache, o.cacheTTL
	}
	return m, nil
}

// NewStorageOnly returns a manager keeping keys only in s, with no
// database. s must implement [Claimer], so that verification stays atomic;
// a storage without it is refused with [core.ErrUnsupported] (use [New]
// with [WithCache] instead, keeping the database as the source of truth).
// Listing by reference and DeleteExpired need s to implement [Indexer] too.
func NewStorageOnly(s core.SecondaryStorage, opts ...Option) (*Manager, error) {
	if s == nil {
		return nil, invalidf("NewStorageOnly: nil storage")
	}
	c, ok := s.(Claimer)
	if !ok {
		return nil, fmt.Errorf("apikey: NewStorageOnly: %w: storage %T does not implement apikey.Claimer, "+
			"so quota and rate limit cannot be consumed atomically; use apikey.New with WithCache to keep the database as the source of truth", core.ErrUnsupported, s)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.cache != nil {
		return nil, invalidf("NewStorageOnly: WithCache applies to database mode only")
	}
	ix, _ := s.(Indexer)
	return &Manager{store: &storeOnly{s: s, c: c, ix: ix, prefix: o.prefix}, o: o}, nil
}

// now returns the clock's time in UTC, truncated to the millisecond: the
// precision every database keeps, so the decision and the guards agree.
func (m *Manager) now() time.Time { return m.o.clock().UTC().Truncate(time.Millisecond) }

// invalidf builds an error for bad input, wrapping core.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("apikey: %w: %s", core.ErrInvalid, fmt.Sprintf(format, args...))
}
