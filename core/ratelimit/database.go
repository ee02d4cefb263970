package ratelimit

import (
	"context"
	"errors"
	"fmt"
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
	tx      bool       // bound to a caller's transaction (Limiter.In): no memory, locking reads
	base    *dbStorage // in a transaction, the limiter's own storage, whose schema check counts
	keySize int        // the key column's length; 0 for unbounded

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

	// noAll: the database decides no policy in one statement
	// (core.DB.IncrementAll answered driver.ErrNoAll); see consumeAtOnce.
	noAll atomic.Bool

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
	if s.base != nil {
		// A view checks in the caller's transaction, and without the
		// gate: on the pool, the check could wait for a connection that
		// the callers' transactions all hold, and so could a plain
		// decision holding the gate.
		if s.base.checked.Load() {
			return nil
		}
		if err := s.db.CheckSchema(ctx, model); err != nil {
			return err
		}
		s.base.checked.Store(true)
		return nil
	}
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

// prepare runs the checks every read or write of a key's row needs first:
// the key fits the column, and the table has been checked.
func (s *dbStorage) prepare(ctx context.Context, key string) error {
	if err := s.fits(key); err != nil {
		return err
	}
	return s.ready(ctx)
}

// consume decides a lone request: under a fixed or Better Auth window, a
// claim of cost units (see claim below).
func (s *dbStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, attempts int) (state, error) {
	switch m {
	case SlidingWindow:
		return s.consumeSliding(ctx, key, rule, cost, now, attempts)
	case GCRA:
		return s.consumeGCRA(ctx, key, rule, cost, now, attempts)
	}
	if err := s.prepare(ctx, key); err != nil {
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

// start returns the remembered start of key's window, if it is live at now
// (a start after after: see frame).
func (s *dbStorage) start(key string, after, now int64) (int64, bool) {
	if s.starts == nil {
		return 0, false
	}
	win, ok := s.starts.get(key, now)
	if !ok || win.start <= after || win.start > now {
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
	if err := s.prepare(ctx, key); err != nil {
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
	return &request{where: make([]core.Where, 0, 4), inc: make(map[string]int64, 1), set: make(map[string]any, 1)}
}}

func (r *request) release() {
	clear(r.where[:cap(r.where)]) // drop the key and values for the collector
	clear(r.inc)
	clear(r.set)
	requests.Put(r)
}

func (s *dbStorage) reset(ctx context.Context, key string) error {
	if s.tx {
		return errTxReset
	}
	if err := s.fits(key); err != nil {
		return err
	}
	_, err := s.db.DeleteMany(ctx, model, core.Eq("key", key))
	return err
}

// The counter-row protocol: how the storage claims units of a fixed or
// Better Auth window in a key's rateLimit row with guarded writes. A lone
// request (consume above) and a combined batch (combiner.decide) both
// claim through claim, which alone picks the write (IncrementValue,
// IncrementOne, FindOne, Create or the reset), keeps the remembered window
// starts, and counts the attempts.

// rowClaim is what one decision knows of a key's row while it claims.
type rowClaim struct {
	key string
	max int64 // the rule's Max
	now int64
	// frame is the rule's frame at now: a stored start at or before after
	// is a window that is over; a window opened now starts at open (now,
	// or a calendar period's start) and lasts w ms; a stored start at or
	// after next is a later calendar period.
	frame
	better   bool // BetterAuthWindow: an admission moves the start to now
	attempts int
	misses   int // passes that lost a race (see claim)

	// known: count and last are a state of the row in a window live at
	// now, read or returned by a write.
	known       bool
	count, last int64
	// started: start is the live window's start as last seen stored (here
	// or remembered in dbStorage.starts); a write guarded on lastRequest
	// equal to it needs the new count alone.
	started bool
	start   int64
}

// newClaim begins a decision on key at now, with the window start this
// process remembers for it (never under BetterAuthWindow, whose start moves).
func (s *dbStorage) newClaim(key string, rule Rule, m Mode, now int64, attempts int) rowClaim {
	r := rowClaim{key: key, max: rule.Max, now: now, frame: rule.frame(now), better: m == BetterAuthWindow, attempts: attempts}
	if !r.better {
		r.start, r.started = s.start(key, r.after, now)
	}
	return r
}

// claim adds k units (k ≤ max) to the row when they fit: then it reports
// true and r holds the state after the write. It reports false when r
// holds a live state in which k does not fit, the state to deny at. bound
// is the guard: the most the count may be before the write (max − k;
// tests break it).
//
// Each pass tries the guarded increment the state calls for (see
// increment), and when that misses reads the row and does what the row
// calls for: create it, reset an ended window, or learn its state for the
// next pass. A pass that lost a race (a write that matched nothing, a
// unique conflict, a reset another caller made) counts one attempt; a pass
// that only read does not.
func (s *dbStorage) claim(ctx context.Context, r *rowClaim, k, bound int64) (bool, error) {
	for {
		if r.known && r.count > r.max-k {
			return false, nil
		}
		if r.misses >= r.attempts {
			return false, fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, r.attempts)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		wrote, ok, err := s.increment(ctx, r, k, bound)
		switch {
		case s.lost(err):
			r.misses++
			continue
		case err != nil:
			return false, err
		case ok:
			return true, nil
		case wrote:
			r.misses++
			r.known = false
			if r.started {
				s.forget(r.key)
				r.started = false
			}
		}
		done, lost, err := s.settle(ctx, r, k)
		if err != nil || done {
			return done, err
		}
		if lost && !wrote {
			r.misses++
		}
	}
}

// increment makes the guarded write of k units that r's state calls for,
// and reports whether it made one:
//   - under BetterAuthWindow, count += k and lastRequest := now guarded on
//     a live window with room, answering the count alone;
//   - with the window's start known, count += k guarded on lastRequest
//     equal to it (a start seen live at now is live) and on room,
//     answering the count alone;
//   - otherwise, count += k guarded on a live window with room, answering
//     the count and the window's start (core.DB.IncrementPair: one
//     statement, MySQL included); inside a caller's transaction,
//     answering the row (IncrementOne).
func (s *dbStorage) increment(ctx context.Context, r *rowClaim, k, bound int64) (wrote, ok bool, err error) {
	sc := requests.Get().(*request)
	inc := core.IncrementRequest{Model: model, Increment: sc.inc}
	sc.inc["count"] = k
	switch {
	case r.better:
		inc.Where = append(sc.where[:0], core.Eq("key", r.key), core.Gt("lastRequest", r.after), core.Lte("count", bound))
		sc.set["lastRequest"] = r.now
		inc.Set = sc.set
		var n int64
		if n, ok, err = s.db.IncrementValue(ctx, inc); ok {
			r.count, r.last, r.known = n, r.now, true
		}
	case r.started:
		inc.Where = append(sc.where[:0], core.Eq("key", r.key), core.Eq("lastRequest", r.start), core.Lte("count", bound))
		var n int64
		if n, ok, err = s.db.IncrementValue(ctx, inc); ok {
			r.count, r.last, r.known = n, r.start, true
		}
	case s.tx:
		inc.Where = append(r.live(append(sc.where[:0], core.Eq("key", r.key))), core.Lte("count", bound))
		var row core.Row
		if row, ok, err = s.db.IncrementOne(ctx, inc); ok {
			r.learn(row.Int("count"), row.Int("lastRequest"))
			s.remember(r.key, r.last, r.w, r.now)
		}
	default:
		// The start unknown (a key this process has not seen, or forgot):
		// the write that admits answers it with the count, in one
		// statement on every database. lastRequest ≤ now keeps the start
		// in the range (after, now]; a row opened ahead of this clock misses,
		// and settle reads it.
		var n, last int64
		n, last, ok, err = s.db.IncrementPair(ctx, core.PairRequest{Model: model, Where: append(sc.where[:0], core.Eq("key", r.key)),
			Field: "count", By: k, Max: bound + k, Other: "lastRequest", OtherMin: r.after + 1, OtherMax: r.now})
		if ok {
			r.learn(n, last)
			s.remember(r.key, r.last, r.w, r.now)
		}
	}
	sc.release()
	return true, ok, err
}

// settle reads the row after an increment that missed (or was not tried)
// and does what the row calls for: creates a missing row with k, resets
// an ended window to k (guarded on the start read, so that one concurrent
// caller resets), or learns a live window's state. done means k was
// claimed; lost, that a concurrent caller won the create or the reset.
func (s *dbStorage) settle(ctx context.Context, r *rowClaim, k int64) (done, lost bool, err error) {
	row, found, err := s.readRow(ctx, r.key)
	if err != nil {
		return false, false, err
	}
	if !found {
		if _, err := s.db.Create(ctx, model, map[string]any{"key": r.key, "count": k, "lastRequest": r.open}); err != nil {
			if s.createLost(err) {
				return false, true, nil
			}
			return false, false, err
		}
		return s.opened(r, k), false, nil
	}
	count, last := row.Int("count"), row.Int("lastRequest")
	if r.later(last) {
		r.denyLater()
		return false, false, nil
	}
	if last > r.after {
		r.learn(count, last)
		if !r.better {
			s.remember(r.key, last, r.w, r.now)
		}
		return false, false, nil
	}
	_, ok, err := s.db.IncrementOne(ctx, core.IncrementRequest{
		Model: model,
		Where: []core.Where{core.Eq("key", r.key), core.Lte("lastRequest", last)},
		Set:   map[string]any{"count": k, "lastRequest": r.open},
	})
	switch {
	case s.lost(err):
		return false, true, nil
	case err != nil:
		return false, false, err
	case ok:
		return s.opened(r, k), false, nil
	}
	return false, true, nil
}

// createLost reports a Create of a key's row that lost to a concurrent
// writer: the key is taken (core.ErrConflict), or the database kept
// aborting the insert for concurrent writers (core.ErrContention). At
// SERIALIZABLE an INSERT … ON CONFLICT DO NOTHING of a key whose row was
// written by a transaction its snapshot does not see fails so on every
// retry while others update that row: reading the row again, as after a
// conflict, finds it.
func (s *dbStorage) createLost(err error) bool {
	return errors.Is(err, core.ErrConflict) || s.lost(err)
}

// lost reports a write that lost a race worth another attempt: a lost
// race (core.ErrContention) outside a transaction. Inside one (a policy's,
// or a caller's under Limiter.In) the database's abort for concurrent
// writers (a deadlock victim, a serialization failure) ended the whole
// transaction (MySQL and MariaDB roll it back and go on in autocommit,
// PostgreSQL refuses every statement after it), so a next attempt there
// would write outside it: the error goes to whoever owns the
// transaction, who repeats it whole.
func (s *dbStorage) lost(err error) bool { return !s.tx && lostRace(err) }

// learn takes a live state of the row, whose lastRequest is the window's
// start (under BetterAuthWindow, its latest admission).
func (r *rowClaim) learn(count, last int64) {
	r.count, r.last, r.known = count, last, true
	r.start, r.started = last, !r.better
}

// denyLater records a row that holds a window later than this reading's
// (see frame.later): the state to deny at, with nothing left in the
// reading's own window, which resets at its end.
func (r *rowClaim) denyLater() {
	r.count, r.last, r.known = r.max, r.open, true
	r.started = false
}

// opened records a window k opened (at now, or at a calendar period's
// start), and reports true.
func (s *dbStorage) opened(r *rowClaim, k int64) bool {
	r.learn(k, r.open)
	if !r.better {
		s.remember(r.key, r.open, r.w, r.now)
	}
	return true
}
