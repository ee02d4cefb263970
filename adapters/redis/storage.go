package sluiceredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Storage is a driver.SecondaryStorage on Redis. It also implements
// driver.BoundedIncrementer, driver.TATAdvancer and driver.PolicyApplier
// (for the rate limiter: a policy's rules in one script) and keystore.Claimer and
// keystore.Indexer (for storage-only API keys). It is safe for concurrent use.
type Storage struct {
	client   redis.UniversalClient
	prefix   string
	inFlight int
	pipe     *pipe // nil: every command alone
}

// Option configures [New].
type Option func(*Storage)

// WithPrefix puts prefix in front of every key, to share a Redis with
// other applications (default "sluice:").
func WithPrefix(prefix string) Option { return func(s *Storage) { s.prefix = prefix } }

// DefaultInFlight is how many counter scripts a Storage has in flight
// before the calls that follow are batched (see [WithInFlight]).
const DefaultInFlight = 4

// WithInFlight sets how many counter scripts (the rate limiter's
// decisions) the storage sends alone at once, each on its own round trip;
// the calls made while n are in flight queue, and when one returns the
// queue goes as one pipeline: one write and one read on the client and on
// the server for the whole batch instead of one each. Each decision is still
// its own atomic script with its own answer; only the round trip is
// shared. A caller alone never waits; under concurrency the batches cut the
// system calls of both sides (at 32 goroutines on one two-CPU machine,
// about twice the decisions per second). n = 0 sends every call alone, as
// go-redis does; the default is [DefaultInFlight]. A negative n is refused
// by New.
func WithInFlight(n int) Option { return func(s *Storage) { s.inFlight = n } }

// New returns a storage on client: a *redis.Client, *redis.ClusterClient or *redis.Ring.
func New(client redis.UniversalClient, opts ...Option) (*Storage, error) {
	if client == nil {
		return nil, fmt.Errorf("sluiceredis: %w: nil client", core.ErrInvalid)
	}
	s := &Storage{client: client, prefix: "sluice:", inFlight: DefaultInFlight}
	for _, o := range opts {
		o(s)
	}
	if s.inFlight < 0 {
		return nil, fmt.Errorf("sluiceredis: %w: WithInFlight(%d): a negative count of round trips", core.ErrInvalid, s.inFlight)
	}
	if s.inFlight > 0 {
		s.pipe = newPipe(s.inFlight)
	}
	return s, nil
}

// Client returns the Redis client, as an escape hatch.
func (s *Storage) Client() redis.UniversalClient { return s.client }

// Unwrap returns the Redis client.
func (s *Storage) Unwrap() any { return s.client }

// Get returns the value at key.
func (s *Storage) Get(ctx context.Context, key string) (string, bool, error) {
	driver.AddRoundTrips(ctx, 1)
	v, err := s.client.Get(ctx, s.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("sluiceredis: get: %w", err)
	}
	return v, true, nil
}

// Set stores value at key; ttl 0 means no expiry, otherwise it must be a
// positive whole number of seconds.
func (s *Storage) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	driver.AddRoundTrips(ctx, 1)
	if ttl != 0 {
		if err := checkTTL(ttl); err != nil {
			return err
		}
	}
	if err := s.client.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("sluiceredis: set: %w", err)
	}
	return nil
}

// Create stores value at key, without expiry, only when no value is there
// (SET NX): the [keystore.Creator] that an owner's first SetOwnerLimits
// uses.
func (s *Storage) Create(ctx context.Context, key, value string) (bool, error) {
	driver.AddRoundTrips(ctx, 1)
	created, err := s.client.SetNX(ctx, s.prefix+key, value, 0).Result()
	if err != nil {
		return false, fmt.Errorf("sluiceredis: create: %w", err)
	}
	return created, nil
}

// Delete removes key.
func (s *Storage) Delete(ctx context.Context, key string) error {
	driver.AddRoundTrips(ctx, 1)
	if err := s.client.Del(ctx, s.prefix+key).Err(); err != nil {
		return fmt.Errorf("sluiceredis: delete: %w", err)
	}
	return nil
}

// incrementScript adds ARGV[1] and sets the expiry (ARGV[2] seconds) only
// when the counter has none, that is when this call created it. It returns
// the new value and the time left in milliseconds.
var incrementScript = newScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2]) * 1000
end
return {v, ttl}
`)

// boundedScript adds ARGV[1] only when the result stays at or below
// ARGV[2]; otherwise it changes nothing. It returns the value, the time
// left in milliseconds (-2 when there is no counter), and 1 or 0.
//
// It increments first and undoes a refused increment, rather than reading
// first: an admitted request, the common case, then costs two commands
// inside the script (INCRBY, PTTL), as many as redis_rate's GCRA spends.
// A refusal that created the counter (no expiry yet) deletes it again; a
// counter holding 0 without expiry, which counts nothing, goes too.
var boundedScript = newScript(`
local by = tonumber(ARGV[1])
local v = redis.call('INCRBY', KEYS[1], by)
local ttl = redis.call('PTTL', KEYS[1])
if v > tonumber(ARGV[2]) then
  if ttl < 0 and v == by then
    redis.call('DEL', KEYS[1])
    return {0, -2, 0}
  end
  redis.call('DECRBY', KEYS[1], by)
  return {v - by, ttl, 0}
end
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  ttl = tonumber(ARGV[3]) * 1000
end
return {v, ttl, 1}
`)

// Increment adds by to the counter at key, creating it with ttl. The
// expiry of an existing counter is never extended. ttl must be a positive
// whole number of seconds, and by within ±2^51 (the script computes in
// doubles).
func (s *Storage) Increment(ctx context.Context, key string, by int64, ttl time.Duration) (driver.Counter, error) {
	driver.AddRoundTrips(ctx, 1)
	if err := checkTTL(ttl); err != nil {
		return driver.Counter{}, err
	}
	if err := checkCalc("by", by); err != nil {
		return driver.Counter{}, err
	}
	res, err := s.evalInts(ctx, incrementScript, s.prefix+key, by, int64(ttl/time.Second))
	if err != nil {
		return driver.Counter{}, fmt.Errorf("sluiceredis: increment: %w", err)
	}
	if len(res) != 2 {
		return driver.Counter{}, fmt.Errorf("sluiceredis: increment: the script answered %d values, not 2", len(res))
	}
	return driver.Counter{Value: res[0], TTL: time.Duration(res[1]) * time.Millisecond}, nil
}

// IncrementBounded adds by only when the counter stays at or below max, in
// one script; a refused increment changes nothing. by and max must be
// within ±2^51: the script compares in doubles, exact below 2^53, so a
// larger bound (a rate-limit rule's Max, say) is refused with
// core.ErrInvalid rather than compared inexactly.
func (s *Storage) IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (driver.Counter, bool, error) {
	driver.AddRoundTrips(ctx, 1)
	if err := checkTTL(ttl); err != nil {
		return driver.Counter{}, false, err
	}
	if err := checkCalc("by", by); err != nil {
		return driver.Counter{}, false, err
	}
	if err := checkCalc("max", max); err != nil {
		return driver.Counter{}, false, err
	}
	res, err := s.evalInts(ctx, boundedScript, s.prefix+key, by, max, int64(ttl/time.Second))
	if err != nil {
		return driver.Counter{}, false, fmt.Errorf("sluiceredis: increment: %w", err)
	}
	if len(res) != 3 {
		return driver.Counter{}, false, fmt.Errorf("sluiceredis: increment: the script answered %d values, not 3", len(res))
	}
	c := driver.Counter{Value: res[0]}
	if res[1] > 0 {
		c.TTL = time.Duration(res[1]) * time.Millisecond
	}
	return c, res[2] == 1, nil
}

// checkCalc refuses, before any I/O, an operand of a counter script
// outside ±2^51: the scripts compute in doubles, and the sum of two such
// operands stays below 2^53, where doubles are exact.
func checkCalc(name string, v int64) error {
	if v <= -maxCalc || v >= maxCalc {
		return fmt.Errorf("sluiceredis: increment: %w: %s %d is outside ±2^51, beyond which the script's doubles are inexact", core.ErrInvalid, name, v)
	}
	return nil
}

// checkTTL refuses, before any I/O, a TTL Redis cannot keep exactly.
func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl%time.Second != 0 {
		return fmt.Errorf("sluiceredis: %w: ttl %v is not a positive whole number of seconds", core.ErrInvalid, ttl)
	}
	return nil
}

var (
	_ driver.SecondaryStorage   = (*Storage)(nil)
	_ driver.BoundedIncrementer = (*Storage)(nil)
)
