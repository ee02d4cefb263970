package adaptertest

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/memory"
)

// mapAdapter is an adapter on Go maps (core's in-memory one) that offers
// only the eight methods every adapter has; the types below add one
// optional interface each, so that the suite sees adapters that lack
// them.
type mapAdapter struct{ m driver.Adapter }

func (a mapAdapter) Create(ctx context.Context, t *driver.Table, v []driver.Assignment) (driver.Record, error) {
	return a.m.Create(ctx, t, v)
}
func (a mapAdapter) FindOne(ctx context.Context, t *driver.Table, w []driver.Where) (driver.Record, error) {
	return a.m.FindOne(ctx, t, w)
}
func (a mapAdapter) FindMany(ctx context.Context, t *driver.Table, w []driver.Where, o driver.FindOptions) ([]driver.Record, error) {
	return a.m.FindMany(ctx, t, w, o)
}
func (a mapAdapter) Update(ctx context.Context, t *driver.Table, w []driver.Where, s []driver.Assignment) (driver.Record, error) {
	return a.m.Update(ctx, t, w, s)
}
func (a mapAdapter) UpdateMany(ctx context.Context, t *driver.Table, w []driver.Where, s []driver.Assignment) (int64, error) {
	return a.m.UpdateMany(ctx, t, w, s)
}
func (a mapAdapter) Delete(ctx context.Context, t *driver.Table, w []driver.Where) (bool, error) {
	return a.m.Delete(ctx, t, w)
}
func (a mapAdapter) DeleteMany(ctx context.Context, t *driver.Table, w []driver.Where) (int64, error) {
	return a.m.DeleteMany(ctx, t, w)
}
func (a mapAdapter) Count(ctx context.Context, t *driver.Table, w []driver.Where) (int64, error) {
	return a.m.Count(ctx, t, w)
}

// incrementOnly has a native IncrementOne and no transactions: the
// adapter of issue 36, which once got eight failures instead of skips.
type incrementOnly struct{ mapAdapter }

func (a incrementOnly) IncrementOne(ctx context.Context, t *driver.Table, w []driver.Where, inc []driver.Delta, s []driver.Assignment) (driver.Record, error) {
	return a.m.(driver.Incrementer).IncrementOne(ctx, t, w, inc, s)
}

// transactionOnly has transactions and no IncrementOne: core's fallback
// makes every IncrementOne.
type transactionOnly struct{ mapAdapter }

func (a transactionOnly) Transaction(ctx context.Context, fn func(context.Context, driver.Adapter) error) error {
	return a.m.(driver.Transactor).Transaction(ctx, func(ctx context.Context, tx driver.Adapter) error {
		return fn(ctx, transactionOnly{mapAdapter{tx}})
	})
}

// capabilityHarness serves one of those adapters and records every
// subtest the suite makes a fixture for, to check afterwards which ran and
// which skipped.
type capabilityHarness struct {
	adapter driver.Adapter
	pools   bool
}

func (h capabilityHarness) MakeAdapter(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.adapter, nil
}
func (h capabilityHarness) MakePeer(context.Context, *core.Schema) (driver.Adapter, error) {
	return h.adapter, nil
}
func (h capabilityHarness) Capabilities() Capabilities { return Capabilities{SeveralPools: h.pools} }
func (h capabilityHarness) Close()                     {}

// subtests records the subtests an entry point ran, by name below the
// test that called it.
type subtests struct {
	mu  sync.Mutex
	all map[string]*testing.T
}

func (s *subtests) add(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.all == nil {
		s.all = map[string]*testing.T{}
	}
	s.all[t.Name()] = t
}

// checkSkips requires that each case of cases, run under prefix, skipped
// exactly when has lacks what it needs (or, under -short, a several-pool
// race), that none failed, and that wantSkipped of them lacked something.
func checkSkips[F any](t *testing.T, seen *subtests, prefix string, cases []testCase[F], has need, wantSkipped int) {
	t.Helper()
	lacked := 0
	for _, c := range cases {
		st := seen.all[prefix+c.name]
		if !assert.NotNil(t, st, "%s%s did not run", prefix, c.name) {
			continue
		}
		why := c.needs.lacking(has)
		if why != "" {
			lacked++
			assert.True(t, st.Skipped(), "%s ran on an adapter that lacks what it needs (%s)", c.name, why)
			t.Logf("%s skips: %s", c.name, why)
		} else if !testing.Short() {
			assert.False(t, st.Skipped(), "%s skipped on an adapter that has what it needs", c.name)
		}
		assert.False(t, st.Failed(), "%s failed", c.name)
	}
	assert.Equal(t, wantSkipped, lacked, "cases under %s that lack what they need", prefix)
}

// TestSkipsWhatTheAdapterLacks runs the suite on map-based adapters that
// lack one optional interface each, with and without independent pools:
// every case that needs what is missing skips with the reason, and every
// other case runs and passes.
func TestSkipsWhatTheAdapterLacks(t *testing.T) {
	for _, v := range []struct {
		name    string
		adapter func(*memory.Memory) driver.Adapter
		pools   bool
		// skipped: how many cases of Contract, Race, RateLimit and APIKey
		// lack what they need
		skipped [4]int
	}{
		// the 5 transaction cases and the 23 Fallback/ ones; the 8 races
		// and 8 key races on the fallback, the fallback burst, the 3
		// policy races and the policy edges, and the 8 key races that write in transactions (the anchored refills among them)
		{"IncrementOneNoTransactions", func(m *memory.Memory) driver.Adapter { return incrementOnly{mapAdapter{m}} }, true, [4]int{28, 9, 9, 20}},
		// the Fallback/ cases: the plain ones already run through it
		{"TransactionsNoIncrementOne", func(m *memory.Memory) driver.Adapter { return transactionOnly{mapAdapter{m}} }, true, [4]int{23, 9, 4, 12}},
		// the several-pool races: 8 on counters, the lease race, 12 on keys
		// (and everywhere the 4 + 4 transactional-charging cases: the
		// capability harness has no TxHandles)
		{"BothOnePool", func(m *memory.Memory) driver.Adapter { return m }, false, [4]int{0, 8, 5, 16}},
		{"BothSeveralPools", func(m *memory.Memory) driver.Adapter { return m }, true, [4]int{0, 0, 4, 4}},
	} {
		t.Run(v.name, func(t *testing.T) {
			var seen subtests
			maker := func(_ context.Context, t *testing.T) (Harness, error) {
				seen.add(t)
				return capabilityHarness{adapter: v.adapter(memory.New()), pools: v.pools}, nil
			}
			Run(t, maker)
			RunConcurrency(t, maker)
			h, _ := maker(t.Context(), t)
			a, _ := h.MakeAdapter(t.Context(), nil)
			has := hasOf(a, h.Capabilities())
			for i, group := range []struct {
				name  string
				cases []dbCase
			}{{"Contract", contractCases()}, {"Race", raceCases()}, {"RateLimit", rateLimitCases()}, {"APIKey", apiKeyCases()}} {
				checkSkips(t, &seen, t.Name()+"/"+group.name+"/", group.cases, has, v.skipped[i])
			}
			ccHas := severalPools // every maker gives several stores
			checkSkips(t, &seen, t.Name()+"/", concurrencyCases(), ccHas, 0)
		})
	}
}

// plainStorage offers only driver.SecondaryStorage's four methods.
type plainStorage struct{ s *memory.Storage }

func (p plainStorage) Get(ctx context.Context, key string) (string, bool, error) {
	return p.s.Get(ctx, key)
}
func (p plainStorage) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	return p.s.Set(ctx, key, value, ttl)
}
func (p plainStorage) Delete(ctx context.Context, key string) error { return p.s.Delete(ctx, key) }
func (p plainStorage) Increment(ctx context.Context, key string, by int64, ttl time.Duration) (driver.Counter, error) {
	return p.s.Increment(ctx, key, by, ttl)
}

// oneClientHarness is a storage harness that does not declare
// SeveralClients.
type oneClientHarness struct{ *storeHarness }

func (h oneClientHarness) Capabilities() StorageCapabilities {
	return StorageCapabilities{ManualClock: true}
}

// TestStorageSkipsWhatTheStorageLacks runs the storage suite on a storage
// with none of the optional interfaces, on one client: the 13 sequential
// cases and 19 races that need what it lacks skip, and the 9 others pass.
func TestStorageSkipsWhatTheStorageLacks(t *testing.T) {
	var seen subtests
	var has need
	RunStorage(t, func(_ context.Context, t *testing.T) (StorageHarness, error) {
		seen.add(t)
		c := NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		h := oneClientHarness{&storeHarness{s: plainStorage{memory.NewStorage(memory.WithClock(c.Now))}, clock: c}}
		has = storageHas(h.s, h.Capabilities())
		return h, nil
	})
	require.NotZero(t, len(seen.all))
	checkSkips(t, &seen, t.Name()+"/", storageSequentialCases(), has, 13)
	checkSkips(t, &seen, t.Name()+"/", storageRaceCases(), has, 21)
	for name, st := range seen.all {
		if st.Skipped() {
			require.False(t, strings.Contains(name, "IncrementExact") && !strings.HasSuffix(name, "SeveralClients"), "%s skipped", name)
		}
	}
}

// TestReadmeCaseCounts keeps the README's table of cases per entry point
// true as cases are added.
func TestReadmeCaseCounts(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(raw)
	count := func(pattern string) []int {
		m := regexp.MustCompile(pattern).FindStringSubmatch(readme)
		require.NotNil(t, m, "the README has no line matching %s", pattern)
		var out []int
		for _, s := range m[1:] {
			n, err := strconv.Atoi(s)
			require.NoError(t, err)
			out = append(out, n)
		}
		return out
	}
	run := count("\\| `Run` \\| (\\d+): Contract (\\d+) .*Race (\\d+), RateLimit (\\d+), APIKey (\\d+) \\|")
	groups := []int{len(contractCases()), len(raceCases()), len(rateLimitCases()), len(apiKeyCases())}
	assert.Equal(t, []int{groups[0] + groups[1] + groups[2] + groups[3], groups[0], groups[1], groups[2], groups[3]}, run, "Run")
	assert.Equal(t, []int{len(storageCases()), len(storageSequentialCases())}, count("\\| `RunStorage` \\| (\\d+): (\\d+) sequential"), "RunStorage")
	assert.Equal(t, []int{len(concurrencyCases())}, count("\\| `RunConcurrency`, `RunConcurrencyStores` \\| (\\d+) \\|"), "RunConcurrency")
	assert.Equal(t, []int{len(processCases())}, count("\\| `RunProcesses` \\| (\\d+) per target"), "RunProcesses")
	assert.Equal(t, []int{len(clusterSuite()), len(clusterSuite()) - len(clusterCases())}, count("\\| `RunCluster` \\| (\\d+): the (\\d+) of `Run`"), "RunCluster")
	assert.Equal(t, []int{len(serializableCases())}, count("\\| `RunSerializable` \\| (\\d+):"), "RunSerializable")
}
