package redistest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/concurrency"
)

// TestConcurrency runs the concurrency-limit cases (core/concurrency) on
// Storage's slot scripts, on each kind of client, every store over a client
// of its own on one key prefix.
func TestConcurrency(t *testing.T) {
	for _, k := range clientKinds {
		t.Run(k.name, func(t *testing.T) {
			adaptertest.RunConcurrencyStores(t, func(t *testing.T, count int) []concurrency.Store {
				h := &redisHarness{t: t, kind: k, prefix: fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))}
				t.Cleanup(h.Close)
				stores := make([]concurrency.Store, count)
				for i := range stores {
					s, err := h.storage()
					if err != nil {
						t.Fatal(err)
					}
					stores[i] = s.(concurrency.Store)
				}
				return stores
			})
		})
	}
}

// TestConcurrencyHashExpires: a key's slots are one hash that expires when
// its last lease ends (a renewal pushes that back; a release does not need
// to), so that keys nobody uses again do not stay in Redis.
func TestConcurrencyHashExpires(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: adaptertest.RedisAddr(t)})
	defer c.Close()
	prefix := fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))
	s, err := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Del(context.Background(), prefix+"job#slots")
	l, err := concurrency.New(s)
	if err != nil {
		t.Fatal(err)
	}
	slot, ok, err := l.Acquire(t.Context(), "job", 2, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire: %t %v", ok, err)
	}
	ttl, err := c.PTTL(t.Context(), prefix+"job#slots").Result()
	if err != nil || ttl <= 50*time.Second || ttl > time.Minute {
		t.Fatalf("the hash's TTL after a lease of 1m: %v %v", ttl, err)
	}
	if _, _, err := l.Acquire(t.Context(), "job", 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	ttl, err = c.PTTL(t.Context(), prefix+"job#slots").Result()
	if err != nil || ttl <= 110*time.Second || ttl > 2*time.Minute {
		t.Fatalf("the hash's TTL after a second lease of 2m: %v %v", ttl, err)
	}
	if ok, err := slot.Release(t.Context()); !ok || err != nil {
		t.Fatalf("Release: %t %v", ok, err)
	}
}
