package adaptertest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// processLease is the lease size of the lease waves.
const processLease = 8

// leaseScenarios are the children's ways of deciding with leases, and the
// broken lease that proves the waves catch over-admission.
var leaseScenarios = []processScenario{
	limiterScenario("limiter-leases", false, ratelimit.WithLeases(processLease)),
	limiterScenario("crash-leases", false, ratelimit.WithLeases(processLease)),
	limiterScenario("storage-limiter-leases", true, ratelimit.WithLeases(processLease)),
	overAdmittingLease,
}

// overAdmittingLease is a deliberately broken lease: it claims a block of
// processLease whenever the window has a unit left (guard count ≤ max − 1,
// forgetting the block's size), then spends it in memory.
var overAdmittingLease = processScenario{name: "over-admitting-lease", decider: func(ctx context.Context, db *core.DB, _ driver.SecondaryStorage, key string) (childDecider, error) {
	var mu sync.Mutex
	var avail int64
	return childDecider{decide: func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if avail == 0 {
			_, ok, err := db.IncrementOne(ctx, core.IncrementRequest{Model: core.ModelRateLimit,
				Where:     []core.Where{core.Eq("key", key), core.Lte("count", processLimit-1)},
				Increment: map[string]int64{"count": processLease}})
			if err != nil || !ok {
				return false, err
			}
			avail = processLease
		}
		avail--
		return true, nil
	}}, nil
}}

// leaseCheck is the check of a lease wave: never above the limit, short
// of it by at most what the processes held.
func leaseCheck(admitted, leased int64) error {
	if admitted > processLimit || admitted < processLimit-leased {
		return fmt.Errorf("%d processes admitted %d of %d decisions holding %d in leases; want within [%d, %d]",
			processCount, admitted, processCount*childGoroutines*childTries, leased, processLimit-leased, processLimit)
	}
	return nil
}

// leaseWave races a lease scenario on a fresh key.
func leaseWave(sc string) func(testing.TB, *processRun) {
	return func(t testing.TB, p *processRun) {
		key := "processes-" + sc
		admitted, leased := p.leaseWave(t, sc, key, -1)
		if err := leaseCheck(admitted, leased); err != nil {
			t.Error(err)
		}
		t.Logf("admitted %d, %d held in leases at the end (the under-admission)", admitted, leased)
		if sc == "storage-limiter-leases" {
			v, _, err := p.storage.Get(t.Context(), ratelimit.SecondaryPrefix+key)
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := strconv.ParseInt(v, 10, 64)
			if _, tagged := p.storage.(driver.LeaseReturner); tagged {
				// Tagged counters take back what the processes' Close returned.
				if stored != admitted {
					t.Errorf("stored %d after the processes closed, want the %d admitted: their leases were not returned", stored, admitted)
				}
				return
			}
			// Another secondary storage's leases lapse with the window, unreturned.
			if stored > processLimit || stored < admitted {
				t.Errorf("stored %d, want at most %d and at least the %d admitted", stored, processLimit, admitted)
			}
			return
		}
		if stored := p.stored(t, key); stored != admitted {
			t.Errorf("stored %d after the processes closed, want the %d admitted: their leases were not returned", stored, admitted)
		}
	}
}

// leaseCrash kills one process as the wave starts; its lease is lost until
// the window ends, and nothing else.
func leaseCrash(t testing.TB, p *processRun) {
	key := "processes-crash-leases"
	survivors, _ := p.leaseWave(t, "crash-leases", key, 0)
	stored := p.stored(t, key)
	if most := survivors + childGoroutines*childTries + processLease; stored > processLimit || stored < survivors || stored > most {
		t.Fatalf("after a crash: stored %d, survivors admitted %d; want at most %d and %d, at least %d", stored, survivors, processLimit, most, survivors)
	}
	second, leased := p.leaseWave(t, "crash-leases", key, -1)
	if left := processLimit - stored; second > left || second < left-leased {
		t.Errorf("second wave admitted %d holding %d, want within [%d, %d]", second, leased, left-leased, left)
	}
	if got := p.stored(t, key); got != stored+second {
		t.Errorf("stored after the second wave %d, want %d", got, stored+second)
	}
}

// catchesBrokenLease is the proof that the lease waves can fail.
func catchesBrokenLease(t testing.TB, p *processRun) {
	key := "processes-broken-lease"
	if _, err := p.db.Create(t.Context(), core.ModelRateLimit, map[string]any{"key": key,
		"count": 0, "lastRequest": processNow.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	admitted, leased := p.leaseWave(t, "over-admitting-lease", key, -1)
	err := leaseCheck(admitted, leased)
	if err == nil {
		t.Fatalf("a lease that over-admits passed the check: admitted %d", admitted)
	}
	t.Logf("caught: %v", err)
}
