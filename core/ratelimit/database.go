package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
)

// Database keeps counters in the rateLimit model through db, shared by every
// process using the same tables. See the package documentation for the
// guarded writes.
// Keys longer than the key column (255 characters by default) are refused.
//
// Before its first decision the storage runs db.CheckSchema on the
// rateLimit model, and refuses to decide (with an error wrapping
// core.ErrSchema, never admitted under WithFailOpen) on a table without
// the unique key that keeps it exact; see [Limiter.CheckSchema].
func Database(db *core.DB) Storage {
	return &dbStorage{db: db, gate: make(chan struct{}, 1),
		starts: newBoundedMap(maxRememberedStarts, func(w window) int64 { return w.end })}
}

type dbStorage struct {
	db      *core.DB
	keySize int // the key column's length; 0 for unbounded

	// starts remembers the start of each key's live window as this
	// process last saw it stored. The in-window increment then guards on
	// lastRequest equal to it: a match proves the start, so the decision
	// needs the new count alone, which IncrementValue returns in one round
	// trip on MySQL and as one column instead of the row elsewhere. A miss
	// reads the row and decides on it; a key not remembered takes the
	// row-returning increment (on MySQL, the read) as before.
	starts *boundedMap[window]

	// tats remembers each GCRA key's tat (see consumeGCRA in gcra.go).
	tats tatMemo

	// The schema check runs until it first succeeds, one caller at a time:
	// gate is the lock, taken with the caller's context so that a hung
	// check holds up nobody past their deadline; checked is the fast path.
	gate    chan struct{}
	checked atomic.Bool
}

const model = core.ModelRateLimit

func (s *dbStorage) check(Mode) error {
	switch {
	case s.db == nil:
		return invalidf("Database: nil core.DB")
	case isNil(s.db.Adapter()) || s.db.Schema() == nil:
		return invalidf("Database: the core.DB is not initialised: make it with core.New or an adapter's Open")
	}
	t, ok := s.db.Schema().Table(model)
	if !ok {
		return invalidf("Database: the schema has no %q model", model)
	}
	if c, ok := t.Column("key"); ok {
		s.keySize = c.Field.Size
	}
	return nil
}

// ready runs the schema check until it succeeds once. Concurrent first
// callers wait for one check rather than each run their own.
func (s *dbStorage) ready(ctx context.Context) error {
	if s.checked.Load() {
		return nil
	}
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.gate }()
	if s.checked.Load() {
		return nil
	}
	if err := s.db.CheckSchema(ctx, model); err != nil {
		return err
	}
	s.checked.Store(true)
	return nil
}

// fits refuses a key the column cannot hold: MySQL outside strict mode
// would truncate it, and two keys could then share a counter.
func (s *dbStorage) fits(key string) error {
	if n := utf8.RuneCountInString(key); s.keySize > 0 && n > s.keySize {
		return invalidf("key of %d characters is longer than the %d the key column holds", n, s.keySize)
	}
	return nil
}

// consume decides a lone request: under a fixed or Better Auth window, a
// claim of cost units (counterrow.go).
func (s *dbStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	switch m {
	case SlidingWindow:
		return s.consumeSliding(ctx, key, rule, cost, now, attempts)
	case GCRA:
		return s.consumeGCRA(ctx, key, rule, cost, now, attempts)
	}
	if err := s.fits(key); err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	r := s.newClaim(key, rule, m, now, attempts)
	ok, err := s.claim(ctx, &r, cost, rule.Max-cost)
	if err != nil {
		return state{}, err
	}
	return state{allowed: ok, count: r.count, reset: r.last + r.w}, nil
}

// maxRememberedStarts bounds the window starts a database storage keeps
// (about 100 bytes each); a key forgotten costs one read of its row.
const maxRememberedStarts = 1 << 16

// window is a remembered window: its start and end (epoch ms).
type window struct{ start, end int64 }

// start returns the remembered start of key's window, if it is live at now.
func (s *dbStorage) start(key string, now, w int64) (int64, bool) {
	if s.starts == nil {
		return 0, false
	}
	win, ok := s.starts.get(key, now)
	if !ok || now-win.start >= w || win.start > now {
		return 0, false
	}
	return win.start, true
}

// remember notes the start of key's window, seen stored.
func (s *dbStorage) remember(key string, start, w, now int64) {
	if s.starts == nil {
		return
	}
	if win, ok := s.starts.get(key, now); ok && win == (window{start, start + w}) {
		return
	}
	s.starts.put(key, window{start: start, end: start + w}, now)
}

// forget drops key's remembered start, which no longer matched.
func (s *dbStorage) forget(key string) {
	if s.starts != nil {
		s.starts.put(key, window{}, 0) // expired: the next get drops it
	}
}

func (s *dbStorage) peek(ctx context.Context, key string, rule Rule, now int64, m Mode) (state, error) {
	switch m {
	case SlidingWindow:
		return s.peekSliding(ctx, key, rule, now)
	case GCRA:
		return s.peekGCRA(ctx, key, rule, now)
	}
	if err := s.fits(key); err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	row, ok, err := s.db.FindOne(ctx, model, core.Eq("key", key))
	if err != nil {
		return state{}, err
	}
	return peekState(ok, row.Int("count"), row.Int("lastRequest"), rule, now), nil
}

func (s *dbStorage) prune(ctx context.Context, now, longest int64) (int64, error) {
	if longest <= 0 {
		return 0, invalidf("Prune: database storage needs the longest window: use WithLongestWindow")
	}
	// A row whose start is longest or more ago is over under every rule.
	return s.db.DeleteMany(ctx, model, core.Lte("lastRequest", now-longest))
}

// request is the in-window increment's request, reused across decisions:
// core.DB keeps nothing of a request once IncrementOne returns, and the
// hot path then allocates no slice or maps of its own.
type request struct {
	where []core.Where
	inc   map[string]int64
	set   map[string]any
}

var requests = sync.Pool{New: func() any {
	return &request{where: make([]core.Where, 0, 3), inc: make(map[string]int64, 1), set: make(map[string]any, 1)}
}}

func (r *request) release() {
	clear(r.where[:cap(r.where)]) // drop the key and values for the collector
	clear(r.inc)
	clear(r.set)
	requests.Put(r)
}

func (s *dbStorage) reset(ctx context.Context, key string) error {
	if err := s.fits(key); err != nil {
		return err
	}
	_, err := s.db.DeleteMany(ctx, model, core.Eq("key", key))
	return err
}
