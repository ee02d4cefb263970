package ratelimit

import "testing"

// TestBoundedMapCountsWhatItHolds: the count that lets an empty denial
// cache skip its lookup follows every way an entry comes and goes (put,
// eviction to make room, expiry on get, sweep, remove), so a cache that
// holds a denial is never taken for empty.
func TestBoundedMapCountsWhatItHolds(t *testing.T) {
	m := newBoundedMap(3, func(v int64) int64 { return v })
	check := func(when string) {
		t.Helper()
		if n := m.len(); int64(n) != m.held.Load() || m.empty() != (n == 0) {
			t.Fatalf("%s: holds %d, counts %d (empty %v)", when, n, m.held.Load(), m.empty())
		}
	}
	check("new")
	for i, k := range []string{"a", "b", "c", "d"} { // d evicts the soonest
		m.put(k, int64(10+i), 0)
		check("put " + k)
	}
	m.put("d", 20, 0) // an update adds nothing
	check("update")
	if _, ok := m.get("b", 11); ok { // b expires at 11
		t.Fatal("b is live at its expiry")
	}
	check("expired get")
	m.remove("nothing")
	m.remove("c")
	check("remove")
	m.sweep(100)
	check("sweep")
	if !m.empty() {
		t.Fatal("not empty after the sweep")
	}
}
