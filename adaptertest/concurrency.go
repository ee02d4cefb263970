package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/concurrency"
)

// ConcurrencyStoresMaker makes the stores of one concurrency case: count
// stores on one fresh keyspace, each over a client or pool of its own when
// it can, as count application servers would have. Everything they hold
// is released when t ends.
type ConcurrencyStoresMaker func(t *testing.T, count int) []concurrency.Store

// RunConcurrency runs the concurrency-limit cases (core/concurrency) on
// concurrency.Database over the adapters newHarness makes: fresh tables
// per case, and one core.DB per pool when the harness declares
// SeveralPools. Run it from a test of your adapter's package:
//
//	func TestConcurrency(t *testing.T) { adaptertest.RunConcurrency(t, newHarness) }
func RunConcurrency(t *testing.T, newHarness HarnessMaker) {
	RunConcurrencyStores(t, DatabaseStores(newHarness))
}

// DatabaseStores makes concurrency.Database stores on a fresh fixture of
// newHarness for each case.
func DatabaseStores(newHarness HarnessMaker) ConcurrencyStoresMaker {
	return func(t *testing.T, count int) []concurrency.Store {
		f := newFixture(t, newHarness, 0)
		dbs, err := f.DBs(count)
		if err != nil {
			t.Fatal(err)
		}
		stores := make([]concurrency.Store, len(dbs))
		for i, db := range dbs {
			stores[i] = concurrency.Database(db)
		}
		return stores
	}
}

// RunConcurrencyStores runs the concurrency-limit cases on the stores
// newStores makes: the scripted lease life cycle on a manual clock, and
// the races (exactly n of many simultaneous acquirers, on a fresh key and
// on a key whose slots were all released, and never more than n holders
// while acquisitions and releases interleave), over several stores.
func RunConcurrencyStores(t *testing.T, newStores ConcurrencyStoresMaker) {
	runCases(t, concurrencyCases(), func(t *testing.T, needs need) *ccFixture {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		n := 1
		if needs&severalPools != 0 {
			n = racePools
		}
		return &ccFixture{ctx: ctx, stores: newStores(t, n)}
	})
}

// ccFixture is what a concurrency case runs on: one store, or racePools
// of them when it needs severalPools (which every maker gives, sharing one
// store or adapter when it has no independent ones).
type ccFixture struct {
	ctx    context.Context
	stores []concurrency.Store
}

func (f *ccFixture) context() context.Context { return f.ctx }

// concurrencyCase is a case of [RunConcurrencyStores].
type concurrencyCase = testCase[*ccFixture]

func concurrencyCases() []concurrencyCase {
	return []concurrencyCase{
		{"LeaseLifeCycle", ruleLeaseLifeCycle, 0, checked(ccScript)},
		{"Edges", ruleCCEdges, 0, checked(ccEdges)},
		{"BurstOnFreshKey", ruleBurstOnFreshKey, severalPools, checked(ccBurstOnFreshKey)},
		{"BurstOnFreedKey", ruleBurstOnFreedKey, severalPools, checked(ccBurstOnFreedKey)},
		{"Churn", ruleChurn, severalPools, checked(ccChurnCase)},
	}
}

// The sentences of the contract the concurrency cases check.
const (
	ruleLeaseLifeCycle  = "n acquisitions succeed and the next is denied until the earliest lease ends; a release frees its slot once; a lease that ended is taken by another, and its late release or renewal changes nothing; renewal extends a live lease"
	ruleBurstOnFreshKey = "many callers acquiring a fresh key at one instant, over several pools: exactly n succeed, each on its own slot, with no error"
	ruleBurstOnFreedKey = "many callers acquiring at one instant a key whose n slots were all released: exactly n succeed, each on its own slot, with no error"
	ruleChurn           = "acquisitions and releases interleaving on one key over several pools: never more than n holders, never two on one slot, every release of a live lease frees it"
)

// The load of the concurrency races.
const (
	ccSlots   = 5   // n
	ccCallers = 48  // goroutines released at once
	ccRounds  = 3   // fresh keys per burst case
	ccChurn   = 300 // acquisitions tried per churn case, over all goroutines
)

var ccSeq atomic.Int64

// ccKey returns a key no other case uses.
func ccKey(what string) string {
	return fmt.Sprintf("cc-%s-%d-%d", what, time.Now().UnixNano()%1e9, ccSeq.Add(1))
}

func ccBurstOnFreshKey(ctx context.Context, f *ccFixture) error { return ccBurst(ctx, f.stores, false) }
func ccBurstOnFreedKey(ctx context.Context, f *ccFixture) error { return ccBurst(ctx, f.stores, true) }

// ccScript runs the lease life cycle on a manual clock: n = 3, leases of
// 10 s.
func ccScript(ctx context.Context, f *ccFixture) error {
	clock := NewClock(time.Now().Truncate(time.Millisecond))
	l, err := concurrency.New(f.stores[0], concurrency.WithClock(clock.Now))
	if err != nil {
		return err
	}
	const n, lease = 3, 10 * time.Second
	key := ccKey("script")
	start := clock.Now()
	acquire := func(step string) (concurrency.Slot, error) {
		s, ok, err := l.Acquire(ctx, key, n, lease)
		switch {
		case err != nil:
			return s, fmt.Errorf("%s: Acquire: %w", step, err)
		case !ok:
			return s, fmt.Errorf("%s: Acquire denied (retry after %v), want a slot", step, s.RetryAfter)
		}
		return s, nil
	}
	denied := func(step string, retryAfter time.Duration) error {
		s, ok, err := l.Acquire(ctx, key, n, lease)
		switch {
		case err != nil:
			return fmt.Errorf("%s: Acquire: %w", step, err)
		case ok:
			return fmt.Errorf("%s: Acquire got slot %d, want a denial", step, s.Index)
		case s.RetryAfter != retryAfter:
			return fmt.Errorf("%s: RetryAfter %v, want %v", step, s.RetryAfter, retryAfter)
		}
		return nil
	}
	want := func(step string, got bool, err error, w bool) error {
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", step, err)
		case got != w:
			return fmt.Errorf("%s: %t, want %t", step, got, w)
		}
		return nil
	}

	var held [n]concurrency.Slot
	seen := map[int]bool{}
	for i := range held {
		if held[i], err = acquire(fmt.Sprintf("acquisition %d of %d", i+1, n)); err != nil {
			return err
		}
		if seen[held[i].Index] || held[i].Index < 0 || held[i].Index >= n {
			return fmt.Errorf("acquisition %d: slot %d, already taken or out of range", i+1, held[i].Index)
		}
		seen[held[i].Index] = true
		if !held[i].Expires.Equal(start.Add(lease)) {
			return fmt.Errorf("acquisition %d: expires %v, want %v", i+1, held[i].Expires, start.Add(lease))
		}
	}
	if err := denied("acquisition n+1", lease); err != nil {
		return err
	}
	clock.Advance(time.Second)
	if err := denied("acquisition n+1, 1 s later", lease-time.Second); err != nil {
		return err
	}
	a, b, c := &held[0], &held[1], &held[2]
	oldB := *b
	ok, err := b.Release(ctx)
	if err := want("release of a live lease", ok, err, true); err != nil {
		return err
	}
	d, err := acquire("acquisition after a release")
	if err != nil {
		return err
	}
	if d.Index != oldB.Index || d.Generation() == oldB.Generation() {
		return fmt.Errorf("acquisition after a release: slot %d generation %d, want slot %d with a generation other than %d", d.Index, d.Generation(), oldB.Index, oldB.Generation())
	}
	ok, err = oldB.Release(ctx) // a copy of the released slot, released again
	if err := want("second release of a released lease (its slot now held by another)", ok, err, false); err != nil {
		return err
	}
	ok, err = a.Renew(ctx)
	if err := want("renewal of a live lease", ok, err, true); err != nil {
		return err
	}
	if !a.Expires.Equal(start.Add(time.Second + lease)) {
		return fmt.Errorf("renewal: expires %v, want %v", a.Expires, start.Add(time.Second+lease))
	}
	clock.Advance(lease - time.Second) // c's lease ends now; a and d hold 1 s more
	e, err := acquire("acquisition when a lease has just ended")
	if err != nil {
		return err
	}
	if e.Index != c.Index {
		return fmt.Errorf("acquisition when a lease has just ended: slot %d, want %d (the lease that ended)", e.Index, c.Index)
	}
	lateC := *c
	ok, err = lateC.Renew(ctx)
	if err := want("renewal by the holder whose lease ended and was taken", ok, err, false); err != nil {
		return err
	}
	ok, err = c.Release(ctx)
	if err := want("late release by the holder whose lease ended and was taken", ok, err, false); err != nil {
		return err
	}
	if err := denied("acquisition with the late release done", time.Second); err != nil {
		return err
	}
	ok, err = e.Release(ctx)
	if err := want("release by the new holder", ok, err, true); err != nil {
		return err
	}
	clock.Advance(2 * time.Second) // a's and d's leases end, unreleased
	ok, err = a.Renew(ctx)
	if err := want("renewal of a lease that ended (slot not taken)", ok, err, false); err != nil {
		return err
	}
	for i := range n {
		if _, err := acquire(fmt.Sprintf("acquisition %d of %d after every lease ended", i+1, n)); err != nil {
			return err
		}
	}
	return denied("acquisition n+1 after every lease ended", lease)
}

// ccLimiters makes one limiter per store, on the real clock.
func ccLimiters(stores []concurrency.Store) ([]*concurrency.Limiter, error) {
	ls := make([]*concurrency.Limiter, len(stores))
	for i, s := range stores {
		var err error
		if ls[i], err = concurrency.New(s); err != nil {
			return nil, err
		}
	}
	return ls, nil
}

// ccBurst releases ccCallers acquirers at once on a key, fresh or whose n
// slots were all taken and released first, ccRounds times.
func ccBurst(ctx context.Context, stores []concurrency.Store, freed bool) error {
	ls, err := ccLimiters(stores)
	if err != nil {
		return err
	}
	for round := range ccRounds {
		key := ccKey("burst")
		if freed {
			var held []concurrency.Slot
			for range ccSlots {
				s, ok, err := ls[0].Acquire(ctx, key, ccSlots, time.Minute)
				if err != nil || !ok {
					return fmt.Errorf("round %d: taking the slots before releasing them: ok %t, %v", round, ok, err)
				}
				held = append(held, s)
			}
			for i := range held {
				if ok, err := held[i].Release(ctx); err != nil || !ok {
					return fmt.Errorf("round %d: releasing slot %d: ok %t, %v", round, held[i].Index, ok, err)
				}
			}
		}
		slots := make([]concurrency.Slot, ccCallers)
		oks := make([]bool, ccCallers)
		errs := make([]error, ccCallers)
		Release(ccCallers, func(i int) {
			slots[i], oks[i], errs[i] = ls[i%len(ls)].Acquire(ctx, key, ccSlots, time.Minute)
		})
		got, bySlot := 0, map[int]int{}
		for i := range ccCallers {
			if errs[i] != nil {
				return fmt.Errorf("round %d: caller %d: %w", round, i, errs[i])
			}
			if oks[i] {
				got++
				bySlot[slots[i].Index]++
			}
		}
		if got != ccSlots {
			return fmt.Errorf("round %d: %d of %d simultaneous callers acquired, want exactly %d (slots: %v)", round, got, ccCallers, ccSlots, bySlot)
		}
		for slot, k := range bySlot {
			if k != 1 || slot < 0 || slot >= ccSlots {
				return fmt.Errorf("round %d: slot %d acquired %d times, want once each of 0 to %d", round, slot, k, ccSlots-1)
			}
		}
	}
	return nil
}

// ccChurnCase runs ccCallers goroutines that acquire and release one key
// until ccChurn acquisitions have been tried, tracking the holders: the
// count of holders and the holder of each slot, taken after Acquire
// returns and given up before Release is called, so that any overlap the
// store allowed shows.
func ccChurnCase(ctx context.Context, f *ccFixture) error {
	stores := f.stores
	ls, err := ccLimiters(stores)
	if err != nil {
		return err
	}
	key := ccKey("churn")
	var (
		tries, holders, peak, acquired, contended atomic.Int64
		owner                                     [ccSlots]atomic.Int64
		mu                                        sync.Mutex
		firstErr                                  error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	Release(ccCallers, func(i int) {
		l := ls[i%len(ls)]
		for tries.Add(1) <= ccChurn {
			s, ok, err := l.Acquire(ctx, key, ccSlots, time.Minute)
			if errors.Is(err, core.ErrContention) {
				contended.Add(1)
				continue
			}
			if err != nil {
				fail(fmt.Errorf("caller %d: Acquire: %w", i, err))
				return
			}
			if !ok {
				continue
			}
			acquired.Add(1)
			h := holders.Add(1)
			for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
			}
			if s.Index < 0 || s.Index >= ccSlots {
				fail(fmt.Errorf("caller %d: slot %d out of range", i, s.Index))
				return
			}
			if !owner[s.Index].CompareAndSwap(0, int64(i+1)) {
				fail(fmt.Errorf("caller %d: slot %d acquired while caller %d holds it", i, s.Index, owner[s.Index].Load()-1))
				return
			}
			runtime.Gosched() // the holder's work: let others run meanwhile
			owner[s.Index].Store(0)
			holders.Add(-1)
			released, err := s.Release(ctx)
			if err != nil || !released {
				fail(fmt.Errorf("caller %d: Release of a live lease: released %t, %v", i, released, err))
				return
			}
		}
	})
	if firstErr != nil {
		return firstErr
	}
	if p := peak.Load(); p > ccSlots {
		return fmt.Errorf("%d holders at once, want at most %d", p, ccSlots)
	}
	if acquired.Load() < ccSlots {
		return fmt.Errorf("only %d of %d tries acquired", acquired.Load(), ccChurn)
	}
	if c := contended.Load(); c*100 > ccChurn {
		return fmt.Errorf("%d of %d acquisitions failed with contention, want at most 1%%", c, ccChurn)
	}
	return nil
}
