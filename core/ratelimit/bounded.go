package ratelimit

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// boundedMap is a map of at most a fixed number of keys, split into shards
// with a lock each so that no lock is global. Every value has an expiry
// (epoch ms). When a shard is full, a new key first evicts the shard's
// expired entries and, if none had expired, the entry that expires soonest:
// it has the least left to lose.
type boundedMap[V any] struct {
	// held counts the entries of every shard, so that an empty map (a
	// denial cache before any denial) is answered by one atomic load, no
	// hash and no lock: the cache costs nothing while it is unused.
	held   atomic.Int64
	seed   maphash.Seed
	shards []boundedShard[V]
	mask   uint64 // len(shards)-1: the shard count is a power of two
	expiry func(V) int64
}

type boundedShard[V any] struct {
	shard[V]
	_ [64 - unsafe.Sizeof(shard[int]{})%64]byte // one cache line each: no false sharing between locks
}

type shard[V any] struct {
	mu  sync.Mutex
	m   map[string]V
	cap int
}

// keysPerShard keeps shards big enough that eviction stays rare, and small
// maps in one shard so that their bound is exact.
const (
	keysPerShard = 64
	maxShards    = 64
)

func newBoundedMap[V any](maxKeys int, expiry func(V) int64) *boundedMap[V] {
	n := min(max(maxKeys/keysPerShard, 1), maxShards)
	n = 1 << (bits.Len(uint(n)) - 1) // a power of two, so a mask picks the shard
	b := &boundedMap[V]{seed: maphash.MakeSeed(), shards: make([]boundedShard[V], n), mask: uint64(n - 1), expiry: expiry}
	for i := range b.shards {
		// Spread the remainder so that the caps add up to maxKeys exactly.
		b.shards[i].shard = shard[V]{m: map[string]V{}, cap: maxKeys / n}
		if i < maxKeys%n {
			b.shards[i].cap++
		}
	}
	return b
}

// lock returns key's shard, locked.
func (b *boundedMap[V]) lock(key string) *boundedShard[V] {
	s := &b.shards[maphash.String(b.seed, key)&b.mask]
	s.mu.Lock()
	return s
}

// get returns the live value at key, dropping it when it has expired.
func (b *boundedMap[V]) get(key string, now int64) (V, bool) {
	s := b.lock(key)
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if ok && b.expiry(v) <= now {
		delete(s.m, key)
		b.held.Add(-1)
		var zero V
		return zero, false
	}
	return v, ok
}

// put stores v at key, making room first when key is new and the shard full.
func (b *boundedMap[V]) put(key string, v V, now int64) {
	s := b.lock(key)
	defer s.mu.Unlock()
	b.store(s, key, v, now)
}

// store is put on a shard the caller holds.
func (b *boundedMap[V]) store(s *boundedShard[V], key string, v V, now int64) {
	if _, ok := s.m[key]; !ok {
		if len(s.m) >= s.cap {
			b.makeRoom(s, now)
		}
		b.held.Add(1)
	}
	s.m[key] = v
}

func (b *boundedMap[V]) makeRoom(s *boundedShard[V], now int64) {
	var (
		soonest string
		at      int64
		found   bool
	)
	for k, v := range s.m {
		e := b.expiry(v)
		if e <= now {
			delete(s.m, k)
			b.held.Add(-1)
			continue
		}
		if !found || e < at {
			soonest, at, found = k, e, true
		}
	}
	if len(s.m) >= s.cap && found {
		delete(s.m, soonest)
		b.held.Add(-1)
	}
}

// sweep deletes every expired entry and returns how many.
func (b *boundedMap[V]) sweep(now int64) int64 {
	var n int64
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		for k, v := range s.m {
			if b.expiry(v) <= now {
				delete(s.m, k)
				b.held.Add(-1)
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// len returns how many entries are held, expired ones not yet dropped included.
func (b *boundedMap[V]) len() int {
	n := 0
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// remove deletes key.
func (b *boundedMap[V]) remove(key string) {
	s := b.lock(key)
	if _, ok := s.m[key]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.m, key)
	b.held.Add(-1)
	s.mu.Unlock()
}

// empty reports whether the map holds nothing, without a lock.
func (b *boundedMap[V]) empty() bool { return b.held.Load() == 0 }
