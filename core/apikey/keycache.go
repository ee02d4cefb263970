package apikey

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// DefaultKeyStateCache is how many keys a [Manager] in database mode
// remembers, by default, as it last saw them (see [WithKeyStateCache]):
// a few hundred bytes each, a few megabytes in all.
const DefaultKeyStateCache = 16384

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
	m  map[string]*StoredKey
}

// newKeyCache returns a cache of at most n keys, or nil for n ≤ 0.
func newKeyCache(n int) *keyCache {
	if n <= 0 {
		return nil
	}
	c := &keyCache{seed: maphash.MakeSeed(), limit: int64(n)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*StoredKey)
	}
	return c
}

func (c *keyCache) shard(hash string) *keyShard {
	return &c.shards[maphash.String(c.seed, hash)%keyShards]
}

// get returns the key last seen under hash, or nil. The caller must not
// change it.
func (c *keyCache) get(hash string) *StoredKey {
	if c == nil {
		return nil
	}
	sh := c.shard(hash)
	sh.mu.Lock()
	s := sh.m[hash]
	sh.mu.Unlock()
	return s
}

// put remembers s, which the caller must not change afterwards. When the
// cache is full, a new key takes the place of one in its shard, whichever
// the map's randomised iteration offers first: cheap, and no worse than
// any other choice for a hint. (A shard with none to give, the others
// holding every key, does not take it.)
func (c *keyCache) put(s *StoredKey) {
	if c == nil || s == nil {
		return
	}
	sh := c.shard(s.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[s.Key]; !ok && !c.reserve() {
		if len(sh.m) == 0 {
			return
		}
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[s.Key] = s
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
