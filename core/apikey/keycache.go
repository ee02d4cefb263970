package apikey

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/core/apikey/keystore"
)

// defaultKeyStateCache is how many keys a Manager in database mode
// remembers, by default, as it last saw them (see WithKeyStateCache):
// a few hundred bytes each, a few megabytes in all.
const defaultKeyStateCache = 16384

// keyShards splits the cache so that concurrent verifications of different
// keys rarely wait for one another.
const keyShards = 16

// keyCache remembers, for each key hash, the key as the database last
// returned it (from a read or a guarded write), so that a verification can
// plan its guarded write without reading first. It is only a hint: the
// write's guard checks, in the database, everything the plan was decided
// on, so an entry however stale can cost a miss and a read, never a wrong
// answer. Entries are never changed once stored, only replaced.
type keyCache struct {
	seed   maphash.Seed
	limit  int64
	count  atomic.Int64 // keys held, across the shards: at most limit
	shards [keyShards]keyShard
}

type keyShard struct {
	mu sync.Mutex
	m  map[string]remembered
}

// remembered is a cache entry: the key, and the values of its write's
// guard that do not change from one verification to the next, boxed once
// (see guardValues).
type remembered struct {
	s *keystore.Key
	g *guardValues
}

// guardValues are the stable values of a key's guarded write as the
// interface values that core.Where holds: boxing them for every write
// would cost an allocation each.
type guardValues struct {
	id, key                       any // the row's id and hash
	window, max, interval, amount any // nil for NULL
	// skip counts down the verifications of this key that do not try a
	// count's write (consumeCount): one missed where the write returning
	// the row then hit, so something else writes the columns a count pins
	// (Better Auth's own verification stamps lastRequest on every
	// request; an admin renamed the key). The next countBackoff take the
	// returning write at once; then a count is tried again.
	skip atomic.Int32
}

// countBackoff is how many verifications of a key take the returning
// write after a count's write missed on it: in a deployment where another
// program keeps writing the key, one verification in countBackoff pays a
// missed count (three statements instead of two on MySQL); after a single
// change, the key's counts are one statement again that many later.
const countBackoff = 64

// tryCount reports whether this key's verification may try a count's
// write, counting down skip.
func (g *guardValues) tryCount() bool {
	return g.skip.Load() <= 0 || g.skip.Add(-1) < 0
}

// newGuardValues boxes s's stable guard values.
func newGuardValues(s *keystore.Key) *guardValues {
	box := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	return &guardValues{id: s.ID, key: s.Key, window: box(s.RateLimitTimeWindow), max: box(s.RateLimitMax),
		interval: box(s.RefillInterval), amount: box(s.RefillAmount)}
}

// sameSettings reports whether a and b have the same stable guard values,
// so that one's guardValues serve the other.
func sameSettings(a, b *keystore.Key) bool {
	eq := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return a.ID == b.ID && a.Key == b.Key && eq(a.RateLimitTimeWindow, b.RateLimitTimeWindow) && eq(a.RateLimitMax, b.RateLimitMax) &&
		eq(a.RefillInterval, b.RefillInterval) && eq(a.RefillAmount, b.RefillAmount)
}

// newKeyCache returns a cache of at most n keys, or nil for n ≤ 0.
func newKeyCache(n int) *keyCache {
	if n <= 0 {
		return nil
	}
	c := &keyCache{seed: maphash.MakeSeed(), limit: int64(n)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]remembered)
	}
	return c
}

func (c *keyCache) shard(hash string) *keyShard {
	return &c.shards[maphash.String(c.seed, hash)%keyShards]
}

// get returns the key last seen under hash and its guard values, or nil.
// The caller must change neither.
func (c *keyCache) get(hash string) (*keystore.Key, *guardValues) {
	if c == nil {
		return nil, nil
	}
	sh := c.shard(hash)
	sh.mu.Lock()
	e := sh.m[hash]
	sh.mu.Unlock()
	return e.s, e.g
}

// put remembers s, which the caller must not change afterwards. When the
// cache is full, a new key takes the place of one in its shard, whichever
// the map's randomised iteration offers first: cheap, and no worse than
// any other choice for a hint. (A shard with none to give, the others
// holding every key, does not take it.)
func (c *keyCache) put(s *keystore.Key) {
	if c == nil || s == nil {
		return
	}
	sh := c.shard(s.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old, ok := sh.m[s.Key]
	var g *guardValues
	if ok && sameSettings(old.s, s) {
		g = old.g // a verification's write changes none of them
	}
	if !ok && !c.reserve() {
		if len(sh.m) == 0 {
			return
		}
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	if g == nil {
		g = newGuardValues(s)
	}
	sh.m[s.Key] = remembered{s: s, g: g}
}

// reserve counts one more key, unless the cache is full.
func (c *keyCache) reserve() bool {
	for {
		n := c.count.Load()
		if n >= c.limit {
			return false
		}
		if c.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// drop forgets the key under hash.
func (c *keyCache) drop(hash string) {
	if c == nil {
		return
	}
	sh := c.shard(hash)
	sh.mu.Lock()
	if _, ok := sh.m[hash]; ok {
		delete(sh.m, hash)
		c.count.Add(-1)
	}
	sh.mu.Unlock()
}
