package ratelimit

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// memTable holds [Memory]'s counters: at most a fixed number of keys, in
// shards picked by the key's hash, each an open-addressed table of
// entries. A decision on a key it holds takes no lock but the entry's own:
// the key is hashed once (the low bits pick the shard, the rest the slot),
// its slot is found by atomic loads, and only the entry is locked while
// the algorithm runs on it. So decisions on different keys share no lock
// and no written cache line, and a hot key's decisions contend only for
// its entry.
//
// A shard's lock serialises the changes to its table: inserting a key,
// removing one (eviction, [Limiter.Reset], Prune) and rebuilding the table
// when its tombstones pile up. A removed entry is marked gone under its own
// lock before its slot becomes a tombstone, so a decision that found it
// just before sees the mark once it holds the entry, and looks the key up
// again: no admission is ever counted on a counter nobody reads. Lock
// order: a shard's lock, then an entry's; never the other way.
type memTable struct {
	seed   maphash.Seed
	shards []memShard
	mask   uint64 // len(shards)-1: the shard count is a power of two
	shift  uint   // log2(len(shards)): the hash's bits above it pick the slot
}

type memShard struct {
	memShardFields
	_ [64 - unsafe.Sizeof(memShardFields{})%64]byte // one cache line each
}

type memShardFields struct {
	mu    sync.Mutex // guards every change to slots, and live and used
	slots atomic.Pointer[memSlots]
	live  int // entries held
	used  int // slots not nil: entries and tombstones
	cap   int // the most entries this shard holds
}

// memSlots is one shard's table: a power-of-two number of slots, never
// more than three quarters used, so that every probe meets a nil slot.
type memSlots struct {
	mask uint64
	s    []atomic.Pointer[memEntry]
}

// memEntry is one key's counter. tag and key never change once the entry
// is published; c and gone are guarded by mu. It is 64 bytes, one cache
// line (64-byte objects are allocated 64-byte aligned): with a whole
// uint64 hash it took 72, in the 80-byte size class, and most entries
// straddled two lines, a second cache miss per decision on a key not in
// cache (the uniform case). The 32-bit tag only spares most string
// comparisons on a probe; the slot comes from the whole hash.
type memEntry struct {
	mu   sync.Mutex
	tag  uint32 // the hash's top 32 bits
	gone bool   // removed from its table: look the key up again
	key  string
	c    counter
}

// tagOf is the tag of an entry whose key hashes to h.
func tagOf(h uint64) uint32 { return uint32(h >> 32) }

// memTombstone fills a removed entry's slot: probes go on past it. Its
// empty key matches no key a limiter accepts.
var memTombstone = new(memEntry)

func newMemTable(maxKeys int) *memTable {
	n := min(max(maxKeys/keysPerShard, 1), maxShards)
	n = 1 << (bits.Len(uint(n)) - 1)
	t := &memTable{seed: maphash.MakeSeed(), shards: make([]memShard, n), mask: uint64(n - 1), shift: uint(bits.Len(uint(n)) - 1)}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.cap = maxKeys / n // the remainder spread so that the caps add up to maxKeys
		if i < maxKeys%n {
			sh.cap++
		}
		sh.slots.Store(newMemSlots(8))
	}
	return t
}

func newMemSlots(n int) *memSlots {
	return &memSlots{mask: uint64(n - 1), s: make([]atomic.Pointer[memEntry], n)}
}

// shard returns key's hash and shard.
func (t *memTable) shard(key string) (uint64, *memShard) {
	h := maphash.String(t.seed, key)
	return h, &t.shards[h&t.mask]
}

// find returns the entry of key (hash h) in tab and its slot, or nil and
// the first nil slot. It takes no lock.
func (t *memTable) find(tab *memSlots, h uint64, key string) (*memEntry, uint64) {
	for i := (h >> t.shift) & tab.mask; ; i = (i + 1) & tab.mask {
		e := tab.s[i].Load()
		if e == nil {
			return nil, i
		}
		if e.tag == tagOf(h) && e.key == key {
			return e, i
		}
	}
}

// lookup returns key's entry, locked, or nil when the table holds none.
func (t *memTable) lookup(key string) *memEntry {
	h, sh := t.shard(key)
	for {
		e, _ := t.find(sh.slots.Load(), h, key)
		if e == nil {
			return nil
		}
		e.mu.Lock()
		if !e.gone {
			return e
		}
		e.mu.Unlock() // removed meanwhile: its slot is a tombstone now
	}
}

// acquire returns key's entry, locked, creating it when the table holds
// none (existed false: its counter is zero), after making room when the
// shard is full.
func (t *memTable) acquire(key string, now int64) (e *memEntry, existed bool) {
	h, sh := t.shard(key)
	if e := t.live(sh, h, key); e != nil {
		return e, true
	}
	return t.insert(sh, h, key, now)
}

// live is acquire's lock-free path: key's entry, locked, when the table
// holds it and it has not been removed; nil otherwise.
func (t *memTable) live(sh *memShard, h uint64, key string) *memEntry {
	e, _ := t.find(sh.slots.Load(), h, key)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if e.gone { // removed after find saw it: the caller looks again under sh.mu
		e.mu.Unlock()
		return nil
	}
	return e
}

// insert is acquire's path under the shard's lock: the key's entry if
// another decision inserted it meanwhile, a new one otherwise.
func (t *memTable) insert(sh *memShard, h uint64, key string, now int64) (*memEntry, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tab := sh.slots.Load()
	if e, _ := t.find(tab, h, key); e != nil { // under sh.mu nothing removes it
		e.mu.Lock()
		return e, true
	}
	if sh.live >= sh.cap {
		t.makeRoom(sh, now)
	}
	if (sh.used+1)*4 > len(tab.s)*3 {
		tab = t.rebuild(sh)
	}
	e := &memEntry{tag: tagOf(h), key: key}
	e.mu.Lock()
	_, i := t.find(tab, h, key)
	tab.s[i].Store(e)
	sh.live++
	sh.used++
	return e, false
}

// rebuild replaces sh's table (sh.mu held) by one without tombstones, at
// most half full with room for one more entry, and returns it.
func (t *memTable) rebuild(sh *memShard) *memSlots {
	n := 8
	for n < 2*(sh.live+1) {
		n *= 2
	}
	old, tab := sh.slots.Load(), newMemSlots(n)
	for i := range old.s {
		if e := old.s[i].Load(); e != nil && e != memTombstone {
			_, j := t.find(tab, maphash.String(t.seed, e.key), e.key) // rare: the hash is not kept whole
			tab.s[j].Store(e)
		}
	}
	sh.used = sh.live
	sh.slots.Store(tab)
	return tab
}

// evict marks e gone and tombstones its slot i (sh.mu and e.mu held).
func (sh *memShard) evict(tab *memSlots, i uint64, e *memEntry) {
	e.gone = true
	tab.s[i].Store(memTombstone)
	sh.live--
}

// makeRoom (sh.mu held) drops sh's expired entries and, when none had
// expired, the one that expires soonest: it has the least left to lose.
func (t *memTable) makeRoom(sh *memShard, now int64) {
	tab := sh.slots.Load()
	soonest, at := -1, int64(0)
	for i := range tab.s {
		e := tab.s[i].Load()
		if e == nil || e == memTombstone {
			continue
		}
		e.mu.Lock()
		if x := e.c.expiry(); x <= now {
			sh.evict(tab, uint64(i), e)
		} else if soonest < 0 || x < at {
			soonest, at = i, x
		}
		e.mu.Unlock()
	}
	if sh.live >= sh.cap && soonest >= 0 {
		e := tab.s[soonest].Load()
		e.mu.Lock()
		sh.evict(tab, uint64(soonest), e)
		e.mu.Unlock()
	}
}

// expiry is when a counter stops mattering (see memStorage.consume).
func (c *counter) expiry() int64 { return c.last + c.span }

// sweep removes every expired entry and returns how many.
func (t *memTable) sweep(now int64) int64 {
	var n int64
	for s := range t.shards {
		sh := &t.shards[s]
		sh.mu.Lock()
		tab := sh.slots.Load()
		for i := range tab.s {
			e := tab.s[i].Load()
			if e == nil || e == memTombstone {
				continue
			}
			e.mu.Lock()
			if e.c.expiry() <= now {
				sh.evict(tab, uint64(i), e)
				n++
			}
			e.mu.Unlock()
		}
		sh.mu.Unlock()
	}
	return n
}

// remove deletes key's entry, if any.
func (t *memTable) remove(key string) {
	h, sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tab := sh.slots.Load()
	if e, i := t.find(tab, h, key); e != nil {
		e.mu.Lock()
		sh.evict(tab, i, e)
		e.mu.Unlock()
	}
}

// len returns how many entries are held, expired ones not yet removed
// included.
func (t *memTable) len() int {
	n := 0
	for s := range t.shards {
		sh := &t.shards[s]
		sh.mu.Lock()
		n += sh.live
		sh.mu.Unlock()
	}
	return n
}
