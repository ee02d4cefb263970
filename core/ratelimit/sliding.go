package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// SlidingSeparator joins a key and a window number in the names of the
// counters [SlidingWindow] keeps in database and secondary storage: the
// counter of window i (the window starting at i×Window epoch milliseconds)
// of key k is named k + "#" + i in decimal, so a key has one counter per
// window. No key [SafeKey] returns ends with "#" and digits only, so these
// names never meet a fixed-window key made by SafeKey. A key too long for
// the key column with the suffix is stored by its digest instead (see
// [Limiter.ConsumeN]).
const SlidingSeparator = "#"

// slide is a key's two windows as seen at one instant: the current
// window, which started at start, and the one before it.
type slide struct {
	w, start, elapsed int64 // window length, current window's start, now − start (0 ≤ elapsed < w)
	cur, prev         int64 // counts of the current and the previous window
}

// windowOf returns the number and start of the window holding now: windows
// are aligned to multiples of w since the epoch.
func windowOf(now, w int64) (i, start int64) {
	i = now / w
	if now%w < 0 { // floor, for instants before the epoch
		i--
	}
	return i, i * w
}

func newSlide(now, w int64) slide {
	_, start := windowOf(now, w)
	return slide{w: w, start: start, elapsed: now - start}
}

// mulDiv returns floor(a×b/d) and whether the division left a remainder,
// exactly, for a, b ≥ 0, d > 0 and a result below 2^64.
func mulDiv(a, b, d int64) (uint64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(d))
	return q, r != 0
}

// weighted is the previous window's count weighted by the part of it the
// last Window still covers, rounded up: ceil(prev × (w − elapsed) / w),
// at most prev, so it never under-counts and never overflows.
func (v slide) weighted() int64 {
	if v.prev <= 0 {
		return 0
	}
	q, rem := mulDiv(v.prev, v.w-v.elapsed, v.w)
	if rem {
		q++
	}
	return int64(q)
}

// used is the current count plus the weighted previous one, saturating.
func (v slide) used() int64 {
	u, wp := v.cur, v.weighted()
	if u > (1<<63-1)-wp {
		return 1<<63 - 1
	}
	return u + wp
}

// bound is the largest current count to which cost can still be added:
// cur + cost + weighted ≤ max ⇔ cur ≤ max − cost − weighted. It is
// negative when nothing fits; 0 ≤ cost ≤ max, so it never overflows.
func (v slide) bound(cost, max int64) int64 { return max - cost - v.weighted() }

// earliest returns the first instant at which a request of cost (1 ≤ cost
// ≤ max) fits, assuming no other request is counted meanwhile: in this
// window, once the previous window's weight has decayed enough, or in the
// next one, where this window's count becomes the previous one.
func (v slide) earliest(cost, max int64) int64 {
	now := v.start + v.elapsed
	if room := max - cost - v.cur; room >= 0 {
		// ceil(prev·(w−e)/w) ≤ room ⇔ prev·(w−e) ≤ room·w
		// ⇔ e ≥ w − floor(room·w/prev).
		if room >= v.prev {
			return now
		}
		q, _ := mulDiv(room, v.w, v.prev) // < w, since room < prev
		if e := v.w - int64(q); e < v.w {
			return v.start + max64(e, v.elapsed)
		}
	}
	// The next window: its previous count is cur, its own count 0.
	room := max - cost
	if room >= v.cur {
		return v.start + v.w
	}
	q, _ := mulDiv(room, v.w, v.cur)
	return v.start + v.w + (v.w - int64(q))
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// admitted is the state after a request of cost is counted, cur being the
// current window's count including it. For SlidingWindow, state.count is
// the current count plus the weighted previous one, so that Remaining is
// what a request could still spend now; state.reset is the end of the
// current fixed window for an admission.
func (v slide) admitted(cur int64) state {
	v.cur = cur
	return state{allowed: true, count: v.used(), reset: v.start + v.w}
}

// denied is the state of a request of cost that does not fit. Its reset is
// the earliest instant it fits; when not even one unit fits (count ≥ max,
// Remaining 0) it is the earliest instant one unit fits, which the denial
// cache then keeps to: no request is admitted before it, and a request of
// cost 1 is admitted at it.
func (v slide) denied(cost, max int64) state {
	used := v.used()
	if used >= max {
		return state{count: used, reset: v.earliest(1, max)}
	}
	return state{count: used, reset: v.earliest(cost, max)}
}

// peeked is the state a check reports: whether a request of cost 1 fits.
func (v slide) peeked(max int64) state {
	if v.bound(1, max) >= v.cur {
		return state{allowed: true, count: v.used(), reset: v.start + v.w}
	}
	return v.denied(1, max)
}

// ---- memory ----

// consumeSliding decides under the shard's lock. A key's entry holds its
// current window (last is its start, count its count) and the previous
// window's count (prev); its window field is twice the rule's, so that the
// entry expires when neither of its windows matters any more.
func (s *memStorage) consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64, _ int) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	v := newSlide(now, rule.Window.Milliseconds())
	sh := s.m.lock(key)
	e, ok := sh.m[key]
	if ok {
		e.roll(&v)
	}
	if v.cur > v.bound(cost, rule.Max) {
		st := v.denied(cost, rule.Max)
		sh.mu.Unlock()
		return st, nil
	}
	if !ok {
		e = &memEntry{}
		s.m.store(sh, key, e, now)
	}
	e.count, e.prev, e.last, e.window = v.cur+cost, v.prev, v.start, 2*v.w
	st := v.admitted(v.cur + cost)
	sh.mu.Unlock()
	return st, nil
}

// roll reads the entry into v as of v's window. A window the clock has
// stepped back from is decided in the latest window seen, at its start:
// nothing counted is dropped.
func (e *memEntry) roll(v *slide) {
	switch {
	case e.last == v.start:
		v.cur, v.prev = e.count, e.prev
	case e.last == v.start-v.w:
		v.prev = e.count
	case e.last > v.start:
		v.start, v.elapsed, v.cur, v.prev = e.last, 0, e.count, e.prev
	}
}

func (s *memStorage) peekSliding(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	v := newSlide(now, rule.Window.Milliseconds())
	sh := s.m.lock(key)
	if e, ok := sh.m[key]; ok {
		e.roll(&v)
	}
	sh.mu.Unlock()
	return v.peeked(rule.Max), nil
}

// ---- database ----

// slidingKeys returns the names of the rows of windows i and i−1 of key. A
// key too long for the column with the suffix is replaced by its first
// characters, "#" and its SHA-256 in unpadded base64url, as SafeKey does.
func (s *dbStorage) slidingKeys(key string, i int64) (cur, prev string, err error) {
	name := func(k string, i int64) string {
		var b [24]byte
		return k + SlidingSeparator + string(strconv.AppendInt(b[:0], i, 10))
	}
	cur, prev = name(key, i), name(key, i-1)
	if s.keySize <= 0 || utf8.RuneCountInString(cur) <= s.keySize && utf8.RuneCountInString(prev) <= s.keySize {
		return cur, prev, nil
	}
	sum := sha256.Sum256([]byte(key))
	tail := "#" + base64.RawURLEncoding.EncodeToString(sum[:])
	longest := max(len(strconv.FormatInt(i, 10)), len(strconv.FormatInt(i-1, 10))) + len(SlidingSeparator)
	keep := s.keySize - utf8.RuneCountInString(tail) - longest
	if keep < 0 {
		return "", "", invalidf("a key column of %d characters cannot hold a SlidingWindow counter's name", s.keySize)
	}
	head := key
	for n := 0; n < len(head); {
		if keep == 0 {
			head = head[:n]
			break
		}
		_, size := utf8.DecodeRuneInString(head[n:])
		n += size
		keep--
	}
	return name(head+tail, i), name(head+tail, i-1), nil
}

// read tells the rows of the current and previous windows apart by their
// lastRequest, the start of their window, rather than by the key as
// returned, which a case-insensitive collation may spell otherwise.
func (v slide) read(rows []core.Row) (cur, prev int64, exists bool) {
	for _, r := range rows {
		switch r.Int("lastRequest") {
		case v.start:
			cur, exists = r.Int("count"), true
		case v.start - v.w:
			prev = r.Int("count")
		}
	}
	return cur, prev, exists
}

// consumeSliding reads the rows of the current and previous windows in one
// query, then counts cost with one guarded write: count += cost on the
// current window's row, guarded on count ≤ max − cost − the weighted
// previous count, or creates the row when there is none. A full window is
// denied on the read alone. A write that misses (the row changed since the
// read) or a unique conflict (a concurrent opener) reads again, at most
// attempts times. The previous window's row is read on every decision, so
// a write to it landing late (a process whose clock is behind) is seen.
func (s *dbStorage) consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64, attempts int) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	kcur, kprev, err := s.slidingKeys(key, i)
	if err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	havePrev := false
	for n := 0; n < attempts; n++ {
		if err := ctx.Err(); err != nil {
			return state{}, err
		}
		var exists bool
		if !havePrev {
			rows, err := s.db.FindMany(ctx, model, []core.Where{core.In("key", kprev, kcur)}, nil)
			if err != nil {
				return state{}, err
			}
			v.cur, v.prev, exists = v.read(rows)
			havePrev = true
		} else {
			row, ok, err := s.db.FindOne(ctx, model, core.Eq("key", kcur))
			if err != nil {
				return state{}, err
			}
			v.cur, exists = row.Int("count"), ok
		}
		bound := v.bound(cost, rule.Max)
		if v.cur > bound {
			return v.denied(cost, rule.Max), nil
		}
		if !exists {
			if _, err := s.db.Create(ctx, model, map[string]any{"key": kcur, "count": cost, "lastRequest": v.start}); err != nil {
				if errors.Is(err, core.ErrConflict) {
					continue // a concurrent opener won: decide on its row
				}
				return state{}, err
			}
			return v.admitted(cost), nil
		}
		sc := requests.Get().(*request)
		sc.inc["count"] = cost
		count, ok, err := s.db.IncrementValue(ctx, core.IncrementRequest{
			Model:     model,
			Where:     append(sc.where[:0], core.Eq("key", kcur), core.Lte("count", bound)),
			Increment: sc.inc,
		})
		sc.release()
		switch {
		case lostRace(err):
		case err != nil:
			return state{}, err
		case ok:
			return v.admitted(count), nil
		}
	}
	return state{}, fmt.Errorf("%w: still losing races after %d attempts", core.ErrContention, attempts)
}

func (s *dbStorage) peekSliding(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	kcur, kprev, err := s.slidingKeys(key, i)
	if err != nil {
		return state{}, err
	}
	if err := s.ready(ctx); err != nil {
		return state{}, err
	}
	rows, err := s.db.FindMany(ctx, model, []core.Where{core.In("key", kprev, kcur)}, nil)
	if err != nil {
		return state{}, err
	}
	v.cur, v.prev, _ = v.read(rows)
	return v.peeked(rule.Max), nil
}

// ---- secondary ----

// checkSliding refuses a secondary storage without a bounded increment: a
// plain Increment would count denied requests, and under SlidingWindow a
// count carries into the next window's weight.
func (s *secondaryStorage) checkSliding() error {
	if isNil(s.s) {
		return invalidf("Secondary: nil storage (%T)", s.s)
	}
	if _, ok := s.s.(driver.BoundedIncrementer); !ok {
		return invalidf("Secondary: SlidingWindow needs a storage with a bounded increment (driver.BoundedIncrementer); %T has none", s.s)
	}
	return nil
}

// slidingName returns the counter name of window i of key.
func slidingName(key string, i int64) string {
	var b [24]byte
	return SecondaryPrefix + key + SlidingSeparator + string(strconv.AppendInt(b[:0], i, 10))
}

// get reads a counter, 0 when absent.
func (s *secondaryStorage) get(ctx context.Context, k string) (int64, error) {
	v, ok, err := s.s.Get(ctx, k)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter %q holds %q, not an integer", k, v)
	}
	return n, nil
}

// consumeSliding reads the previous window's counter, then adds cost to
// the current window's with one bounded increment whose max is Max minus
// the weighted previous count: exact, and a denial changes nothing. Each
// counter lives twice the window from its first request, past the end of
// the next window, whose decisions weigh it.
func (s *secondaryStorage) consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64, _ int) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	prev, err := s.get(ctx, slidingName(key, i-1))
	if err != nil {
		return state{}, err
	}
	v.prev = prev
	c, ok, err := s.s.(driver.BoundedIncrementer).IncrementBounded(ctx, slidingName(key, i), cost, rule.Max-v.weighted(), 2*rule.Window)
	if err != nil {
		return state{}, err
	}
	if ok {
		return v.admitted(c.Value), nil
	}
	v.cur = c.Value
	return v.denied(cost, rule.Max), nil
}

func (s *secondaryStorage) peekSliding(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	v := newSlide(now, rule.Window.Milliseconds())
	i, _ := windowOf(now, v.w)
	var err error
	if v.prev, err = s.get(ctx, slidingName(key, i-1)); err != nil {
		return state{}, err
	}
	if v.cur, err = s.get(ctx, slidingName(key, i)); err != nil {
		return state{}, err
	}
	return v.peeked(rule.Max), nil
}

// ---- reset ----

// ResetRule clears key's counters under rule, as [Limiter.Reset] does. Under
// [SlidingWindow], database and secondary storages keep one counter per
// key and window, named after the window (see [SlidingSeparator]), so
// clearing them takes the rule's window: ResetRule deletes the counters of
// the previous, current and next windows. Under other modes, and with
// [Memory] storage, it is Reset.
func (l *Limiter) ResetRule(ctx context.Context, key string, rule Rule) error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.mode != SlidingWindow {
		return l.Reset(ctx, key)
	}
	if err := l.validate(key, rule, 0); err != nil {
		return err
	}
	if l.denials != nil {
		l.denials.remove(key)
	}
	w := rule.Window.Milliseconds()
	i, _ := windowOf(l.now(), w)
	var err error
	switch s := l.store.(type) {
	case *dbStorage:
		var names []any
		for j := i - 1; j <= i+1; j++ {
			cur, _, e := s.slidingKeys(key, j)
			if e != nil {
				return fmt.Errorf("ratelimit: reset key %q: %w", key, e)
			}
			names = append(names, cur)
		}
		_, err = s.db.DeleteMany(ctx, model, core.In("key", names...))
	case *secondaryStorage:
		for j := i - 1; j <= i+1 && err == nil; j++ {
			err = s.s.Delete(ctx, slidingName(key, j))
		}
	default:
		err = l.store.reset(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("ratelimit: reset key %q: %w", key, err)
	}
	return nil
}

// slidingReset refuses Reset under SlidingWindow on storages that need the
// rule to find a key's counters.
func (l *Limiter) slidingReset() error {
	if _, mem := l.store.(*memStorage); l.mode == SlidingWindow && !mem {
		return invalidf("Reset: under SlidingWindow %T keeps a counter per window: use ResetRule with the key's rule", l.store)
	}
	return nil
}
