package adaptertest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// storeHarness serves one in-process storage; its peers are the same
// storage, as every client of one server reaches the same keys. clock is
// nil when the storage runs on real time.
type storeHarness struct {
	s     driver.SecondaryStorage
	clock *Clock
}

func (h *storeHarness) MakeStorage(context.Context) (driver.SecondaryStorage, error) { return h.s, nil }
func (h *storeHarness) MakePeer(context.Context) (driver.SecondaryStorage, error)    { return h.s, nil }
func (h *storeHarness) Advance(d time.Duration)                                      { h.clock.Advance(d) }
func (h *storeHarness) Close()                                                       {}

func (h *storeHarness) Capabilities() StorageCapabilities {
	return StorageCapabilities{ManualClock: h.clock != nil, SeveralClients: true}
}

// storeMaker makes a fresh harness on a manual clock around the storage
// that newStore builds on that clock.
func storeMaker[S driver.SecondaryStorage](newStore func(clock func() time.Time) S) StorageHarnessMaker {
	return func(context.Context, *testing.T) (StorageHarness, error) {
		c := NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		return &storeHarness{s: newStore(c.Now), clock: c}, nil
	}
}

// TestStorageMemory runs the storage suite on core/memory's Storage, atomic
// claims included (core cannot import adaptertest, which imports core, so
// its suite runs here).
func TestStorageMemory(t *testing.T) {
	RunStorage(t, storeMaker(func(clock func() time.Time) *memory.Storage {
		return memory.NewStorage(memory.WithClock(clock))
	}))
}

// TestStorageMemoryRealClock runs the suite on core/memory's Storage with
// its own clock, which takes the suite's real-time expiry path: the one a
// networked storage such as Redis takes.
func TestStorageMemoryRealClock(t *testing.T) {
	RunStorage(t, func(context.Context, *testing.T) (StorageHarness, error) {
		return &storeHarness{s: memory.NewStorage()}, nil
	})
}

// racyStorage is the deliberately non-atomic storage: every
// read-modify-write (Increment, IncrementBounded, Claim, Patch, Create) reads under
// the lock, lets go of it, and writes what it computed under the lock
// again, as a storage without server-side scripts or transactions would.
// The lock guards each single access only, so the race detector has
// nothing to say: the flaw is lost updates, which only the race cases can
// see. Everything else keeps the contract, which
// TestNonAtomicStoragePassesSequentialCases checks.
type racyStorage struct {
	// onlyPatch makes every claim atomic (a claim holds mu from its read to
	// its write), so that only Patch is left to race.
	onlyPatch bool
	mu        sync.Mutex
	now       func() time.Time
	values    map[string]racyValue
	reads     atomic.Int64 // read-modify-writes begun so far
}

type racyValue struct {
	v       string
	expires time.Time // zero: never
}

func newRacyStorage(now func() time.Time) *racyStorage {
	return &racyStorage{now: now, values: map[string]racyValue{}}
}

var (
	_ driver.SecondaryStorage   = (*racyStorage)(nil)
	_ driver.BoundedIncrementer = (*racyStorage)(nil)
	_ keystore.Rerollable       = (*racyStorage)(nil)
	_ keystore.OwnerSharing     = (*racyStorage)(nil)
	_ keystore.Creator          = (*racyStorage)(nil)
)

// Create reads, yields, and stores when it read nothing: two callers can
// both read nothing and both store.
func (s *racyStorage) Create(ctx context.Context, key, value string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if _, ok := s.readThenYield(key); ok {
		return false, nil
	}
	s.store(key, racyValue{v: value})
	return true, nil
}

func (s *racyStorage) load(key string) (racyValue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	if ok && !v.expires.IsZero() && !s.now().Before(v.expires) {
		delete(s.values, key)
		return racyValue{}, false
	}
	return v, ok
}

func (s *racyStorage) store(key string, v racyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = v
}

// readThenYield reads key, then waits as a round trip between a read and a
// write would: until another caller has read too, or nonAtomicLatency has
// passed when no one else is calling. Yielding, not sleeping, keeps the
// goroutine runnable, so concurrent callers overlap whatever the scheduler
// does and the flaw shows every time there is concurrency to show it.
func (s *racyStorage) readThenYield(key string) (racyValue, bool) {
	v, ok := s.load(key)
	mine := s.reads.Add(1)
	for start := time.Now(); s.reads.Load() == mine && time.Since(start) < nonAtomicLatency; {
		runtime.Gosched()
	}
	return v, ok
}

func (s *racyStorage) Get(ctx context.Context, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	v, ok := s.load(key)
	return v.v, ok, nil
}

func (s *racyStorage) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("%w: negative ttl %v", core.ErrInvalid, ttl)
	}
	v := racyValue{v: value}
	if ttl > 0 {
		v.expires = s.now().Add(ttl)
	}
	s.store(key, v)
	return nil
}

func (s *racyStorage) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.values, key)
	return nil
}

func (s *racyStorage) Increment(ctx context.Context, key string, by int64, ttl time.Duration) (driver.Counter, error) {
	c, _, err := s.increment(ctx, key, by, 0, false, ttl)
	return c, err
}

func (s *racyStorage) IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (driver.Counter, bool, error) {
	return s.increment(ctx, key, by, max, true, ttl)
}

func (s *racyStorage) increment(ctx context.Context, key string, by, max int64, bounded bool, ttl time.Duration) (driver.Counter, bool, error) {
	if err := ctx.Err(); err != nil {
		return driver.Counter{}, false, err
	}
	if ttl <= 0 {
		return driver.Counter{}, false, fmt.Errorf("%w: ttl %v must be positive", core.ErrInvalid, ttl)
	}
	v, ok := s.readThenYield(key)
	now := s.now()
	var n int64
	if ok {
		var err error
		if n, err = strconv.ParseInt(v.v, 10, 64); err != nil {
			return driver.Counter{}, false, fmt.Errorf("%q holds %q, not a counter", key, v.v)
		}
	} else {
		v.expires = now.Add(ttl)
	}
	left := v.expires.Sub(now)
	if !ok && bounded && by > max {
		return driver.Counter{}, false, nil
	}
	if bounded && (by >= 0 && n > max-by || by < 0 && n+by > max) { // exact: n + by may not fit an int64
		return driver.Counter{Value: n, TTL: left}, false, nil
	}
	v.v = strconv.FormatInt(n+by, 10)
	s.store(key, v)
	return driver.Counter{Value: n + by, TTL: left}, true, nil
}

func (s *racyStorage) Claim(ctx context.Context, key string, req keystore.Request) (keystore.Result, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Result{}, err
	}
	var v, ov racyValue
	var ok, found bool
	if s.onlyPatch {
		s.mu.Lock()
		defer s.mu.Unlock()
		v, ok = s.values[key] // the claim races use no expiry
		ov, found = s.values[req.Owner]
	} else {
		v, ok = s.readThenYield(key)
		ov, found = s.load(req.Owner)
	}
	if !ok {
		return keystore.Result{}, nil
	}
	var k keystore.Key
	if err := json.Unmarshal([]byte(v.v), &k); err != nil {
		return keystore.Result{}, err
	}
	var owner *keystore.Key
	if req.Owner != "" && found {
		owner = new(keystore.Key)
		if err := json.Unmarshal([]byte(ov.v), owner); err != nil {
			return keystore.Result{}, err
		}
	}
	res := keystore.Apply(&k, owner, req)
	if res.Code == "" && req.Cost > 0 {
		write := func(key string, rec *keystore.Key, v racyValue) error {
			b, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			v.v = string(b)
			if s.onlyPatch {
				s.values[key] = v // mu is held
			} else {
				s.store(key, v)
			}
			return nil
		}
		if err := write(key, &k, v); err != nil {
			return keystore.Result{}, err
		}
		if owner != nil {
			if err := write(req.Owner, owner, ov); err != nil {
				return keystore.Result{}, err
			}
		}
	}
	return res, nil
}

// ClaimChecksHash: Claim applies keystore.Apply, rule 0 included.
func (s *racyStorage) ClaimChecksHash() {}

// ClaimSharesOwnerLimits: Claim reads and writes req.Owner, though not
// atomically with the key.
func (s *racyStorage) ClaimSharesOwnerLimits() {}

func (s *racyStorage) Patch(ctx context.Context, key string, fields map[string]any) (keystore.Key, bool, error) {
	if err := ctx.Err(); err != nil {
		return keystore.Key{}, false, err
	}
	v, ok := s.readThenYield(key)
	if !ok {
		return keystore.Key{}, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.v), &obj); err != nil {
		return keystore.Key{}, false, err
	}
	for f, val := range fields {
		b, err := json.Marshal(val)
		if err != nil {
			return keystore.Key{}, false, err
		}
		obj[f] = b
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return keystore.Key{}, false, err
	}
	var after keystore.Key
	if err := json.Unmarshal(b, &after); err != nil {
		return keystore.Key{}, false, err
	}
	v.v = string(b)
	s.store(key, v)
	return after, true, nil
}

var racyMaker = storeMaker(newRacyStorage)

// runStorageRecorded runs one storage case on a fresh fixture with a
// recorder in place of the test, and returns the recorder. The fixture
// skips t when the storage lacks what the case needs.
func runStorageRecorded(t *testing.T, newHarness StorageHarnessMaker, c storageCase) *recorder {
	return record(t, c, newStorageFixture(t, newHarness, c.needs))
}

// TestStorageRacesCatchNonAtomicStorage is the proof that the storage
// races can fail: every race case, on one client and on several, must
// record a failure against the non-atomic storage, every time.
func TestStorageRacesCatchNonAtomicStorage(t *testing.T) {
	if testing.Short() {
		t.Skip("the proof needs every round of each race; -short runs one")
	}
	races := 0
	for _, c := range storageRaceCases() {
		races++
		t.Run(c.name, func(t *testing.T) {
			rec := runStorageRecorded(t, racyMaker, c)
			require.False(t, rec.Skipped(), "the case skipped: %v", rec.messages)
			require.True(t, rec.Failed(), "the non-atomic storage passed %s\ncontract: %s", c.name, c.contract)
			t.Logf("caught: %s", strings.SplitN(rec.summary(), "\n", 2)[0])
		})
	}
	// eleven races, each on one client and on several
	require.Equal(t, 22, races, "race cases")
}

// TestNonAtomicStoragePassesSequentialCases shows that what the races
// catch is the missing atomicity and nothing else: called one at a time,
// the non-atomic storage keeps every sequential case.
func TestNonAtomicStoragePassesSequentialCases(t *testing.T) {
	for _, c := range storageSequentialCases() {
		t.Run(c.name, func(t *testing.T) {
			rec := runStorageRecorded(t, racyMaker, c)
			require.False(t, rec.Failed(), "%v", rec.messages)
			require.False(t, rec.Skipped(), "%v", rec.messages)
		})
	}
}

// TestPatchRaceCatchesNonAtomicPatch: against a storage whose claims are
// atomic and whose Patch alone reads, yields and writes, the Patch race
// still fails, so it checks Patch and not only the claims around it.
func TestPatchRaceCatchesNonAtomicPatch(t *testing.T) {
	if testing.Short() {
		t.Skip("the proof needs every round of the race; -short runs one (3 misses in 20 runs)")
	}
	maker := storeMaker(func(clock func() time.Time) *racyStorage {
		s := newRacyStorage(clock)
		s.onlyPatch = true
		return s
	})
	tried := 0
	for _, c := range storageCases() {
		switch {
		case strings.HasPrefix(c.name, "PatchKeepsConcurrentClaims"):
			tried++
			rec := runStorageRecorded(t, maker, c)
			require.True(t, rec.Failed(), "a non-atomic Patch passed %s", c.name)
			t.Logf("%s caught: %s", c.name, rec.summary())
		case strings.HasPrefix(c.name, "ClaimOneWinnerPerKey"):
			// the claims themselves are atomic: their race passes
			rec := runStorageRecorded(t, maker, c)
			require.False(t, rec.Failed(), "%v", rec.messages)
		}
	}
	require.Equal(t, 2, tried)
}
