package sluiceredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
)

var testSeq atomic.Int64

// newStorage returns a storage on the configured Redis with a key prefix
// of its own, and removes every key it wrote when the test ends.
func newStorage(t *testing.T) (*sluiceredis.Storage, *redis.Client, string) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: adaptertest.RedisAddr(t)})
	prefix := fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := client.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			client.Del(ctx, keys...)
		}
		client.Close()
	})
	s, err := sluiceredis.New(client, sluiceredis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s, client, prefix
}

func TestGetSetDelete(t *testing.T) {
	s, _, _ := newStorage(t)
	ctx := context.Background()
	if _, ok, err := s.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("Get of a missing key = ok %v, err %v; want false, nil", ok, err)
	}
	if err := s.Set(ctx, "k", "v", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get(ctx, "k"); v != "v" || !ok || err != nil {
		t.Fatalf("Get = %q, %v, %v; want v, true, nil", v, ok, err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, "k"); ok {
		t.Fatal("key still there after Delete")
	}
}

func TestTTLSetOnceNotExtended(t *testing.T) {
	s, client, prefix := newStorage(t)
	ctx := context.Background()
	c, err := s.Increment(ctx, "n", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Value != 1 || c.TTL <= 0 || c.TTL > 10*time.Second {
		t.Fatalf("first Increment = %+v; want value 1 and a TTL in (0, 10s]", c)
	}
	// A later increment with a far longer TTL must keep the first expiry.
	c, err = s.Increment(ctx, "n", 2, 1000*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Value != 3 || c.TTL > 10*time.Second {
		t.Fatalf("second Increment = %+v; want value 3 and the first TTL (≤ 10s)", c)
	}
	// Only this test's keys: the server is shared with other tests.
	keys, _ := client.Keys(ctx, prefix+"*").Result()
	for _, k := range keys {
		if d, _ := client.PTTL(ctx, k).Result(); d == -1 {
			t.Errorf("key %q has no expiry", k)
		}
	}
	c, ok, err := s.IncrementBounded(ctx, "n", 1, 100, 1000*time.Second)
	if err != nil || !ok || c.Value != 4 || c.TTL > 10*time.Second {
		t.Fatalf("IncrementBounded = %+v, %v, %v; want value 4 within the first TTL", c, ok, err)
	}
}

func TestBoundedRefusalChangesNothing(t *testing.T) {
	s, client, prefix := newStorage(t)
	ctx := context.Background()
	if _, ok, err := s.IncrementBounded(ctx, "b", 3, 3, time.Minute); !ok || err != nil {
		t.Fatalf("first bounded increment refused: %v", err)
	}
	c, ok, err := s.IncrementBounded(ctx, "b", 1, 3, time.Minute)
	if ok || err != nil || c.Value != 3 || c.TTL <= 0 || c.TTL > time.Minute {
		t.Fatalf("over-max increment = %+v, %v, %v; want value 3 with its TTL, false, nil", c, ok, err)
	}
	if v, _, _ := s.Get(ctx, "b"); v != "3" {
		t.Fatalf("counter after a refused increment = %q; want 3", v)
	}
	if d := client.PTTL(ctx, prefix+"b").Val(); d <= 0 || d > time.Minute {
		t.Fatalf("expiry after a refused increment = %v; want the first one kept", d)
	}
	c, ok, err = s.IncrementBounded(ctx, "fresh", 5, 4, time.Minute)
	if ok || err != nil || c.Value != 0 {
		t.Fatalf("increment larger than max on a fresh key = %+v, %v, %v; want 0, false, nil", c, ok, err)
	}
	if _, found, _ := s.Get(ctx, "fresh"); found {
		t.Fatal("a refused increment created the counter")
	}
}

func TestInvalidTTL(t *testing.T) {
	s, err := sluiceredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, -time.Second, 1500 * time.Millisecond} {
		// The address is unreachable: an I/O attempt would fail differently.
		if _, err := s.Increment(ctx, "k", 1, ttl); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Increment with ttl %v: err = %v; want ErrInvalid before any I/O", ttl, err)
		}
		if _, _, err := s.IncrementBounded(ctx, "k", 1, 1, ttl); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("IncrementBounded with ttl %v: err = %v; want ErrInvalid", ttl, err)
		}
	}
	if err := s.Set(ctx, "k", "v", 1500*time.Millisecond); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Set with ttl 1.5s: err = %v; want ErrInvalid", err)
	}
	if _, err := sluiceredis.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New(nil): err = %v; want ErrInvalid", err)
	}
}

func TestOutageIsAnError(t *testing.T) {
	s, err := sluiceredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Increment(context.Background(), "k", 1, time.Second); err == nil || errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Increment against no server: err = %v; want a connection error", err)
	}
}

func TestContextDeadlineHonoured(t *testing.T) {
	s, _, _ := newStorage(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Increment(ctx, "k", 1, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Increment with a cancelled context: err = %v; want context.Canceled", err)
	}
	if _, err := s.Claim(ctx, "k", apikey.ClaimRequest{Now: 1, Cost: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim with a cancelled context: err = %v; want context.Canceled", err)
	}
	if _, _, err := s.Patch(ctx, "k", map[string]any{"enabled": true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Patch with a cancelled context: err = %v; want context.Canceled", err)
	}
}

// admitUnderRace releases 64 goroutines over 4 clients at once, each asking
// incr to admit one request against max 10, and returns how many it admitted.
func admitUnderRace(t *testing.T, incr func(ctx context.Context, s *sluiceredis.Storage) (bool, error)) (int64, *sluiceredis.Storage) {
	s, client, prefix := newStorage(t)
	stores := []*sluiceredis.Storage{s}
	for i := 0; i < 3; i++ {
		c := redis.NewClient(&redis.Options{Addr: client.Options().Addr})
		t.Cleanup(func() { c.Close() })
		other, _ := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
		stores = append(stores, other)
	}
	var admitted atomic.Int64
	adaptertest.Release(64, func(i int) {
		ok, err := incr(context.Background(), stores[i%len(stores)])
		if err != nil {
			t.Error(err)
		}
		if ok {
			admitted.Add(1)
		}
	})
	return admitted.Load(), s
}

// TestBoundedRace: exactly 10 of 64 concurrent callers on 4 clients are
// admitted with max 10, and the counter ends at 10.
func TestBoundedRace(t *testing.T) {
	got, s := admitUnderRace(t, func(ctx context.Context, s *sluiceredis.Storage) (bool, error) {
		_, ok, err := s.IncrementBounded(ctx, "hot", 1, 10, time.Minute)
		return ok, err
	})
	if got != 10 {
		t.Fatalf("admitted %d of 64 with max 10; want exactly 10", got)
	}
	if v, _, _ := s.Get(context.Background(), "hot"); v != "10" {
		t.Fatalf("counter = %s; want 10", v)
	}
}

// TestRaceCatchesReadThenWrite proves TestBoundedRace can fail: the same
// race through a read-then-write counter (GET, compare, SET) over-admits.
func TestRaceCatchesReadThenWrite(t *testing.T) {
	b := newBarrier(64)
	got, _ := admitUnderRace(t, func(ctx context.Context, s *sluiceredis.Storage) (bool, error) {
		v, _, err := s.Get(ctx, "hot")
		b.wait() // every caller reads before any writes: see barrier
		if err != nil {
			return false, err
		}
		var n int64
		fmt.Sscan(v, &n)
		if n+1 > 10 {
			return false, nil
		}
		return true, s.Set(ctx, "hot", fmt.Sprint(n+1), time.Minute)
	})
	if got <= 10 {
		t.Fatalf("the non-atomic counter admitted %d of 64 with max 10; the race should have let more through", got)
	}
}

// unreachable returns a storage whose server does not exist, to show that
// an error happens before any I/O.
func unreachable(t *testing.T) *sluiceredis.Storage {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	s, err := sluiceredis.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
