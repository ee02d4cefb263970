package apikey

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/core/internal/testclock"
	"github.com/sluice-go/sluice/core/memory"
)

// plainStorage is a SecondaryStorage without the claim capability.
type plainStorage struct{ driver.SecondaryStorage }

// claimOnly has the claim but no sets.
type claimOnly struct {
	driver.SecondaryStorage
	keystore.Claimer
}

func newStoreEnv(t testing.TB) (*Manager, *memory.Storage, *testclock.Clock) {
	t.Helper()
	c := newClock()
	s := memory.NewStorage(memory.WithClock(c.Now))
	m, err := NewStorageOnly(s, WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return m, s, c
}

func TestStorageOnlyRefusesNonAtomicStorage(t *testing.T) {
	_, err := NewStorageOnly(plainStorage{memory.NewStorage()})
	if !errors.Is(err, core.ErrUnsupported) || !strings.Contains(err.Error(), "keystore.Claimer") {
		t.Fatalf("err = %v, want core.ErrUnsupported naming keystore.Claimer", err)
	}
	if _, err := NewStorageOnly(memory.NewStorage(), WithCache(memory.NewStorage(), time.Hour)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("WithCache in storage-only mode: err = %v, want ErrInvalid", err)
	}
}

func TestStorageOnlyLifecycle(t *testing.T) {
	ctx := context.Background()
	m, _, clock := newStoreEnv(t)
	key, k, err := m.Create(ctx, CreateParams{ReferenceID: "alice", Remaining: quota(2), ExpiresIn: time.Hour, Metadata: map[string]any{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	_, k2, err := m.Create(ctx, CreateParams{ReferenceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Verify(ctx, key)
	if err != nil || !r.Valid || remaining(t, r.Key) != 1 || r.Key.RequestCount != 1 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	if r, _ = m.Verify(ctx, "unknown"); r.Code != CodeInvalid {
		t.Fatalf("unknown key: %+v", r)
	}
	got, err := m.Get(ctx, k.ID)
	if err != nil || remaining(t, got) != 1 || got.Metadata["a"] != "b" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	list, err := m.List(ctx, "alice")
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	// Update patches fields and leaves the counters alone.
	off := false
	u, err := m.Update(ctx, k.ID, UpdateParams{Enabled: &off})
	if err != nil || u.Enabled || remaining(t, u) != 1 || u.RequestCount != 1 {
		t.Fatalf("Update = %+v, %v", u, err)
	}
	if r, _ = m.Verify(ctx, key); r.Code != CodeDisabled {
		t.Fatalf("disabled key: %+v", r)
	}
	clock.Advance(time.Hour)
	if n, err := m.DeleteExpired(ctx); err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v", n, err)
	}
	if r, _ = m.Verify(ctx, key); r.Code != CodeInvalid {
		t.Fatalf("deleted key: %+v", r)
	}
	if ok, err := m.Delete(ctx, k2.ID); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if list, err = m.List(ctx, "alice"); err != nil || len(list) != 0 {
		t.Fatalf("List after deletes = %v, %v", list, err)
	}
	if _, err := m.Get(ctx, k2.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Get(deleted) err = %v", err)
	}
}

func TestStorageOnlyWithoutIndexer(t *testing.T) {
	s := memory.NewStorage()
	m, err := NewStorageOnly(claimOnly{s, s})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.List(context.Background(), "x"); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("List err = %v, want ErrUnsupported", err)
	}
	if _, err := m.DeleteExpired(context.Background()); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("DeleteExpired err = %v, want ErrUnsupported", err)
	}
}

func TestStorageOnlyConcurrentClaims(t *testing.T) {
	m, _, clock := newStoreEnv(t)
	ctx := context.Background()
	last, _, _ := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(1), RateLimit: noRateLimit()})
	if got := verifyAll(t, &env{m: m}, last, 50); got[""] != 1 || got[CodeUsageExceeded] != 49 {
		t.Fatalf("last unit: %v", got)
	}
	refill, _, _ := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(0), Refill: Refill{Interval: time.Hour, Amount: 5}, RateLimit: noRateLimit()})
	clock.Advance(time.Hour)
	if got := verifyAll(t, &env{m: m}, refill, 20); got[""] != 5 || got[CodeUsageExceeded] != 15 {
		t.Fatalf("refill: %v", got)
	}
	rl, k, _ := m.Create(ctx, CreateParams{ReferenceID: "u", Remaining: quota(10), RateLimit: &RateLimit{Enabled: true, Window: time.Hour, Max: 3}})
	for range 2 {
		if r, _ := m.Verify(ctx, rl); !r.Valid {
			t.Fatal(r)
		}
	}
	if got := verifyAll(t, &env{m: m}, rl, 20); got[""] != 1 || got[CodeRateLimited] != 19 {
		t.Fatalf("rate limit: %v", got)
	}
	if after, _ := m.Get(ctx, k.ID); remaining(t, after) != 7 {
		t.Fatalf("remaining %d, want 7", remaining(t, after))
	}
}

// TestModesAgree drives the same random sequence of verifications, costs
// and clock moves through the database mode (native and fallback), the
// cached mode and the storage-only mode, and requires identical answers and
// identical keys: the guarded write and keystore.Apply implement one semantics.
func TestModesAgree(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := CreateParams{ReferenceID: "u"}
		if rng.IntN(4) > 0 {
			p.Remaining = quota(rng.Int64N(4))
			if rng.IntN(2) == 0 {
				p.Refill = Refill{Interval: time.Duration(1+rng.IntN(5)) * time.Second, Amount: 1 + rng.Int64N(4)}
			}
		}
		if rng.IntN(4) > 0 {
			p.RateLimit = &RateLimit{Enabled: true, Window: time.Duration(1+rng.IntN(5)) * time.Second, Max: rng.Int64N(4)}
		} else {
			p.RateLimit = noRateLimit()
		}
		if rng.IntN(3) == 0 {
			p.ExpiresIn = time.Duration(5+rng.IntN(20)) * time.Second
		}
		// Named limits, the key's and its owner's, on half the seeds.
		var ownerLimits map[string]NamedLimit
		if seed%2 == 1 {
			p.Limits = map[string]NamedLimit{"tokens": {Max: rng.Int64N(6), Window: time.Duration(1+rng.IntN(4)) * time.Second}}
			ownerLimits = map[string]NamedLimit{"tokens": {Max: rng.Int64N(9), Window: time.Duration(1+rng.IntN(4)) * time.Second},
				"images": {Max: rng.Int64N(3), Window: time.Second}}
		}

		type mode struct {
			name  string
			m     *Manager
			clock *testclock.Clock
			key   string
		}
		var modes []*mode
		envs := concurrentEnvs(t)
		for _, name := range slices.Sorted(maps.Keys(envs)) {
			e := envs[name]()
			modes = append(modes, &mode{name: name, m: e.m, clock: e.clock})
		}
		sm, _, sc := newStoreEnv(t)
		modes = append(modes, &mode{name: "storage-only", m: sm, clock: sc})
		for _, md := range modes {
			key, _, err := md.m.Create(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := md.m.SetOwnerLimits(ctx, "u", ownerLimits); err != nil {
				t.Fatal(err)
			}
			md.key = key
		}
		for step := range 60 {
			advance := time.Duration(rng.IntN(1500)) * time.Millisecond
			cost := rng.Int64N(3)
			opts := []VerifyOption{Cost(cost)}
			if ownerLimits != nil && rng.IntN(3) > 0 {
				opts = append(opts, LimitCost("tokens", rng.Int64N(3)))
				if rng.IntN(2) == 0 {
					opts = append(opts, LimitCost("images", rng.Int64N(2)))
				}
			}
			var first Result
			for i, md := range modes {
				md.clock.Advance(advance)
				r, err := md.m.Verify(ctx, md.key, opts...)
				if err != nil {
					t.Fatalf("seed %d step %d mode %d: %v", seed, step, i, err)
				}
				if i == 0 {
					first = r
					continue
				}
				if r.Code != first.Code || r.TryAgainIn != first.TryAgainIn || r.DeniedBy != first.DeniedBy || !sameState(r.Key, first.Key) {
					t.Fatalf("seed %d step %d (cost %d): %s answered %q %v %q %+v, %s answered %q %v %q %+v",
						seed, step, cost, md.name, r.Code, r.TryAgainIn, r.DeniedBy, r.Key, modes[0].name, first.Code, first.TryAgainIn, first.DeniedBy, first.Key)
				}
			}
		}
	}
}

// sameState compares the fields a verification reads or writes.
func sameState(a, b *Key) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(a.Remaining, b.Remaining) && a.RequestCount == b.RequestCount && reflect.DeepEqual(a.Limits, b.Limits) &&
		a.LastRequest.Equal(b.LastRequest) && a.LastRefillAt.Equal(b.LastRefillAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func TestCachedModeServesReadsFromCache(t *testing.T) {
	ctx := context.Background()
	cache := memory.NewStorage()
	e := newEnv(t, WithCache(cache, time.Hour))
	key, k := e.create(t, CreateParams{Remaining: quota(10), RateLimit: noRateLimit()})
	wantCode(t, e.verify(t, key), "") // fills the cache
	before := e.mem.Calls()
	r := e.verify(t, key)
	if calls := e.mem.Calls() - before; !r.Valid || calls != 1 {
		t.Fatalf("cached verification: valid %v, %d database calls, want 1 (the guarded write)", r.Valid, calls)
	}
	if remaining(t, r.Key) != 8 {
		t.Fatalf("remaining %d, want 8", remaining(t, r.Key))
	}

	// Another server spends quota behind this cache's back: the stale entry
	// makes the guarded write miss, never over-admit.
	if _, _, err := e.db.IncrementOne(ctx, core.IncrementRequest{Model: "apikey", Where: []core.Where{core.Eq("id", k.ID)}, Increment: map[string]int64{"remaining": -7}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.verify(t, key), "")
	wantCode(t, e.verify(t, key), CodeUsageExceeded)
	if got := remaining(t, e.get(t, k.ID)); got != 0 {
		t.Fatalf("remaining %d, want 0", got)
	}

	// A denial read from a stale cache is confirmed by the database.
	if _, err := e.m.Update(ctx, k.ID, UpdateParams{Remaining: quota(3)}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.verify(t, key), "")
	// The entry is tagged with the key's current generation, as if another
	// server had cached it, so that it is used.
	gen, _, err := cache.Get(ctx, e.m.store.(*dbStore).cache.genKey(k.Hash))
	if err != nil {
		t.Fatal(err)
	}
	stale := `{"gen":"` + gen + `","key":{"id":` + strconv.FormatInt(k.ID, 10) + `,"key":"` + k.Hash + `","enabled":false,"createdAt":0,"updatedAt":0}}`
	if err := cache.Set(ctx, e.m.store.(*dbStore).cache.entryKey(k.Hash), stale, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := e.verify(t, key); !r.Valid || remaining(t, r.Key) != 1 {
		t.Fatalf("stale disabled entry: %+v", r)
	}

	// Deleting through the manager drops the entry.
	if ok, err := e.m.Delete(ctx, k.ID); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, _ := cache.Get(ctx, e.m.store.(*dbStore).cache.entryKey(k.Hash)); ok {
		t.Fatal("the cache still holds a deleted key")
	}
	wantCode(t, e.verify(t, key), CodeInvalid)
}
