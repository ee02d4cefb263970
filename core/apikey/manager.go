package apikey

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
)

// Manager creates, verifies and manages API keys. It is safe for
// concurrent use. Build it with [New] or [NewStorageOnly]; the zero Manager
// answers every call with an error wrapping [core.ErrInvalid].
type Manager struct {
	store   store  // a *dbStore or a *storageStore
	storage string // Event.Storage: "database", "database+cache" or "storage"
	o       options

	// parent is the manager that In made this view of, bound to a
	// caller's transaction; nil for one made by New. txErr, in a view,
	// is why it cannot run (see tx.go).
	parent *Manager
	txErr  error
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
	m := &Manager{storage: "database", o: o}
	d := &dbStore{db: db, now: m.now, maxAttempts: o.maxAttempts, dropExpired: o.dropExpired, keys: newKeyCache(o.keyState)}
	d.schema = &schemaCheck{turn: make(chan struct{}, 1)}
	if o.withCache {
		if o.cacheTTL <= 0 {
			return nil, invalidf("WithCache: ttl %v must be positive", o.cacheTTL)
		}
		d.cache = &sharedCache{s: o.cache, ttl: o.cacheTTL, prefix: o.prefix, clock: o.clock}
		m.storage = "database+cache"
	}
	m.store = d
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
	m := &Manager{storage: "storage", o: o}
	st := &storageStore{s: s, c: c, prefix: o.prefix, dropExpired: o.dropExpired, now: m.now}
	st.ix, _ = s.(keystore.Indexer)
	st.creator, _ = s.(keystore.Creator)
	_, st.rerolls = s.(keystore.Rerollable)
	_, st.owners = s.(keystore.OwnerSharing)
	if st.owners {
		if err := checkPrefixTag(o.prefix); err != nil {
			return nil, err
		}
	}
	st.locs.reset()
	m.store = st
	return m, nil
}

// Now reads the manager's clock ([WithClock]) as its verifications read
// it: in UTC, to the millisecond. Middleware states a [Result]'s times
// relative to it. m must be made by [New] or [NewStorageOnly].
func (m *Manager) Now() time.Time { return m.now() }

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
	if m.txErr != nil {
		return fmt.Errorf("%s: %w", op, m.txErr)
	}
	return nil
}

// ready is initialised, and in database mode runs the start-up check until
// it passes: verification and creation depend on the unique key hash.
func (m *Manager) ready(ctx context.Context, op string) error {
	if err := m.initialised(op); err != nil {
		return err
	}
	return m.store.checkSchema(ctx, false)
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
	return m.store.checkSchema(ctx, true)
}
