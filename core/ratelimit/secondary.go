package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/sluice-go/sluice/core"
)

// SecondaryPrefix is put before every key a limiter stores in a secondary
// storage.
const SecondaryPrefix = "ratelimit:"

// Secondary keeps counters in a key-value store with expiry, such as Redis
// (adapters/redis) or core/memory's Storage. A counter is created with the
// window as its TTL and never extended, so only [FixedWindow] is possible.
// When s is a core.BoundedIncrementer a denied request leaves the counter as
// it was; otherwise it is counted too (the window still ends on time, but
// Remaining reads 0 early).
func Secondary(s core.SecondaryStorage) Storage { return &secondaryStorage{s: s} }

type secondaryStorage struct{ s core.SecondaryStorage }

func (s *secondaryStorage) check(m Mode) error {
	if s.s == nil {
		return invalidf("Secondary: nil storage")
	}
	if m != FixedWindow {
		return invalidf("Secondary: a TTL counter is a fixed window; BetterAuthWindow needs Database or Memory storage")
	}
	return nil
}

func (s *secondaryStorage) consume(ctx context.Context, key string, rule Rule, cost, now int64, _ Mode, _ int) (state, error) {
	k := SecondaryPrefix + key
	if b, ok := s.s.(core.BoundedIncrementer); ok {
		c, ok, err := b.IncrementBounded(ctx, k, cost, rule.Max, rule.Window)
		if err != nil {
			return state{}, err
		}
		return state{allowed: ok, count: c.Value, reset: resetAt(now, c.TTL, rule)}, nil
	}
	c, err := s.s.Increment(ctx, k, cost, rule.Window)
	if err != nil {
		return state{}, err
	}
	return state{allowed: c.Value <= rule.Max, count: c.Value, reset: resetAt(now, c.TTL, rule)}, nil
}

// resetAt turns a counter's TTL into the end of its window. The TTL is
// rounded down to the millisecond, so a cached denial never outlives the
// counter. A counter without a TTL cannot say: the window is then taken to
// end a whole window from now.
func resetAt(now int64, ttl time.Duration, rule Rule) int64 {
	if ttl <= 0 {
		return now + rule.Window.Milliseconds()
	}
	return now + ttl.Milliseconds()
}

// peek reads the counter. Get gives no TTL, so the reset it reports is only
// an upper bound, and such a denial is not cached.
func (s *secondaryStorage) peek(ctx context.Context, key string, rule Rule, now int64) (state, error) {
	v, ok, err := s.s.Get(ctx, SecondaryPrefix+key)
	if err != nil || !ok {
		return state{allowed: rule.Max > 0, reset: now + rule.Window.Milliseconds(), inexact: true}, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return state{}, err
	}
	return state{allowed: n < rule.Max, count: n, reset: now + rule.Window.Milliseconds(), inexact: true}, nil
}

// prune has nothing to do: the storage expires counters itself.
func (s *secondaryStorage) prune(context.Context, int64, int64) (int64, error) { return 0, nil }
