package ratelimit

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-go/sluice/core/internal/testrace"
)

// admitOne decides one request of a Max-1 fixed window on e (locked,
// existed: it held a counter) and unlocks it.
func admitOne(e *memEntry, existed bool) bool {
	st := windowed(&e.c, existed, &Rule{Window: time.Hour, Max: 1}, 1, 1, false)
	e.mu.Unlock()
	return st.allowed
}

// TestMemTableManyKeysAtOnceAreExact releases 64 goroutines on 2,000 fresh
// keys of Max 3 in a table whose shards start at 8 slots, so that inserts
// collide and tables are rebuilt under concurrent lock-free lookups: every
// key admits exactly 3. An insert that did not look again under the
// shard's lock (see TestMemTableInsertLooksAgain) or a rebuild that lost
// an entry would admit more.
func TestMemTableManyKeysAtOnceAreExact(t *testing.T) {
	const keys, max = 2000, 3
	m := newMemTable(2 * keys)
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprint("k", i)
	}
	counts := make([]atomic.Int64, keys)
	testrace.Release(64, func(g int) {
		for j := range keys {
			k := (j*7 + g*31) % keys
			e, existed := m.acquire(names[k], 1)
			st := windowed(&e.c, existed, &Rule{Window: time.Hour, Max: max}, 1, 1, false)
			e.mu.Unlock()
			if st.allowed {
				counts[k].Add(1)
			}
		}
	})
	for k := range counts {
		if n := counts[k].Load(); n != max {
			t.Fatalf("key %s admitted %d, want %d", names[k], n, max)
		}
	}
	if n := m.len(); n != keys {
		t.Errorf("table holds %d entries, want %d", n, keys)
	}
}

// TestMemTableInsertLooksAgain: a decision that missed the key without a
// lock, while another inserted it, finds that entry under the shard's lock
// rather than inserting a second counter. brokenInsert, which skips the
// second look, admits twice and is caught.
func TestMemTableInsertLooksAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		insert func(m *memTable, sh *memShard, h uint64, key string) (*memEntry, bool)
		want   int
	}{
		{"insert", func(m *memTable, sh *memShard, h uint64, key string) (*memEntry, bool) {
			return m.insert(sh, h, key, 1)
		}, 1},
		{"brokenInsert", brokenInsert, 2},
	} {
		m := newMemTable(100)
		h, sh := m.shard("k")
		if m.live(sh, h, "k") != nil { // the first decision misses
			t.Fatal("an empty table found k")
		}
		admitted := 0
		if admitOne(m.acquire("k", 1)) { // the second inserts and admits
			admitted++
		}
		if admitOne(c.insert(m, sh, h, "k")) { // then the first inserts
			admitted++
		}
		if admitted != c.want {
			t.Errorf("%s: admitted %d, want %d", c.name, admitted, c.want)
		}
	}
}

// brokenInsert inserts without looking for the key again.
func brokenInsert(m *memTable, sh *memShard, h uint64, key string) (*memEntry, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := &memEntry{tag: tagOf(h), key: key}
	e.mu.Lock()
	tab := sh.slots.Load()
	_, i := m.find(tab, h, key)
	tab.s[i].Store(e)
	sh.live++
	sh.used++
	return e, false
}

// TestMemTableRemovedEntryIsNotCounted: a decision that found an entry just
// before it was removed (a reset) sees it gone once it holds it, and
// counts on the key's new entry, which the next decision reads. Counting
// on the removed one, as brokenLive does, loses the admission: the key then
// admits again, twice in a window of Max 1.
func TestMemTableRemovedEntryIsNotCounted(t *testing.T) {
	for _, c := range []struct {
		name   string
		broken bool
		want   int
	}{{"live", false, 1}, {"brokenLive", true, 2}} {
		m := newMemTable(100)
		h, sh := m.shard("k")
		e, _ := m.find(sh.slots.Load(), h, "k")
		if e != nil {
			t.Fatal("an empty table found k")
		}
		e, _ = m.acquire("k", 1) // the key's entry, nothing counted yet
		e.mu.Unlock()
		found, _ := m.find(sh.slots.Load(), h, "k") // a decision finds the entry
		m.remove("k")                               // a reset removes it
		admitted := 0
		found.mu.Lock()
		if c.broken || !found.gone {
			if admitOne(found, true) {
				admitted++
			}
		} else {
			found.mu.Unlock()
			if admitOne(m.acquire("k", 1)) {
				admitted++
			}
		}
		if admitOne(m.acquire("k", 1)) { // the next decision
			admitted++
		}
		if admitted != c.want {
			t.Errorf("%s: admitted %d after the reset, want %d", c.name, admitted, c.want)
		}
	}
}

// TestMemEntryIsOneCacheLine: an entry fills the 64-byte size class, whose
// objects are 64-byte aligned, so that a decision on a key not in cache
// misses one line for it, not two (see memEntry).
func TestMemEntryIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(memEntry{}); n > 64 {
		t.Fatalf("memEntry is %d bytes, want at most 64", n)
	}
}
