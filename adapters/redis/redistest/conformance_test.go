package redistest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
)

// redisHarness gives adaptertest's storage suite storages on one kind of
// client, all with one key prefix of their own: MakeStorage's client and a
// new client for every peer, as several servers would each have.
type redisHarness struct {
	t      *testing.T
	kind   clientKind
	prefix string

	mu      sync.Mutex
	clients []redis.UniversalClient
	each    func(func(*redis.Client)) // the first client's servers
}

func (h *redisHarness) storage() (driver.SecondaryStorage, error) {
	c, each := h.kind.make(h.t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.each == nil {
		h.each = each
	}
	h.clients = append(h.clients, c)
	return sluiceredis.New(c, sluiceredis.WithPrefix(h.prefix))
}

func (h *redisHarness) MakeStorage(context.Context) (driver.SecondaryStorage, error) {
	return h.storage()
}

func (h *redisHarness) MakePeer(context.Context) (driver.SecondaryStorage, error) {
	return h.storage()
}

// Advance is never called: Redis keeps its own time, and the suite waits
// for it.
func (h *redisHarness) Advance(time.Duration) {}

func (h *redisHarness) Capabilities() adaptertest.StorageCapabilities {
	return adaptertest.StorageCapabilities{SeveralClients: true}
}

// Close removes the prefix's keys on every server, one by one (a cluster
// refuses a DEL across slots), then closes the clients.
func (h *redisHarness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.each != nil {
		h.each(func(s *redis.Client) {
			ctx := context.Background()
			keys, _ := s.Keys(ctx, h.prefix+"*").Result()
			for _, key := range keys {
				s.Del(ctx, key)
			}
		})
	}
	for _, c := range h.clients {
		c.Close()
	}
}

// TestStorageConformance runs adaptertest's storage suite on a plain
// client, a one-shard ring and a cluster client (when
// SLUICE_REDIS_CLUSTER_ADDRS is set): get, set and delete, real-time
// expiry, counters, hostile keys, cancelled contexts, claims and patches,
// and the exact-count races over one client and over several.
func TestStorageConformance(t *testing.T) {
	for _, k := range clientKinds {
		t.Run(k.name, func(t *testing.T) {
			adaptertest.RunStorage(t, func(_ context.Context, t *testing.T) (adaptertest.StorageHarness, error) {
				return &redisHarness{t: t, kind: k, prefix: fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))}, nil
			})
		})
	}
}
