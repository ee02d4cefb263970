package apikey

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// release starts n goroutines, lets them all reach a barrier, then frees
// them at once and waits.
func release(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			fn(i)
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
}

// concurrentEnvs are the configurations every race test runs on. The
// first three verify by reading the key and then writing, with reads held
// at a gate that verifyAll arms, so that every concurrent verification
// reads before any writes. The "remembered" ones skip the read, planning
// from the key as the manager last saw it, and hold their writes at the
// gate instead, so that every verification plans before any writes.
func concurrentEnvs(t *testing.T) map[string]func(opts ...Option) *env {
	gated := func(native, cache, remember bool, opts ...Option) *env {
		g := &gates{}
		mem := memory.New()
		var a driver.Adapter = gatedAdapter{mem.WithoutIncrementOne(), g, remember}
		if native {
			a = gatedIncrementer{gatedAdapter{mem, g, remember}}
		}
		if cache {
			opts = append([]Option{WithCache(gatedCache{memory.NewStorage(), g}, time.Hour)}, opts...)
		}
		if !remember {
			opts = append([]Option{WithKeyStateCache(0)}, opts...)
		}
		e := newEnvOn(t, mem, a, opts...)
		e.gates = g
		return e
	}
	return map[string]func(opts ...Option) *env{
		"native":              func(opts ...Option) *env { return gated(true, false, false, opts...) },
		"fallback":            func(opts ...Option) *env { return gated(false, false, false, opts...) },
		"cached":              func(opts ...Option) *env { return gated(true, true, false, opts...) },
		"remembered":          func(opts ...Option) *env { return gated(true, false, true, opts...) },
		"remembered-fallback": func(opts ...Option) *env { return gated(false, false, true, opts...) },
	}
}

// verifyAll runs n concurrent verifications and counts the outcomes.
func verifyAll(t *testing.T, e *env, key string, n int) map[Code]int {
	t.Helper()
	if e.gates != nil {
		e.gates.p.Store(newReadGate(n))
		defer e.gates.p.Store(nil)
	}
	m := e.m
	var mu sync.Mutex
	counts := map[Code]int{}
	var failures atomic.Int64
	release(n, func(int) {
		r, err := m.Verify(context.Background(), key)
		if err != nil {
			failures.Add(1)
			t.Errorf("Verify: %v", err)
			return
		}
		mu.Lock()
		counts[r.Code]++
		mu.Unlock()
	})
	return counts
}

func TestConcurrentLastUnit(t *testing.T) {
	for name, mk := range concurrentEnvs(t) {
		t.Run(name, func(t *testing.T) {
			e := mk()
			key, k := e.create(t, CreateParams{Remaining: quota(1), RateLimit: noRateLimit()})
			got := verifyAll(t, e, key, 50)
			if got[""] != 1 || got[CodeUsageExceeded] != 49 {
				t.Fatalf("outcomes %v, want 1 success and 49 usage exceeded", got)
			}
			if r := remaining(t, e.get(t, k.ID)); r != 0 {
				t.Fatalf("remaining %d, want 0", r)
			}
		})
	}
}

func TestConcurrentRefill(t *testing.T) {
	for name, mk := range concurrentEnvs(t) {
		t.Run(name, func(t *testing.T) {
			e := mk()
			key, k := e.create(t, CreateParams{Remaining: quota(0), Refill: Refill{Interval: time.Hour, Amount: 5}, RateLimit: noRateLimit()})
			e.clock.Advance(2 * time.Hour)
			got := verifyAll(t, e, key, 20)
			if got[""] != 5 || got[CodeUsageExceeded] != 15 {
				t.Fatalf("outcomes %v, want 5 successes and 15 usage exceeded", got)
			}
			after := e.get(t, k.ID)
			if remaining(t, after) != 0 || !after.LastRefillAt.Equal(e.clock.Now()) {
				t.Fatalf("after: remaining %d lastRefillAt %v", remaining(t, after), after.LastRefillAt)
			}
		})
	}
}

func TestConcurrentRateLimitLastSlot(t *testing.T) {
	for name, mk := range concurrentEnvs(t) {
		t.Run(name, func(t *testing.T) {
			e := mk()
			key, k := e.create(t, CreateParams{Remaining: quota(100), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 5}})
			for range 4 {
				wantCode(t, e.verify(t, key), "")
			}
			got := verifyAll(t, e, key, 20)
			if got[""] != 1 || got[CodeRateLimited] != 19 {
				t.Fatalf("outcomes %v, want 1 success and 19 rate limited", got)
			}
			after := e.get(t, k.ID)
			if remaining(t, after) != 95 || after.RequestCount != 5 {
				t.Fatalf("after: remaining %d requestCount %d, want 95 and 5", remaining(t, after), after.RequestCount)
			}
		})
	}
}
