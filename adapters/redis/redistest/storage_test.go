package redistest_test

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
