package sluiceredis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// servers returns n storages on separate clients (connection pools) that
// share one key prefix, as n application servers share one Redis. Each
// pool is filled first, so that in a race every caller has a connection
// ready and no dial staggers them.
func servers(t *testing.T, n int) []*sluiceredis.Storage {
	t.Helper()
	s, client, prefix := newStorage(t)
	out := []*sluiceredis.Storage{s}
	clients := []*redis.Client{client}
	for len(out) < n {
		c := redis.NewClient(&redis.Options{Addr: client.Options().Addr})
		t.Cleanup(func() { c.Close() })
		other, err := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, other)
		clients = append(clients, c)
	}
	for _, c := range clients {
		adaptertest.Release(c.Options().PoolSize, func(int) {
			if err := c.Ping(context.Background()).Err(); err != nil {
				t.Error(err)
			}
		})
	}
	return out
}

// barrier holds every caller of a non-atomic variant between its read and
// its write until all n callers have read. Left to the scheduler, a
// goroutine often reads and writes before the next one's read reaches
// Redis (with -race on two CPUs, most runs), and the proof that the race
// tests catch non-atomic code would be flaky; the barrier forces the
// interleaving that several servers under load produce, every time.
type barrier struct {
	left atomic.Int64
	all  chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{all: make(chan struct{})}
	b.left.Store(int64(n))
	return b
}

func (b *barrier) wait() {
	if b.left.Add(-1) == 0 {
		close(b.all)
	}
	<-b.all
}

// readThenWriteCounter is the deliberately non-atomic counter that the race
// tests must catch: GET, compare, SET.
type readThenWriteCounter struct {
	*sluiceredis.Storage
	b *barrier
}

func (c readThenWriteCounter) IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (core.Counter, bool, error) {
	v, _, err := c.Get(ctx, key)
	c.b.wait()
	if err != nil {
		return core.Counter{}, false, err
	}
	var n int64
	fmt.Sscan(v, &n)
	if n+by > max {
		return core.Counter{Value: n, TTL: ttl}, false, nil
	}
	return core.Counter{Value: n + by, TTL: ttl}, true, c.Set(ctx, key, fmt.Sprint(n+by), ttl)
}

// limiterRace releases 64 goroutines over 4 servers, each with its own
// limiter, on one fresh key with max 10, and returns how many were admitted.
func limiterRace(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) core.SecondaryStorage) int64 {
	t.Helper()
	var limiters []*ratelimit.Limiter
	for _, s := range stores {
		l, err := ratelimit.New(ratelimit.Secondary(wrap(s)))
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: 10}
	var admitted atomic.Int64
	adaptertest.Release(64, func(i int) {
		d, err := limiters[i%len(limiters)].Consume(context.Background(), "fresh", rule)
		if err != nil {
			t.Error(err)
		}
		if d.Allowed {
			admitted.Add(1)
		}
	})
	return admitted.Load()
}

// TestLimiterRace: the rate limiter on this storage admits exactly 10 of
// 64 concurrent requests from 4 servers with max 10, and counts 10.
func TestLimiterRace(t *testing.T) {
	stores := servers(t, 4)
	store := stores[0]
	got := limiterRace(t, stores, same)
	if got != 10 {
		t.Fatalf("admitted %d of 64 with max 10; want exactly 10", got)
	}
	if v, _, err := store.Get(context.Background(), ratelimit.SecondaryPrefix+"fresh"); v != "10" || err != nil {
		t.Fatalf("stored count = %q, %v; want 10", v, err)
	}
}

// TestLimiterRaceCatchesNonAtomic proves TestLimiterRace can fail: the
// same race on a read-then-write counter admits more than 10.
func TestLimiterRaceCatchesNonAtomic(t *testing.T) {
	b := newBarrier(64)
	got := limiterRace(t, servers(t, 4), func(s *sluiceredis.Storage) core.SecondaryStorage { return readThenWriteCounter{s, b} })
	t.Logf("the read-then-write counter admitted %d of 64 with max 10", got)
	if got <= 10 {
		t.Fatalf("the read-then-write counter admitted %d of 64 with max 10; the race should have let more through", got)
	}
}

// readThenWriteClaimer is the deliberately non-atomic API-key store the race
// tests must catch: GET the record, apikey.ApplyClaim in Go, SET it back,
// as a storage without server-side scripts would.
type readThenWriteClaimer struct {
	*sluiceredis.Storage
	b *barrier
}

func (c readThenWriteClaimer) Claim(ctx context.Context, key string, req apikey.ClaimRequest) (apikey.ClaimResult, error) {
	v, ok, err := c.Get(ctx, key)
	c.b.wait()
	if err != nil || !ok {
		return apikey.ClaimResult{}, err
	}
	var k apikey.StoredKey
	if err := json.Unmarshal([]byte(v), &k); err != nil {
		return apikey.ClaimResult{}, err
	}
	res := apikey.ApplyClaim(&k, req)
	if res.Code == "" && req.Cost > 0 {
		b, _ := json.Marshal(&k)
		err = c.Set(ctx, key, string(b), 0)
	}
	return res, err
}

// verifyRace creates a key with p at created, then releases n concurrent
// verifications at now over 4 servers in storage-only mode. It returns how
// many were valid and the key as stored afterwards.
func verifyRace(t *testing.T, stores []*sluiceredis.Storage, n int, p apikey.CreateParams, created, now time.Time, wrap func(*sluiceredis.Storage) core.SecondaryStorage) (int64, *apikey.Key) {
	t.Helper()
	ctx := context.Background()
	var clock atomic.Value
	clock.Store(created)
	at := func() time.Time { return clock.Load().(time.Time) }
	var managers []*apikey.Manager
	for _, s := range stores {
		m, err := apikey.NewStorageOnly(wrap(s), apikey.WithClock(at))
		if err != nil {
			t.Fatal(err)
		}
		managers = append(managers, m)
	}
	plaintext, key, err := managers[0].Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	clock.Store(now)
	var valid atomic.Int64
	adaptertest.Release(n, func(i int) {
		res, err := managers[i%len(managers)].Verify(ctx, plaintext)
		if err != nil {
			t.Error(err)
			return
		}
		if res.Valid {
			valid.Add(1)
		} else if res.Code != apikey.CodeUsageExceeded {
			t.Errorf("verification denied with %s; want only %s", res.Code, apikey.CodeUsageExceeded)
		}
	})
	after, err := managers[0].Get(ctx, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	return valid.Load(), after
}

// same runs a race on the storage itself.
func same(s *sluiceredis.Storage) core.SecondaryStorage { return s }

var noRateLimit = &apikey.RateLimit{Enabled: false}

func lastUnitRace(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) core.SecondaryStorage) (int64, *apikey.Key) {
	one := int64(1)
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	return verifyRace(t, stores, 50, apikey.CreateParams{ReferenceID: "u", Remaining: &one, RateLimit: noRateLimit}, at, at, wrap)
}

// TestLastUnitRace: a key with 1 use left and 50 concurrent verifications
// on 4 servers in storage-only mode gives exactly 1 success.
func TestLastUnitRace(t *testing.T) {
	got, after := lastUnitRace(t, servers(t, 4), same)
	if got != 1 {
		t.Fatalf("%d of 50 verifications succeeded on a key with 1 use left; want exactly 1", got)
	}
	if after.Remaining == nil || *after.Remaining != 0 {
		t.Fatalf("remaining after = %v; want 0", after.Remaining)
	}
}

// TestLastUnitRaceCatchesNonAtomic proves TestLastUnitRace can fail.
func TestLastUnitRaceCatchesNonAtomic(t *testing.T) {
	b := newBarrier(50)
	got, _ := lastUnitRace(t, servers(t, 4), func(s *sluiceredis.Storage) core.SecondaryStorage { return readThenWriteClaimer{s, b} })
	t.Logf("the read-then-write claimer let %d of 50 through on 1 use left", got)
	if got <= 1 {
		t.Fatalf("the read-then-write claimer let %d of 50 through on 1 use left; the race should have let more through", got)
	}
}

const refillAmount = 5

func refillRace(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) core.SecondaryStorage) (int64, *apikey.Key, time.Time) {
	zero := int64(0)
	created := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour + time.Millisecond)
	got, after := verifyRace(t, stores, 20, apikey.CreateParams{ReferenceID: "u", Remaining: &zero,
		Refill: apikey.Refill{Interval: time.Hour, Amount: refillAmount}, RateLimit: noRateLimit}, created, now, wrap)
	return got, after, now
}

// TestRefillRace: with a refill due, 20 concurrent verifications refill the
// key exactly once and succeed exactly refillAmount times.
func TestRefillRace(t *testing.T) {
	got, after, now := refillRace(t, servers(t, 4), same)
	if got != refillAmount {
		t.Fatalf("%d of 20 verifications succeeded after a refill of %d; want exactly %d (one refill)", got, refillAmount, refillAmount)
	}
	if after.Remaining == nil || *after.Remaining != 0 || !after.LastRefillAt.Equal(now) {
		t.Fatalf("after the race: remaining %v, lastRefillAt %v; want 0 and %v", after.Remaining, after.LastRefillAt, now)
	}
}

// TestRefillRaceCatchesNonAtomic proves TestRefillRace can fail: racing
// read-then-write claims each see the refill due and refill again.
func TestRefillRaceCatchesNonAtomic(t *testing.T) {
	b := newBarrier(20)
	got, _, _ := refillRace(t, servers(t, 4), func(s *sluiceredis.Storage) core.SecondaryStorage { return readThenWriteClaimer{s, b} })
	t.Logf("the read-then-write claimer let %d of 20 through after a refill of %d", got, refillAmount)
	if got <= refillAmount {
		t.Fatalf("the read-then-write claimer let %d of 20 through after a refill of %d; the race should have refilled more than once", got, refillAmount)
	}
}
