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
		s.m = newMemTable(maxKeys)
	}
	return s
}

type memStorage struct {
	maxKeys int
	m       *memTable
	pol     policyLocks // see consumeAll
}

func (s *memStorage) check(Mode) error {
	if s.maxKeys <= 0 {
		return invalidf("Memory: maxKeys %d must be positive", s.maxKeys)
	}
	return nil
}

// consume applies m's algorithm to the key's counter under the entry's
// own lock instead of guarded writes (see memTable: no other lock is
// taken for a key the table holds). A counter expires, for eviction, span
// after last: a fixed window's end; under SlidingWindow twice the window,
// when neither of its windows matters any more; under GCRA (span 0) its
// tat, from when the bucket is full, as with no counter. The lock is
// released by hand rather than deferred: this is the whole of a
// decision's storage cost.
func (s *memStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, m Mode, _ int) (state, error) {
	return s.consumeRule(ctx, key, &rule, cost, now, m)
}

// consumeRule is consume with the rule by pointer: the limiter's lone-rule
// path calls it directly, without the interface call and the copy of the
// rule it takes.
func (s *memStorage) consumeRule(ctx context.Context, key string, rule *Rule, cost, now int64, m Mode) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	e, ok := s.m.acquire(key, now)
	var st state
	st = applyMode(&e.c, ok, rule, cost, now, m)
	e.mu.Unlock()
	return st, nil
}

// applyMode decides a request of cost on c (exists false: none stored)
// by m's algorithm, in place: c becomes the counter after it, and it
// returns the state to report. Counter and rule go by pointer: copying
// them in and out showed in a Memory decision's profile.
func applyMode(c *counter, exists bool, rule *Rule, cost, now int64, m Mode) (st state) {
	switch m {
	case SlidingWindow:
		*c, st = slid(*c, exists, *rule, cost, now)
	case GCRA:
		*c, st = gcraCounter(*c, exists, *rule, cost, now)
	default:
		st = windowed(c, exists, rule, cost, now, m == BetterAuthWindow)
	}
	return st
}

func (s *memStorage) peek(ctx context.Context, key string, rule Rule, now int64, m Mode) (state, error) {
	if err := ctx.Err(); err != nil {
		return state{}, err
	}
	var c counter
	e := s.m.lookup(key)
	ok := e != nil
	if ok {
		c = e.c
		e.mu.Unlock()
	}
	switch m {
	case SlidingWindow:
		return slidPeek(c, ok, rule, now), nil
	case GCRA:
		tat := now
		if ok {
			tat = c.last
		}
		return gcraPeek(rule, gcraInterval(rule), tat, now), nil
	}
	return peekState(ok, c.count, c.last, rule, now), nil
}

func (s *memStorage) prune(_ context.Context, now, _ int64) (int64, error) {
	return s.m.sweep(now), nil
}

// len returns how many counters the storage holds, expired ones included.
func (s *memStorage) len() int { return s.m.len() }

func (s *memStorage) reset(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.m.remove(key)
	return nil
}
