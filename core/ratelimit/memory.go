package ratelimit

import "context"

// Memory keeps counters in this process: at most maxKeys of them, in shards
// with a lock each. A full shard makes room for a new key by dropping its
// expired counters first and, when none has expired, the one whose window
// ends soonest: that key then starts afresh, a deliberate trade of
// exactness for bounded memory. Size maxKeys for your number of live keys.
//
// Without [WithClock], a limiter on Memory reads the wall time once, when
// it is made, and the monotonic clock from then on: its windows live in
// this process alone, so a step of the wall clock (set by hand, or by NTP)
// does not move them.
func Memory(maxKeys int) Storage {
	s := &memStorage{maxKeys: maxKeys}
	if maxKeys > 0 {
		s.m = newBoundedMap(maxKeys, func(e *memEntry) int64 { return e.last + e.window })
	}
	return s
}

type memStorage struct {
	maxKeys int
	m       *boundedMap[*memEntry]
}

type memEntry struct {
	count, last, window int64
	prev                int64 // SlidingWindow: the previous window's count (sliding.go)
}

func (s *memStorage) check(Mode) error {
	if s.maxKeys <= 0 {
		return invalidf("Memory: maxKeys %d must be positive", s.maxKeys)
	}
	return nil
}

// consume runs the same decision as the database storage, under the shard's
// lock instead of guarded writes. The lock is released by hand rather than
// deferred: this is the whole of a decision's storage cost.
func (s *memStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, _ int) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	w := rule.Window.Milliseconds()
	sh := s.m.lock(key)
	e, ok := sh.m[key]
	switch {
	case !ok:
		s.m.store(sh, key, &memEntry{count: cost, last: now, window: w}, now)
		sh.mu.Unlock()
		return state{allowed: true, count: cost, reset: now + w}, nil
	case now-e.last >= w:
		// A new window on a known key: the entry is reused, not replaced.
		e.count, e.last, e.window = cost, now, w
		sh.mu.Unlock()
		return state{allowed: true, count: cost, reset: now + w}, nil
	case e.count > rule.Max-cost:
		st := state{count: e.count, reset: e.last + w}
		sh.mu.Unlock()
		return st, nil
	}
	e.count += cost
	e.window = w
	if m == BetterAuthWindow {
		e.last = now
	}
	st := state{allowed: true, count: e.count, reset: e.last + w}
	sh.mu.Unlock()
	return st, nil
}

func (s *memStorage) peek(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	sh := s.m.lock(key)
	e, ok := sh.m[key]
	var count, last int64
	if ok {
		count, last = e.count, e.last
	}
	sh.mu.Unlock()
	return peekState(ok, count, last, rule, now), nil
}

func (s *memStorage) prune(_ context.Context, now, _ int64) (int64, error) {
	return s.m.sweep(now), nil
}

// len returns how many counters the storage holds, expired ones included.
func (s *memStorage) len() int { return s.m.len() }
