package apikey

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testrace"
	"github.com/sluice-go/sluice/core/memory"
)

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
	testrace.Release(n, func(int) {
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

// racingFirstOwners is core/memory's Storage with the owner's record held
// back so that two first SetOwnerLimits calls interleave as badly as they
// can: both patch and find no record before either makes one; the first
// then makes it, and the second makes its own only after a claim has
// spent from the first's (the test closes spent).
type racingFirstOwners struct {
	*memory.Storage
	owner         string
	patched       sync.WaitGroup // the first two patches of the owner's record
	made          chan struct{}  // closed once the first record is stored
	spent         chan struct{}  // closed by the test after a claim spent from it
	patches, sets atomic.Int32
}

func (s *racingFirstOwners) Patch(ctx context.Context, key string, f map[string]any) (keystore.Key, bool, error) {
	after, ok, err := s.Storage.Patch(ctx, key, f)
	if key == s.owner && s.patches.Add(1) <= 2 {
		// Neither returns until both have patched: both find no record.
		s.patched.Done()
		s.patched.Wait()
	}
	return after, ok, err
}

// hold lets the first maker of the owner's record through and holds the
// second until a claim has spent from the first's record.
func (s *racingFirstOwners) hold(key string) (done func()) {
	if key != s.owner {
		return func() {}
	}
	if s.sets.Add(1) == 1 {
		return func() { close(s.made) }
	}
	<-s.spent
	return func() {}
}

func (s *racingFirstOwners) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	defer s.hold(key)()
	return s.Storage.Set(ctx, key, value, ttl)
}

func (s *racingFirstOwners) Create(ctx context.Context, key, value string) (bool, error) {
	defer s.hold(key)()
	return s.Storage.Create(ctx, key, value)
}

// setOnly hides Create: the storage without keystore.Creator.
type setOnly struct{ *racingFirstOwners }

func (setOnly) Create() {}

// TestFirstOwnerLimitsRace: of two first SetOwnerLimits calls at once, the
// later patches the record the earlier made, so a claim's spend from it in
// between stays counted. Without keystore.Creator the later call replaces
// the record and the spend is lost, which the second subtest shows: the
// check can fail.
func TestFirstOwnerLimitsRace(t *testing.T) {
	for _, withCreator := range []bool{true, false} {
		t.Run(fmt.Sprintf("creator=%v", withCreator), func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			race := &racingFirstOwners{Storage: memory.NewStorage(memory.WithClock(c.Now)),
				made: make(chan struct{}), spent: make(chan struct{})}
			race.patched.Add(2)
			var store driver.SecondaryStorage = race
			if !withCreator {
				store = setOnly{race}
			}
			if _, ok := store.(keystore.Creator); ok != withCreator {
				t.Fatalf("store %T is a keystore.Creator: %v", store, ok)
			}
			m, err := NewStorageOnly(store, WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			plaintext, _, err := m.Create(ctx, CreateParams{ReferenceID: "team"})
			if err != nil {
				t.Fatal(err)
			}
			race.owner = m.store.(*storageStore).ownerKey(keystore.Hash("team"))
			limits := map[string]NamedLimit{"requests": {Max: 5, Window: time.Minute}}
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- m.SetOwnerLimits(ctx, "team", limits) }()
			}
			<-race.made
			res, err := m.Verify(ctx, plaintext, LimitCost("requests", 1))
			if err != nil || !res.Valid {
				t.Fatalf("Verify = %+v, %v", res, err)
			}
			close(race.spent)
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			usage, err := m.OwnerLimits(ctx, "team")
			if err != nil {
				t.Fatal(err)
			}
			got := usage["requests"].Count
			switch {
			case withCreator && got != 1:
				t.Fatalf("the owner's requests count %d after one claim; want 1: the later first call replaced the record", got)
			case !withCreator && got != 0:
				t.Fatalf("without keystore.Creator the count is %d; this interleaving was expected to lose the claim's spend (0), showing the check can fail", got)
			}
		})
	}
}
