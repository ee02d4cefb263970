package apikey

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// DefaultMaxAttempts bounds how many times a verification reads and tries
// its guarded write before it gives up with [core.ErrContention].
const DefaultMaxAttempts = 10

// DefaultRateLimit is the rate limit of a key created without one: 10
// requests per 24 hours, as in Better Auth.
var DefaultRateLimit = RateLimit{Enabled: true, Window: 24 * time.Hour, Max: 10}

// Manager creates, verifies and manages API keys. It is safe for
// concurrent use. Build it with [New] or [NewStorageOnly]; the zero Manager
// answers every call with an error wrapping [core.ErrInvalid].
type Manager struct {
	db       *core.DB                // nil in storage-only mode
	cache    driver.SecondaryStorage // cached mode: keys by hash, the database stays the truth
	cacheTTL time.Duration
	store    backend   // dbKeys or, in storage-only mode, storeOnly
	keys     *keyCache // database mode: keys as last seen, to plan a write without a read; nil when off
	o        options
	schema   *schemaCheck // database mode
}

// schemaCheck runs the start-up check of the apikey table once it has
// passed: a failure is returned and the next call tries again.
type schemaCheck struct {
	passed atomic.Bool
	turn   chan struct{} // holds a token while a check runs, so one runs at a time
	// noRerolls says why the rerolledKey table cannot be used (it is
	// missing, or lacks what the check requires); nil when it can.
	noRerolls atomic.Pointer[error]
	// noLimits says why the apikeyLimit table cannot be used; nil when it can.
	noLimits atomic.Pointer[error]
}

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
// [DefaultKeyStateCache]; 0 turns it off). A verification of a remembered
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
	o := options{clock: time.Now, maxAttempts: DefaultMaxAttempts, rateLimit: DefaultRateLimit, prefix: "sluice:apikey:", keyState: DefaultKeyStateCache}
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

// New returns a manager keeping keys in db's apikey model. With
// [WithCache] keys are also cached in a secondary storage.
//
// Before its first verification or creation the manager runs
// [Manager.CheckSchema]; call it yourself to fail at start-up instead.
func New(db *core.DB, opts ...Option) (*Manager, error) {
	if db == nil {
		return nil, invalidf("New: nil *core.DB")
	}
	if db.Adapter() == nil || db.Schema() == nil {
		return nil, invalidf("New: the *core.DB is not initialised: make it with core.New or an adapter's Open")
	}
	o, err := buildOptions("New", opts)
	if err != nil {
		return nil, err
	}
	if _, ok := db.Schema().Table(core.ModelAPIKey); !ok {
		return nil, invalidf("New: the schema has no %q model", core.ModelAPIKey)
	}
	m := &Manager{db: db, o: o, schema: &schemaCheck{turn: make(chan struct{}, 1)}, keys: newKeyCache(o.keyState)}
	m.store = dbKeys{m}
	if o.withCache {
		if o.cacheTTL <= 0 {
			return nil, invalidf("WithCache: ttl %v must be positive", o.cacheTTL)
		}
		m.cache, m.cacheTTL = o.cache, o.cacheTTL
	}
	return m, nil
}

// NewStorageOnly returns a manager keeping keys only in s, with no
// database. s must implement [keystore.Claimer], so that verification stays atomic;
// a storage without it is refused with [core.ErrUnsupported] (use [New]
// with [WithCache] instead, keeping the database as the source of truth).
// Listing by reference and DeleteExpired need s to implement [keystore.Indexer] too.
func NewStorageOnly(s driver.SecondaryStorage, opts ...Option) (*Manager, error) {
	if isNil(s) {
		return nil, invalidf("NewStorageOnly: nil storage")
	}
	c, ok := s.(keystore.Claimer)
	if !ok {
		return nil, fmt.Errorf("apikey: NewStorageOnly: %w: storage %T does not implement keystore.Claimer, "+
			"so quota and rate limit cannot be consumed atomically; use apikey.New with WithCache to keep the database as the source of truth", core.ErrUnsupported, s)
	}
	o, err := buildOptions("NewStorageOnly", opts)
	if err != nil {
		return nil, err
	}
	if o.withCache {
		return nil, invalidf("NewStorageOnly: WithCache applies to database mode only")
	}
	if o.keyStateSet {
		return nil, invalidf("NewStorageOnly: WithKeyStateCache applies to database mode only")
	}
	ix, _ := s.(keystore.Indexer)
	creator, _ := s.(keystore.Creator)
	_, rerolls := s.(keystore.Rerollable)
	_, owners := s.(keystore.OwnerSharing)
	if owners {
		if err := checkPrefixTag(o.prefix); err != nil {
			return nil, err
		}
	}
	st := &storeOnly{s: s, c: c, rerolls: rerolls, owners: owners, ix: ix, creator: creator, prefix: o.prefix, dropExpired: o.dropExpired}
	st.locs.reset()
	return &Manager{store: st, o: o}, nil
}

// now returns the clock's time in UTC, truncated to the millisecond: the
// precision every database keeps, so the decision and the guards agree.
func (m *Manager) now() time.Time { return m.o.clock().UTC().Truncate(time.Millisecond) }

// invalidf builds an error for bad input, wrapping core.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("apikey: %w: %s", core.ErrInvalid, fmt.Sprintf(format, args...))
}

// isNil reports whether v is nil or a nil pointer, map, func or the like
// in an interface: a typed nil that would panic at its first use.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// initialised fails unless m was built by New or NewStorageOnly.
func (m *Manager) initialised(op string) error {
	if m == nil || m.store == nil {
		return invalidf("%s: the Manager is not initialised: make it with apikey.New or apikey.NewStorageOnly", op)
	}
	return nil
}

// ready is initialised, and in database mode runs the start-up check until
// it passes: verification and creation depend on the unique key hash.
func (m *Manager) ready(ctx context.Context, op string) error {
	if err := m.initialised(op); err != nil {
		return err
	}
	if m.schema == nil || m.schema.passed.Load() {
		return nil
	}
	return m.checkSchema(ctx, false)
}

// CheckSchema checks that the database's apikey table has what exact
// verification depends on, such as the unique index on the key hash, and
// names what is missing in an error wrapping [core.ErrSchema] (see
// [core.DB.CheckSchema]). The manager runs it before its first
// verification or creation, and again before each later one until it
// passes; then not again. Call it at start-up to fail early; it always
// checks afresh. In storage-only mode there is no table and it returns nil.
func (m *Manager) CheckSchema(ctx context.Context) error {
	if err := m.initialised("CheckSchema"); err != nil {
		return err
	}
	if m.schema == nil {
		return nil
	}
	return m.checkSchema(ctx, true)
}

// checkSchema runs the check, one caller at a time; unless asked to run
// it again, a caller that waited for its turn finds it passed.
func (m *Manager) checkSchema(ctx context.Context, again bool) error {
	select {
	case m.schema.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.schema.turn }()
	if !again && m.schema.passed.Load() {
		return nil
	}
	if err := m.db.CheckSchema(ctx, core.ModelAPIKey); err != nil {
		return err
	}
	// The rerolledKey table is optional: without it keys can be rerolled
	// only without a grace period, and verification never looks there.
	// So is the apikeyLimit table: without it no key has named limits.
	for model, why := range map[string]*atomic.Pointer[error]{core.ModelRerolledKey: &m.schema.noRerolls, core.ModelAPIKeyLimit: &m.schema.noLimits} {
		if _, ok := m.db.Schema().Table(model); !ok {
			err := fmt.Errorf("%w: the DB's schema has no %s model", core.ErrSchema, model)
			why.Store(&err)
			continue
		}
		switch err := m.db.CheckSchema(ctx, model); {
		case err == nil:
			why.Store(nil)
		case errors.Is(err, core.ErrSchema):
			why.Store(&err)
		default:
			return err
		}
	}
	m.schema.passed.Store(true)
	return nil
}
