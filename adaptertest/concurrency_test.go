package adaptertest

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/concurrency"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// ccMemoryHarness serves core's in-memory adapter; its peers are further
// handles on the same store.
type ccMemoryHarness struct{ m *memory.Memory }

func newCCMemoryHarness(context.Context, *testing.T) (Harness, error) {
	return ccMemoryHarness{memory.New()}, nil
}
func (h ccMemoryHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.m, nil
}
func (h ccMemoryHarness) MakePeer(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.m, nil
}
func (h ccMemoryHarness) Capabilities() Capabilities { return Capabilities{SeveralPools: true} }
func (h ccMemoryHarness) Close()                     {}

// TestConcurrencyOnMemoryAdapter runs the concurrency cases on
// concurrency.Database over core's in-memory adapter.
func TestConcurrencyOnMemoryAdapter(t *testing.T) { RunConcurrency(t, newCCMemoryHarness) }

// TestConcurrencyOnMemoryStore runs them on concurrency.Memory, one store
// shared by every limiter as in one process.
func TestConcurrencyOnMemoryStore(t *testing.T) {
	RunConcurrencyStores(t, func(t *testing.T, count int) []concurrency.Store {
		s := concurrency.Memory()
		stores := make([]concurrency.Store, count)
		for i := range stores {
			stores[i] = s
		}
		return stores
	})
}

// TestConcurrencyCatchesNonAtomicAdapter proves that the burst on a freed
// key catches an adapter whose IncrementOne reads then writes: there every
// acquisition goes through IncrementOne (on a fresh key the unique key
// keeps even that adapter exact, as the fresh burst shows).
func TestConcurrencyCatchesNonAtomicAdapter(t *testing.T) {
	stores := DatabaseStores(newNonAtomicHarness)(t, racePools)
	for range 3 {
		err := ccBurst(t.Context(), stores, true)
		require.Error(t, err, "the non-atomic adapter passed the burst on a freed key")
		t.Logf("caught: %s", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	require.NoError(t, ccBurst(t.Context(), stores, false), "a fresh key is created under the unique key, exact even here")
}

// TestConcurrencyCatchesBrokenStore proves that every race case catches a
// store that reads a free slot and then writes it: three times, in at most
// ten runs. A run is one burst of goroutines, and under a loaded machine's
// scheduling one in many may not overlap two of them on one slot (CI saw
// Churn pass once in three).
func TestConcurrencyCatchesBrokenStore(t *testing.T) {
	for _, c := range concurrencyCases() {
		if c.needs&severalPools == 0 {
			continue // the script is sequential: the broken store keeps it
		}
		t.Run(c.name, func(t *testing.T) {
			caught := 0
			for run := 0; run < 10 && caught < 3; run++ {
				s := newBrokenSlots()
				if rec := record(t, c, &ccFixture{ctx: t.Context(), stores: []concurrency.Store{s, s, s, s}}); rec.Failed() {
					caught++
					t.Logf("caught: %s", rec.summary())
				}
			}
			require.Equal(t, 3, caught, "the read-then-write store passed %s too often", c.name)
		})
	}
	t.Run("LeaseLifeCycle", func(t *testing.T) {
		require.NoError(t, ccScript(t.Context(), &ccFixture{ctx: t.Context(), stores: []concurrency.Store{newBrokenSlots()}}),
			"called one at a time, the broken store keeps the contract: only concurrency exposes it")
	})
}

// brokenSlots is the deliberately broken store: it finds a free slot
// under its lock, lets go of it for the round trip, and then takes the
// slot without checking it is still free.
type brokenSlots struct {
	mu    sync.Mutex
	slots map[string][]brokenLease
	gen   int64
	reads atomic.Int64
}

type brokenLease struct{ expires, gen int64 }

func newBrokenSlots() *brokenSlots { return &brokenSlots{slots: map[string][]brokenLease{}} }

func (s *brokenSlots) AcquireSlot(_ context.Context, key string, n int, now, expires int64) (concurrency.Lease, bool, error) {
	s.mu.Lock()
	for len(s.slots[key]) < n {
		s.slots[key] = append(s.slots[key], brokenLease{})
	}
	free, earliest := -1, int64(-1)
	for i, l := range s.slots[key][:n] {
		if l.expires <= now {
			free = i
			break
		}
		if earliest < 0 || l.expires < earliest {
			earliest = l.expires
		}
	}
	s.mu.Unlock()
	if free < 0 {
		return concurrency.Lease{Expires: earliest}, false, nil
	}
	// The round trip, lasting until another caller has read too (or
	// nonAtomicLatency has passed), as nonAtomic's does.
	mine := s.reads.Add(1)
	for start := time.Now(); s.reads.Load() == mine && time.Since(start) < nonAtomicLatency; {
		runtime.Gosched()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.slots[key][free] = brokenLease{expires, s.gen}
	return concurrency.Lease{Slot: free, Generation: s.gen, Expires: expires}, true, nil
}

func (s *brokenSlots) ReleaseSlot(_ context.Context, key string, l concurrency.Lease, now int64) (bool, error) {
	return s.set(key, l, now, 0), nil
}

func (s *brokenSlots) RenewSlot(_ context.Context, key string, l concurrency.Lease, now, expires int64) (bool, error) {
	return s.set(key, l, now, expires), nil
}

func (s *brokenSlots) set(key string, l concurrency.Lease, now, expires int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[key]
	if l.Slot >= len(sl) || sl[l.Slot].gen != l.Generation || sl[l.Slot].expires <= now {
		return false
	}
	sl[l.Slot].expires = expires
	return true
}
