package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Mode chooses the window semantics of a [Limiter].
type Mode uint8

const (
	// FixedWindow, the default: a window opens at a key's first request and
	// requests inside it do not move it.
	FixedWindow Mode = iota
	// BetterAuthWindow: every allowed request moves the window's start to
	// its own time, as Better Auth does, so the window measures idle time.
	// Use it to share a rateLimit table with a Better Auth deployment.
	BetterAuthWindow
	// SlidingWindow: the weighted two-window counter. A request is admitted
	// when the count of the current fixed window plus the previous
	// window's count, weighted by how much of the previous window the last
	// Window still covers, leaves room for it: no burst of 2×Max across a
	// window boundary. See "Sliding windows" in the package documentation.
	SlidingWindow
	// GCRA: the generic cell rate algorithm (a token bucket), one stored
	// theoretical arrival time per key: Max units per Window, spaced
	// Window/Max apart, with bursts of up to Max. See "GCRA" in the
	// package documentation.
	GCRA
)

// defaultMaxAttempts is how many times a request may lose a race (a guarded
// write that matched nothing, or a unique conflict on a fresh key) before
// the limiter gives up with an error; defaultDenialCacheSize is how many
// denied keys a limiter remembers. WithMaxAttempts and WithDenialCache
// state them.
const (
	defaultMaxAttempts     = 10
	defaultDenialCacheSize = 10000
)

// Limiter decides requests against a [Storage]. It is safe for concurrent
// use. Several limiters, in one process or many, may share one database or
// secondary storage: the storage's guarded writes keep them exact.
type Limiter struct {
	store    Storage
	clock    func() time.Time
	mode     Mode
	failOpen bool
	attempts int
	longest  time.Duration
	denials  *boundedMap[denial] // nil: no denial cache
	comb     *combiner           // nil: no write combining
	leases   *leaser             // nil: no leases
	observe  func(context.Context, Event)

	// parent is the limiter that In made this view of, bound to a
	// caller's transaction; nil for a limiter made by New. txErr, in a
	// view, is why it cannot decide (see tx.go).
	parent *Limiter
	txErr  error

	// start, when set, is the time at New of a limiter on [Memory] with
	// the default clock, which counts from it by the monotonic clock (see
	// [Memory]): one clock read per decision where time.Now takes two.
	// startMs is its epoch milliseconds, startNs the nanoseconds past
	// them, so that a decision only adds the monotonic time since.
	start            time.Time
	startMs, startNs int64

	mu        sync.Mutex // guards pruners and closed
	pruners   []chan struct{}
	wg        sync.WaitGroup
	closed    bool
	newTicker func(time.Duration) (<-chan time.Time, func()) // tests replace it
}

type options struct {
	clock    func() time.Time
	mode     Mode
	failOpen bool
	attempts int
	cache    int
	longest  time.Duration
	combine  bool
	observe  func(context.Context, Event)
	// observeSet tells WithObserver(nil), refused, from no observer.
	observeSet bool
	// clockSet tells WithClock from the default.
	clockSet bool
	// lease is WithLeases's size, leaseSet whether it was given, and
	// leaseTime WithLeaseTime's (0: the default).
	lease     int64
	leaseSet  bool
	leaseTime time.Duration
}

// Option configures [New].
type Option func(*options)

// WithClock makes the limiter read time from clock instead of time.Now
// (on [Memory] storage, instead of the monotonic clock: see [Memory]).
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock, o.clockSet = clock, true }
}

// WithMode chooses the window semantics (default [FixedWindow]).
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithFailOpen admits requests when the storage fails. The default is to
// deny them (fail closed). The error is returned either way.
//
// Only a failure of the storage is admitted, never one the caller causes:
// bad input (an error wrapping core.ErrInvalid, such as a key no storage
// can hold), a table unfit for exact decisions (core.ErrSchema), and any
// error once the request's own context is done (a client that hung up or
// ran out of time, not an outage: admitting it would run a handler nobody
// waits for, and let a client bypass the limit by hanging up) are denied.
func WithFailOpen() Option { return func(o *options) { o.failOpen = true } }

// WithMaxAttempts bounds how many races one request may lose before it
// fails (default 10, at least 1): a race is a guarded write that matched
// nothing, or a unique conflict on a fresh key.
func WithMaxAttempts(n int) Option { return func(o *options) { o.attempts = n } }

// WithDenialCache sets how many denied keys the limiter remembers (default
// 10 000); 0 turns the denial cache off. [Memory] storage
// has no use for one: it answers a denial at the cost of a cache lookup.
func WithDenialCache(n int) Option { return func(o *options) { o.cache = n } }

// WithLongestWindow declares the longest window any rule of this limiter
// uses. [Limiter.Prune] needs it for database storage, to delete only rows
// whose window is over under every rule; a rule with a longer window is
// then refused.
func WithLongestWindow(d time.Duration) Option { return func(o *options) { o.longest = d } }

// WithWriteCombining folds the concurrent decisions of this limiter on one
// key into guarded writes that claim their sum, for hot keys on
// [Database] storage; other storages refuse it. It is exact, within this
// limiter and across every process sharing the table, but it is an option
// because it changes which decision a request gets: see "Write combining"
// in the package documentation.
func WithWriteCombining() Option { return func(o *options) { o.combine = true } }

// New returns a limiter on s.
func New(s Storage, opts ...Option) (*Limiter, error) {
	o := options{clock: time.Now, attempts: defaultMaxAttempts, cache: defaultDenialCacheSize}
	for i, opt := range opts {
		if opt == nil {
			return nil, invalidf("New: option %d is nil", i)
		}
		opt(&o)
	}
	switch {
	case isNil(s):
		return nil, invalidf("New: nil storage (%T)", s)
	case o.clock == nil:
		return nil, invalidf("New: nil clock")
	case o.mode > GCRA:
		return nil, invalidf("New: unknown mode %d", o.mode)
	case o.attempts < 1:
		return nil, invalidf("New: max attempts %d must be at least 1", o.attempts)
	case o.observeSet && o.observe == nil:
		return nil, invalidf("New: WithObserver(nil)")
	case o.cache < 0:
		return nil, invalidf("New: denial cache size %d must not be negative", o.cache)
	case o.longest < 0 || o.longest%time.Millisecond != 0:
		return nil, invalidf("New: longest window %v must be a positive whole number of milliseconds", o.longest)
	}
	ds, isDB := s.(*dbStorage)
	if o.combine && !isDB {
		return nil, invalidf("New: WithWriteCombining needs Database storage")
	}
	if o.combine && o.mode != FixedWindow && o.mode != BetterAuthWindow {
		return nil, invalidf("New: WithWriteCombining counts fixed windows; it does not serve %v", o.mode)
	}
	if err := s.check(o.mode); err != nil {
		return nil, err
	}
	if err := checkLeases(&o, s); err != nil {
		return nil, err
	}
	l := &Limiter{store: s, clock: o.clock, mode: o.mode, failOpen: o.failOpen,
		attempts: o.attempts, longest: o.longest, newTicker: realTicker, observe: o.observe}
	if o.combine {
		l.comb = newCombiner(ds)
	}
	if o.leaseSet {
		l.leases = newLeaser(s, l.comb, o.lease, o.leaseTime)
	}
	_, inMemory := s.(*memStorage)
	if inMemory && !o.clockSet {
		l.start = time.Now()
		l.startMs, l.startNs = l.start.UnixMilli(), int64(l.start.Nanosecond()%int(time.Millisecond))
	}
	// Memory storage answers a denial with the same lock and lookup the
	// cache would cost, so it goes without one.
	if o.cache > 0 && !inMemory {
		l.denials = newBoundedMap(o.cache, func(d denial) int64 { return d.until })
	}
	return l, nil
}

// Consume spends one unit of key's budget under rule.
func (l *Limiter) Consume(ctx context.Context, key string, rule Rule) (Decision, error) {
	return l.ConsumeN(ctx, key, rule, 1)
}

// Check reports whether a request of cost 1 would be admitted now, without
// counting anything: ConsumeN with cost 0.
func (l *Limiter) Check(ctx context.Context, key string, rule Rule) (Decision, error) {
	return l.ConsumeN(ctx, key, rule, 0)
}

// ConsumeN spends cost units of key's budget under rule when they fit in the
// current window, and denies the request otherwise, leaving the count as it
// was. Cost 0 only checks: nothing is written, and Allowed reports whether
// a request of cost 1 would be admitted. A cost above rule.Max is never
// admitted; its RetryAfter only says when the window resets. Max 0 denies
// every request without asking the storage, with RetryAfter one window.
//
// A key must be valid UTF-8 without NUL bytes, what every storage can hold;
// build keys from untrusted input with [SafeKey]. A key the storage cannot
// hold is an error wrapping core.ErrInvalid, denied whatever the failure
// policy.
func (l *Limiter) ConsumeN(ctx context.Context, key string, rule Rule, cost int64) (d Decision, err error) {
	if l != nil && l.observe != nil {
		return l.observed(ctx, key, rule, cost)
	}
	err = l.consumeInto(&d, ctx, key, &rule, cost)
	return d, err
}

// consumeN is ConsumeN without the observer.
func (l *Limiter) consumeN(ctx context.Context, key string, rule Rule, cost int64) (d Decision, err error) {
	err = l.consumeInto(&d, ctx, key, &rule, cost)
	return d, err
}

// consumeInto decides into d, a zero Decision, by pointer, and reads the
// rule by pointer: both are large enough that copying them from call to
// call showed in a Memory decision's profile (the lone-rule fast path:
// ConsumeN → consumeInto → the storage; no allocation, the clock read
// once).
func (l *Limiter) consumeInto(d *Decision, ctx context.Context, key string, r *Rule, cost int64) (err error) {
	if err := l.usable(); err != nil {
		d.Limit = r.Max
		return err
	}
	now := l.now()
	if err := l.validateRef(key, r, cost); err != nil {
		d.Limit = r.Max
		return keyError(key, err)
	}
	// Max 0 and a cached denial are answered without the storage.
	var st state
	known := r.Max == 0
	if known {
		st.reset = r.frame(now).end()
	} else if l.denials != nil {
		st, known = l.cached(key, r, now)
	}
	if !known {
		switch {
		case cost == 0 || cost > r.Max:
			st, err = l.store.peek(ctx, key, *r, now, l.mode)
			if l.leases != nil {
				st = l.leases.peeked(key, *r, now, st)
			}
			if cost > r.Max {
				st.allowed = false
			}
		case l.leases != nil:
			st, err = l.leases.consume(ctx, key, *r, cost, now, l.attempts)
		case l.comb != nil:
			st, err = l.comb.consume(ctx, key, *r, cost, now, l.mode, l.attempts)
		default:
			if ms, ok := l.store.(*memStorage); ok {
				st, err = ms.consumeRule(ctx, key, r, cost, now, l.mode)
				break
			}
			st, err = l.store.consume(ctx, key, *r, cost, now, l.mode, l.attempts)
		}
		if err != nil {
			// A shadow rule never denies: its storage failing admits.
			d.Allowed, d.Limit = (l.failOpen || r.Shadow) && outage(ctx, err), r.Max
			return keyError(key, err)
		}
		if !st.allowed && st.count >= r.Max && st.reset > now && l.denials != nil {
			l.denials.put(key, denialOf(r, st.reset), now)
		}
	}
	l.decide(d, r, now, cost, st)
	if r.Shadow && !d.Allowed {
		d.Allowed, d.WouldDeny, d.RetryAfter = true, true, 0
	}
	return nil
}

// outage reports whether err is a failure of the storage, which the
// fail-open policy may admit, rather than one the request causes: bad
// input, a table unfit for exact decisions, or the request's own context
// ending. The context is asked itself rather than the error matched, since
// drivers report a cancelled query in their own words (a closed
// connection, say).
func outage(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, core.ErrInvalid) && !errors.Is(err, core.ErrSchema)
}

// usable refuses a nil or zero Limiter (one not made by New) with an error
// instead of a nil-pointer panic.
func (l *Limiter) usable() error {
	if l == nil || l.store == nil || l.clock == nil {
		return invalidf("the Limiter is not initialised: make it with ratelimit.New")
	}
	return l.txErr
}

// CheckRule reports, before any request is decided, whether l can decide
// requests under rule: l made by [New], rule valid ([Rule.Validate]) and
// computable exactly under l's mode (see Rule.Validate), and
// its window no longer than the one [WithLongestWindow] declares.
// [Unlimited], which middleware lets through without asking l, passes
// whenever l is made by New. The error wraps core.ErrInvalid. Middleware
// calls it when it is built, so that a bad rule is an error then rather
// than on every request.
func (l *Limiter) CheckRule(rule Rule) error {
	if err := l.usable(); err != nil {
		return err
	}
	if rule == Unlimited {
		return nil
	}
	if err := rule.Validate(); err != nil {
		return err
	}
	if p := rule.modeProblem(l.mode); p != "" {
		return invalidf("%s", p)
	}
	if p := l.leases.problem(rule); p != "" {
		return invalidf("%s", p)
	}
	if l.longest > 0 && rule.longest() > l.longest {
		return invalidf("window %v is longer than the limiter's longest window %v", rule.longest(), l.longest)
	}
	return nil
}

// validate refuses a request before any I/O. Its errors do not name the
// key: the caller wraps them with keyError.
func (l *Limiter) validate(key string, rule Rule, cost int64) error {
	return l.validateRef(key, &rule, cost)
}

// validateRef is validate with the rule by pointer, as the lone-rule path
// holds it: each check reads the caller's rule rather than a copy of its
// eight words (Rule.Validate is r.problem, called here directly).
func (l *Limiter) validateRef(key string, r *Rule, cost int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if cost < 0 {
		return invalidf("cost %d must not be negative", cost)
	}
	if p := r.problem(); p != "" {
		return invalidf("%s", p)
	}
	if p := r.modeProblem(l.mode); p != "" {
		return invalidf("%s", p)
	}
	if l.leases != nil {
		if p := l.leases.problem(*r); p != "" {
			return invalidf("%s", p)
		}
	}
	if l.longest > 0 && r.longest() > l.longest {
		return invalidf("rule window %v is longer than the declared longest window %v", r.longest(), l.longest)
	}
	return nil
}

// keyError wraps an error about key: the key only redacted (a key may be a
// secret, such as an API key from a header, and of any length), in the
// error's text and in its cause's.
func keyError(key string, err error) error { return driver.WrapKey("ratelimit", key, err) }

// CheckSchema reports, before any decision needs it, whether the storage's
// table has what exact decisions depend on (see core.DB.CheckSchema): with
// database storage, the unique index on the rate-limit key and a
// comparison that does not ignore trailing spaces. Other storages have no
// table and always pass. The limiter runs it itself before its first
// decision; call it at start-up to fail early. A success is remembered; a
// failure (wrapping core.ErrSchema, or the error that stopped the check)
// is asked again next time.
func (l *Limiter) CheckSchema(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	if s, ok := l.store.(*dbStorage); ok {
		if err := s.ready(ctx); err != nil {
			return fmt.Errorf("ratelimit: %w", err)
		}
	}
	return nil
}

// Now reads the limiter's clock ([WithClock]) as its decisions read it, to
// the millisecond: middleware states a [Decision]'s Reset relative to it,
// as seconds from now. l must be made by [New].
func (l *Limiter) Now() time.Time { return time.UnixMilli(l.now()) }

// now reads the clock in epoch milliseconds, the storages' resolution.
func (l *Limiter) now() int64 {
	if !l.start.IsZero() {
		return l.startMs + (l.startNs+int64(time.Since(l.start)))/int64(time.Millisecond)
	}
	return l.clock().UnixMilli()
}

// decide turns a storage's state into the caller's Decision, in place:
// the struct is large enough that copies show in a memory decision.
// d is the caller's zero Decision: its fields are set one by one rather
// than the whole struct assigned, which zeroes it again first.
func (l *Limiter) decide(d *Decision, rule *Rule, now, cost int64, st state) {
	d.Allowed, d.Limit, d.Remaining = st.allowed, rule.Max, max(rule.Max-st.count, 0)
	d.Reset = time.UnixMilli(st.reset).UTC()
	if !st.allowed {
		d.RetryAfter = time.Duration(max(st.reset-now, 0)) * time.Millisecond
		l.gcraRetry(d, rule, now, cost)
	}
}

// denial is a key known to be full until an instant, under the rule's
// counting: the storage's answer for the key, which depends on the
// rule's Max and its span (Window, or the Calendar in its Location) and on
// nothing else. Name and Shadow change what the decision reports, not
// what the storage holds (a policy's rule names its storage key, and the
// cache is keyed by that), so the entry keeps only the four words that
// decide a match: comparing and copying the whole, larger Rule made a
// cached denial a third slower.
type denial struct {
	until int64
	max   int64
	span  int64          // the Window, or -Calendar for a calendar rule (whose Window is 0)
	loc   *time.Location // a calendar rule's zone; nil otherwise
}

// denialOf is the entry recording that key is full under r until until.
func denialOf(r *Rule, until int64) denial {
	d := denial{until: until, max: r.Max, span: int64(r.Window)}
	if r.Calendar != 0 {
		d.span, d.loc = -int64(r.Calendar), r.location()
	}
	return d
}

// cached returns the state of a key the denial cache holds as full under
// rule.
func (l *Limiter) cached(key string, r *Rule, now int64) (state, bool) {
	if l.denials == nil || l.denials.empty() {
		return state{}, false
	}
	d, ok := l.denials.get(key, now)
	if !ok || d.max != r.Max {
		return state{}, false
	}
	if r.Calendar == 0 {
		ok = d.span == int64(r.Window)
	} else {
		ok = d.span == -int64(r.Calendar) && d.loc == r.location()
	}
	if !ok {
		return state{}, false
	}
	return state{count: r.Max, reset: d.until}, true
}

// lostRace reports a guarded write that lost to a concurrent one inside
// core's transaction fallback: worth another attempt, not a failure.
func lostRace(err error) bool { return errors.Is(err, core.ErrContention) }

// isNil reports whether v is nil or holds a nil pointer, map, slice,
// function or channel: a typed nil passes a plain v == nil test and then
// panics on its first call.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// String names the mode as its constant does.
func (m Mode) String() string {
	switch m {
	case FixedWindow:
		return "FixedWindow"
	case BetterAuthWindow:
		return "BetterAuthWindow"
	case SlidingWindow:
		return "SlidingWindow"
	case GCRA:
		return "GCRA"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}
