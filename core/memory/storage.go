package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

// Storage is an in-process [driver.SecondaryStorage] with the optional
// [driver.BoundedIncrementer] and [driver.TATAdvancer]: values and counters with
// expiry, in shards that each have their own lock, plus sets and an atomic
// read-modify-write over several keys ([Storage.Update]). It also keeps
// API keys for apikey's storage-only mode: it is a [keystore.Claimer] (with
// [keystore.Rerollable] and [keystore.OwnerSharing]) whose claims run in
// one Update, and its sets make it a [keystore.Indexer]. It serves tests,
// examples and single-process deployments; Redis (adapters/redis) is the
// shared one.
//
// A counter is stored as an integer; Get returns it in decimal. An entry
// expires at the instant its TTL ends: from then on it is absent. Expired
// entries are dropped when touched and by a sweep that runs when a shard
// has doubled in size since its last sweep, so the cost is amortised and
// memory does not grow with keys nobody reads again.
type Storage struct {
	clock  func() time.Time
	seed   maphash.Seed
	shards [storageShards]storageShard

	setsMu sync.Mutex
	sets   map[string]map[string]struct{} // sets.go
}

const storageShards = 32

// storageShard pads its fields to a whole number of cache lines: shards
// lie side by side, and goroutines working on different shards must not
// contend for one line.
type storageShard struct {
	shardFields
	_ [cacheLine - unsafe.Sizeof(shardFields{})%cacheLine]byte
}

type shardFields struct {
	mu      sync.Mutex
	entries map[string]*storageEntry
	sweepAt int // sweep when the shard reaches this size
	// calls is counted per shard: one counter for the whole storage would
	// be a line that every operation writes, whatever its key.
	calls atomic.Int64
}

// cacheLine is the size of a CPU cache line on the common platforms.
const cacheLine = 64

// minSweep is the size below which a shard is never swept.
const minSweep = 64

type storageEntry struct {
	text    string
	counter int64
	isCount bool
	expires time.Time // zero: never
}

// StorageOption configures [NewStorage].
type StorageOption func(*Storage)

// WithClock makes the storage read time from clock instead of the
// monotonic clock, so tests can move time by hand.
func WithClock(clock func() time.Time) StorageOption {
	return func(s *Storage) {
		if clock != nil {
			s.clock = clock
		}
	}
}

// NewStorage returns an empty storage.
func NewStorage(opts ...StorageOption) *Storage {
	s := &Storage{clock: monotonicClock(), seed: maphash.MakeSeed(), sets: map[string]map[string]struct{}{}}
	for i := range s.shards {
		s.shards[i].entries = map[string]*storageEntry{}
		s.shards[i].sweepAt = minSweep
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Calls returns how many operations the storage has served: one per round
// trip a networked storage would make.
func (s *Storage) Calls() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].calls.Load()
	}
	return n
}

// monotonicClock is the default clock: time.Now's instant, then read from
// the monotonic clock alone. Expiries are only ever compared with this same
// clock, so they need no wall time; one clock read is cheaper than
// time.Now's two, and a wall clock stepped back or forth moves no expiry.
func monotonicClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return start.Add(time.Since(start)) }
}

// lock counts the call, honours the context, and returns the key's shard
// locked, with the current time.
func (s *Storage) lock(ctx context.Context, key string) (*storageShard, time.Time, error) {
	sh := &s.shards[s.shardOf(key)]
	sh.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	sh.mu.Lock()
	// Read under the lock, so that operations on a key see time in the
	// order they run: a TTL handed back is never longer than what is left.
	return sh, s.clock(), nil
}

// shardOf returns the index of key's shard.
func (s *Storage) shardOf(key string) int {
	return int(maphash.String(s.seed, key) % storageShards)
}

// live returns the entry at key, dropping it when it has expired.
func (sh *storageShard) live(key string, now time.Time) (*storageEntry, bool) {
	e, ok := sh.entries[key]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(sh.entries, key)
		return nil, false
	}
	return e, ok
}

// put stores an entry, first sweeping expired ones when a new key would
// take the shard to its sweep size.
func (sh *storageShard) put(key string, e *storageEntry, now time.Time) {
	if _, exists := sh.entries[key]; !exists && len(sh.entries) >= sh.sweepAt {
		for k, old := range sh.entries {
			if !old.expires.IsZero() && !now.Before(old.expires) {
				delete(sh.entries, k)
			}
		}
		sh.sweepAt = max(2*len(sh.entries), minSweep)
	}
	sh.entries[key] = e
}

// Get returns the value at key; a counter comes back in decimal.
func (s *Storage) Get(ctx context.Context, key string) (string, bool, error) {
	sh, now, err := s.lock(ctx, key)
	if err != nil {
		return "", false, err
	}
	defer sh.mu.Unlock()
	e, ok := sh.live(key, now)
	if !ok {
		return "", false, nil
	}
	if e.isCount {
		return strconv.FormatInt(e.counter, 10), true, nil
	}
	return e.text, true, nil
}

// Set stores value at key, replacing what was there; ttl 0 means no expiry.
func (s *Storage) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("%w: memory storage Set %q: negative ttl %v", core.ErrInvalid, key, ttl)
	}
	sh, now, err := s.lock(ctx, key)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	e := &storageEntry{text: value}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	sh.put(key, e, now)
	return nil
}

// Delete removes key; a missing key is not an error.
func (s *Storage) Delete(ctx context.Context, key string) error {
	sh, _, err := s.lock(ctx, key)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	delete(sh.entries, key)
	return nil
}

// Increment adds by to the counter at key, creating it with value by and
// expiry ttl when absent. An existing counter keeps its expiry. A value set
// with Set counts as a counter when it is a decimal integer.
func (s *Storage) Increment(ctx context.Context, key string, by int64, ttl time.Duration) (driver.Counter, error) {
	c, _, err := s.increment(ctx, "Increment", key, by, 0, false, ttl)
	return c, err
}

// IncrementBounded adds by to the counter at key only when the result stays
// at or below max; see driver.BoundedIncrementer.
func (s *Storage) IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (driver.Counter, bool, error) {
	return s.increment(ctx, "IncrementBounded", key, by, max, true, ttl)
}

// sumAtMost reports whether a + b ≤ max, exactly, for any int64s.
func sumAtMost(a, b, max int64) bool {
	s := a + b
	switch {
	case b > 0 && s < a:
		return false // wrapped from above every int64
	case b < 0 && s > a:
		return true // wrapped from below every int64
	}
	return s <= max
}

var errNotCounter = errors.New("value is not an integer counter")

func (s *Storage) increment(ctx context.Context, op, key string, by, max int64, bounded bool, ttl time.Duration) (driver.Counter, bool, error) {
	if ttl <= 0 {
		return driver.Counter{}, false, fmt.Errorf("%w: memory storage %s %q: ttl must be positive, got %v", core.ErrInvalid, op, key, ttl)
	}
	sh, now, err := s.lock(ctx, key)
	if err != nil {
		return driver.Counter{}, false, err
	}
	defer sh.mu.Unlock()
	e, ok := sh.live(key, now)
	if !ok {
		if bounded && by > max {
			return driver.Counter{}, false, nil
		}
		sh.put(key, &storageEntry{counter: by, isCount: true, expires: now.Add(ttl)}, now)
		return driver.Counter{Value: by, TTL: ttl}, true, nil
	}
	if !e.isCount {
		n, err := strconv.ParseInt(e.text, 10, 64)
		if err != nil {
			return driver.Counter{}, false, fmt.Errorf("memory storage %s %q: %w", op, key, errNotCounter)
		}
		e.counter, e.isCount, e.text = n, true, ""
	}
	left := time.Duration(0)
	if !e.expires.IsZero() {
		left = e.expires.Sub(now)
	}
	// A bounded increment past max is a refusal even where the sum would
	// overflow: max is an int64, so such a sum is above it.
	if bounded && !sumAtMost(e.counter, by, max) {
		return driver.Counter{Value: e.counter, TTL: left}, false, nil
	}
	next := e.counter + by
	if (by > 0 && next < e.counter) || (by < 0 && next > e.counter) {
		return driver.Counter{}, false, fmt.Errorf("memory storage %s %q: %d + %d overflows int64", op, key, e.counter, by)
	}
	e.counter = next
	return driver.Counter{Value: next, TTL: left}, true, nil
}

// AdvanceTAT advances the theoretical arrival time at key under the
// shard's lock; see driver.TATAdvancer. The TAT is stored as a counter, so
// Get returns it in decimal; it expires, by the storage's clock, when the
// caller's clock reaches it.
func (s *Storage) AdvanceTAT(ctx context.Context, key string, now, increment, limit int64) (int64, bool, error) {
	if now < 0 || increment < 0 || limit < 0 {
		return 0, false, fmt.Errorf("%w: memory storage AdvanceTAT %q: now %d, increment %d and limit %d must not be negative", core.ErrInvalid, key, now, increment, limit)
	}
	sh, at, err := s.lock(ctx, key)
	if err != nil {
		return 0, false, err
	}
	defer sh.mu.Unlock()
	tat := now
	if e, ok := sh.live(key, at); ok {
		v := e.counter
		if !e.isCount {
			if v, err = strconv.ParseInt(e.text, 10, 64); err != nil {
				return 0, false, fmt.Errorf("memory storage AdvanceTAT %q: %w", key, errNotCounter)
			}
		}
		tat = max(tat, v)
	}
	if tat-now > limit-increment {
		return tat, false, nil
	}
	if increment == 0 {
		return tat, true, nil
	}
	tat += increment
	sh.put(key, &storageEntry{counter: tat, isCount: true, expires: at.Add(time.Duration(tat-now) * time.Millisecond)}, at)
	return tat, true, nil
}

// Len returns how many entries are stored, expired ones not yet dropped included.
func (s *Storage) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

var (
	_ driver.SecondaryStorage   = (*Storage)(nil)
	_ driver.BoundedIncrementer = (*Storage)(nil)
	_ driver.TATAdvancer        = (*Storage)(nil)
)
