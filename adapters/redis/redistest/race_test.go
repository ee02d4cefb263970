package redistest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
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

func (c readThenWriteCounter) IncrementBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (driver.Counter, bool, error) {
	v, _, err := c.Get(ctx, key)
	c.b.wait()
	if err != nil {
		return driver.Counter{}, false, err
	}
	var n int64
	fmt.Sscan(v, &n)
	if n+by > max {
		return driver.Counter{Value: n, TTL: ttl}, false, nil
	}
	return driver.Counter{Value: n + by, TTL: ttl}, true, c.Set(ctx, key, fmt.Sprint(n+by), ttl)
}

// limiterRace releases 64 goroutines over 4 servers, each with its own
// limiter, on one fresh key with max 10, and returns how many were admitted.
func limiterRace(t *testing.T, stores []*sluiceredis.Storage, wrap func(*sluiceredis.Storage) driver.SecondaryStorage) int64 {
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
	got := limiterRace(t, servers(t, 4), func(s *sluiceredis.Storage) driver.SecondaryStorage { return readThenWriteCounter{s, b} })
	t.Logf("the read-then-write counter admitted %d of 64 with max 10", got)
	if got <= 10 {
		t.Fatalf("the read-then-write counter admitted %d of 64 with max 10; the race should have let more through", got)
	}
}

// same runs a race on the storage itself.
func same(s *sluiceredis.Storage) driver.SecondaryStorage { return s }
