package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// Secondary keeps counters in a key-value store with expiry, such as Redis
// (adapters/redis) or core/memory's Storage. A counter is created with the
// window as its TTL and never extended, so only [FixedWindow] is possible.
// When s is a driver.BoundedIncrementer a denied request leaves the counter as
// it was; otherwise it is counted too (the window still ends on time, but
// Remaining reads 0 early).
func Secondary(s driver.SecondaryStorage) Storage { return &secondaryStorage{s: s} }

type secondaryStorage struct{ s driver.SecondaryStorage }

func (s *secondaryStorage) check(m Mode) error {
	if isNil(s.s) {
		return invalidf("Secondary: nil storage (%T)", s.s)
	}
	if m == GCRA {
		return s.checkGCRA()
	}
	if m == SlidingWindow {
		return s.checkSliding()
	}
	if m != FixedWindow {
		return invalidf("Secondary: a TTL counter is a fixed window; BetterAuthWindow needs Database or Memory storage")
	}
	return nil
}

func (s *secondaryStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, _ int) (state, error) {
	switch m {
	case SlidingWindow:
		return s.consumeSliding(ctx, key, rule, cost, now)
	case GCRA:
		return s.consumeGCRA(ctx, key, rule, cost, now)
	}
	k, ttl, end := fixedCounter(key, rule, now)
	if b, ok := s.s.(driver.BoundedIncrementer); ok {
		c, ok, err := b.IncrementBounded(ctx, k, cost, rule.Max, ttl)
		if err != nil {
			return state{}, err
		}
		return state{allowed: ok, count: c.Value, reset: resetAt(now, c.TTL, rule, end)}, nil
	}
	c, err := s.s.Increment(ctx, k, cost, ttl)
	if err != nil {
		return state{}, err
	}
	return state{allowed: c.Value <= rule.Max, count: c.Value, reset: resetAt(now, c.TTL, rule, end)}, nil
}

// fixedCounter returns the name and TTL of key's fixed-window counter at
// now, and the end of its window when the library knows it (a calendar
// rule's; 0 otherwise).
// A window of the rule's Window is one counter named after the key, whose
// TTL is the window: the storage's expiry ends it. A calendar rule has one
// counter per period, named after the key and the period's start (epoch
// ms, after [SlidingSeparator]), so that every process counts a period in
// one counter whatever the storage's clock; it lives until one period
// after its own ends, past any decision of a process whose clock is behind,
// rounded up to a whole second (what a store such as Redis keeps exactly,
// whatever millisecond of its period the first request reads).
func fixedCounter(key string, rule Rule, now int64) (name string, ttl time.Duration, end int64) {
	if rule.Calendar == 0 {
		return SecondaryPrefix + key, rule.Window, 0
	}
	f := rule.frame(now)
	life := (f.end() - now + f.w + 999) / 1000
	return slidingName(key, f.open), time.Duration(life) * time.Second, f.end()
}

// resetAt turns a counter's TTL into the end of its window. The TTL is
// rounded down to the millisecond, so a cached denial never outlives the
// counter. A counter without a TTL cannot say: the window is then taken to
// end a whole window from now. A calendar period's end is known and is
// the reset, whatever the TTL.
func resetAt(now int64, ttl time.Duration, rule Rule, end int64) int64 {
	if rule.Calendar != 0 {
		return end
	}
	if ttl <= 0 {
		return now + rule.Window.Milliseconds()
	}
	return now + ttl.Milliseconds()
}

// peek reads the counter and its TTL without changing either, so that a
// check reports the end of the current window, as the other storages do.
//
// Get gives no TTL. A bounded increment of 0 with max -1 never fits, so by
// driver.BoundedIncrementer's contract it changes nothing and returns the
// counter as it is, TTL included (Value 0 when absent): a read with the
// TTL in one round trip. Without it, Get tells whether a counter exists
// and an Increment of 0, which adds nothing and never extends an expiry,
// then returns its TTL. Only a counter that expires between the two is
// created afresh, holding 0: it counts nothing, and its window starts at
// most a round trip before the next request's would have.
func (s *secondaryStorage) peek(ctx context.Context, key string, rule Rule, now int64, m Mode) (state, error) {
	switch m {
	case SlidingWindow:
		return s.peekSliding(ctx, key, rule, now)
	case GCRA:
		return s.peekGCRA(ctx, key, rule, now)
	}
	k, ttl, end := fixedCounter(key, rule, now)
	var c driver.Counter
	if b, ok := s.s.(driver.BoundedIncrementer); ok {
		var err error
		if c, _, err = b.IncrementBounded(ctx, k, 0, -1, ttl); err != nil {
			return state{}, err
		}
	} else {
		v, ok, err := s.s.Get(ctx, k)
		if err != nil {
			return state{}, err
		}
		if ok {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return state{}, fmt.Errorf("counter %q holds %q, not an integer", k, v)
			}
			if c, err = s.s.Increment(ctx, k, 0, ttl); err != nil {
				return state{}, err
			}
		}
	}
	if c.Value <= 0 && c.TTL <= 0 {
		return peekState(false, 0, 0, rule, now), nil
	}
	return state{allowed: c.Value < rule.Max, count: c.Value, reset: resetAt(now, c.TTL, rule, end)}, nil
}

// prune has nothing to do: the storage expires counters itself.
func (s *secondaryStorage) prune(context.Context, int64, int64) (int64, error) { return 0, nil }

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
func (s *secondaryStorage) consumeSliding(ctx context.Context, key string, rule Rule, cost, now int64) (state, error) {
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

// consumeGCRA is one driver.TATAdvancer step (check refuses GCRA on a
// storage without it).
func (s *secondaryStorage) consumeGCRA(ctx context.Context, key string, rule Rule, cost, now int64) (state, error) {
	t := gcraInterval(rule)
	tat, ok, err := s.s.(driver.TATAdvancer).AdvanceTAT(ctx, SecondaryPrefix+key, now, cost*t, rule.Max*t)
	if err != nil {
		return state{}, err
	}
	return gcraState(rule, t, tat, now, ok), nil
}

// peekGCRA reads the tat with an advance of 0, which never writes.
func (s *secondaryStorage) peekGCRA(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	t := gcraInterval(rule)
	tat, _, err := s.s.(driver.TATAdvancer).AdvanceTAT(ctx, SecondaryPrefix+key, now, 0, rule.Max*t)
	if err != nil {
		return state{}, err
	}
	return gcraPeek(rule, t, tat, now), nil
}

// checkGCRA is the secondary storage's check for GCRA.
func (s *secondaryStorage) checkGCRA() error {
	if _, ok := s.s.(driver.TATAdvancer); !ok {
		return invalidf("Secondary: GCRA needs a storage with the driver.TATAdvancer capability, which %T lacks", s.s)
	}
	return nil
}

func (s *secondaryStorage) reset(ctx context.Context, key string) error {
	return s.s.Delete(ctx, SecondaryPrefix+key)
}

// returner is the storage's driver.LeaseReturner, or nil.
func (s *secondaryStorage) returner() driver.LeaseReturner {
	if s == nil {
		return nil
	}
	r, _ := s.s.(driver.LeaseReturner)
	return r
}

// claimTagged is consume of a lease's block of k units on a storage that
// tags its counters: the state, and the tag of the counter the units were
// claimed from (0 or less: none that a return could name). Leases count
// fixed windows of Window only, one counter named after the key.
func (s *secondaryStorage) claimTagged(ctx context.Context, r driver.LeaseReturner, key string, rule Rule, k, now int64) (state, int64, error) {
	c, ok, tag, err := r.ClaimBounded(ctx, SecondaryPrefix+key, k, rule.Max, rule.Window)
	if err != nil {
		return state{}, 0, err
	}
	return state{allowed: ok, count: c.Value, reset: resetAt(now, c.TTL, rule, 0)}, tag, nil
}
