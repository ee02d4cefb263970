package concurrency_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/concurrency"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
)

// stores returns a fresh store of each kind: in memory, and on the
// database through core's in-memory adapter.
func stores(t *testing.T) map[string]concurrency.Store {
	t.Helper()
	db, err := core.New(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]concurrency.Store{"memory": concurrency.Memory(), "database": concurrency.Database(db)}
}

func TestLeaseLifeCycle(t *testing.T) {
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := testclock.New(time.UnixMilli(1_700_000_000_000))
			l, err := concurrency.New(store, concurrency.WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			acquire := func() (concurrency.Slot, bool) {
				t.Helper()
				s, ok, err := l.Acquire(ctx, "job", 2, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				return s, ok
			}
			a, ok1 := acquire()
			b, ok2 := acquire()
			if !ok1 || !ok2 || a.Index == b.Index {
				t.Fatalf("two acquisitions of 2 slots: %t %t, slots %d %d", ok1, ok2, a.Index, b.Index)
			}
			c.Advance(4 * time.Second)
			if s, ok := acquire(); ok || s.RetryAfter != 6*time.Second {
				t.Fatalf("third: ok %t, retry after %v; want a denial, 6s", ok, s.RetryAfter)
			}
			if ok, err := a.Renew(ctx); !ok || err != nil || !a.Expires.Equal(c.Now().Add(10*time.Second)) {
				t.Fatalf("renew: %t %v, expires %v", ok, err, a.Expires)
			}
			c.Advance(6 * time.Second) // b's lease ends; a's runs 4 s more
			late := b
			d, ok := acquire()
			if !ok || d.Index != b.Index || d.Generation() == b.Generation() {
				t.Fatalf("after b's lease: ok %t slot %d gen %d; want b's slot %d with a new generation (not %d)", ok, d.Index, d.Generation(), b.Index, b.Generation())
			}
			if ok, err := late.Release(ctx); ok || err != nil {
				t.Fatalf("late release by b: %t %v, want false", ok, err)
			}
			if s, ok := acquire(); ok || s.RetryAfter != 4*time.Second {
				t.Fatalf("after the late release: ok %t, retry after %v; want a denial, 4s (the late release freed nothing)", ok, s.RetryAfter)
			}
			if ok, err := d.Release(ctx); !ok || err != nil {
				t.Fatalf("release: %t %v", ok, err)
			}
			if ok, err := d.Release(ctx); ok || err != nil || d.Held() {
				t.Fatalf("second release: %t %v, held %t", ok, err, d.Held())
			}
			if _, ok := acquire(); !ok {
				t.Fatal("acquire after a release was denied")
			}
		})
	}
}

// TestBurst releases 64 acquirers at once on a fresh key, and again on the
// key once its slots are released: exactly n acquire, each its own slot.
// adaptertest proves this race catches a store that reads then writes.
func TestBurst(t *testing.T) {
	const n, callers = 5, 64
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			l, err := concurrency.New(store)
			if err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				slots := make([]concurrency.Slot, callers)
				oks := make([]bool, callers)
				errs := make([]error, callers)
				var ready, done sync.WaitGroup
				gate := make(chan struct{})
				ready.Add(callers)
				done.Add(callers)
				for i := range callers {
					go func() {
						defer done.Done()
						ready.Done()
						<-gate
						slots[i], oks[i], errs[i] = l.Acquire(t.Context(), "burst", n, time.Minute)
					}()
				}
				ready.Wait()
				close(gate)
				done.Wait()
				seen := map[int]bool{}
				for i := range callers {
					if errs[i] != nil {
						t.Fatalf("round %d: %v", round, errs[i])
					}
					if oks[i] {
						if seen[slots[i].Index] {
							t.Fatalf("round %d: slot %d acquired twice", round, slots[i].Index)
						}
						seen[slots[i].Index] = true
					}
				}
				if len(seen) != n {
					t.Fatalf("round %d: %d acquired, want %d", round, len(seen), n)
				}
				for i := range callers {
					if oks[i] {
						if ok, err := slots[i].Release(t.Context()); !ok || err != nil {
							t.Fatalf("release: %t %v", ok, err)
						}
					}
				}
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	if _, err := concurrency.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("New(nil): %v", err)
	}
	if _, err := concurrency.New(concurrency.Memory(), concurrency.WithClock(nil)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("WithClock(nil): %v", err)
	}
	for name, store := range stores(t) {
		l, err := concurrency.New(store)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			key   string
			n     int
			lease time.Duration
		}{{"", 1, time.Second}, {"k", 0, time.Second}, {"k", concurrency.MaxSlots + 1, time.Second}, {"k", 1, 0}} {
			if _, ok, err := l.Acquire(t.Context(), c.key, c.n, c.lease); ok || !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s: Acquire(%q, %d, %v): %t %v, want ErrInvalid", name, c.key, c.n, c.lease, ok, err)
			}
		}
		var zero concurrency.Slot
		if ok, err := zero.Release(t.Context()); ok || err != nil {
			t.Errorf("%s: release of a slot never acquired: %t %v", name, ok, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, _, err := l.Acquire(ctx, "k", 1, time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled: %v", name, err)
		}
	}
}

// TestDatabaseKeyLength: a key whose slot rows the key column (255
// characters) cannot hold is refused before any write; one that fits with
// its longest slot suffix is accepted.
func TestDatabaseKeyLength(t *testing.T) {
	l, err := concurrency.New(stores(t)["database"])
	if err != nil {
		t.Fatal(err)
	}
	fits := strings.Repeat("é", 255-len("#99"))
	if _, ok, err := l.Acquire(t.Context(), fits, 100, time.Second); !ok || err != nil {
		t.Fatalf("a key of 252 characters, slots up to #99: %t %v", ok, err)
	}
	if _, ok, err := l.Acquire(t.Context(), fits+"x", 100, time.Second); ok || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a key of 253 characters, slots up to #99: %t %v, want ErrInvalid", ok, err)
	}
}
