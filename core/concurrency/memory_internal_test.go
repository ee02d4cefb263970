package concurrency

import (
	"testing"
)

// TestMemoryForgetsIdleKeys: a key is forgotten when its last slot is
// released, and by a sweep once its leases have ended; a late release of
// a forgotten key frees nothing, and the key used again gets generations
// it never had.
func TestMemoryForgetsIdleKeys(t *testing.T) {
	s := Memory().(*memStore)
	ctx := t.Context()
	size := func() (n int) {
		s.keys.Range(func(any, any) bool { n++; return true })
		return n
	}
	a, _, _ := s.AcquireSlot(ctx, "a", 2, 100, 200)
	b, _, _ := s.AcquireSlot(ctx, "a", 2, 100, 200)
	if ok, _ := s.ReleaseSlot(ctx, "a", a, 150); !ok || size() != 1 {
		t.Fatalf("release of one of two: %t, %d keys", ok, size())
	}
	if ok, _ := s.ReleaseSlot(ctx, "a", b, 150); !ok || size() != 0 {
		t.Fatalf("release of the last: %t, %d keys, want 0", ok, size())
	}
	c, ok, _ := s.AcquireSlot(ctx, "a", 2, 150, 250)
	if !ok || c.Generation == a.Generation || c.Generation == b.Generation {
		t.Fatalf("the key used again: %t, generation %d (earlier %d, %d)", ok, c.Generation, a.Generation, b.Generation)
	}
	if ok, _ := s.ReleaseSlot(ctx, "a", a, 160); ok {
		t.Fatal("a late release after the key was forgotten freed the new holder's slot")
	}
	s.AcquireSlot(ctx, "b", 1, 150, 300)
	s.sweep(260) // a's lease ended at 250; b's runs to 300
	if _, ok := s.keys.Load("a"); ok || size() != 1 {
		t.Fatalf("after the sweep: %d keys, a kept %t", size(), ok)
	}
}
