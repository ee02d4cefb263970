package redistest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/apikey/keystore"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// EnvRedisCluster names a Redis Cluster for the cluster tests: seed
// addresses separated by commas, e.g. 127.0.0.1:17101,127.0.0.1:17102.
// Without it those tests skip, in CI too (a cluster is optional there).
// adapters/redis/testdata/start-cluster.sh starts a throwaway one and prints
// the setting.
const EnvRedisCluster = "SLUICE_REDIS_CLUSTER_ADDRS"

// clientKind makes a client of one kind and runs fn on each of its servers.
type clientKind struct {
	name string
	make func(t *testing.T) (redis.UniversalClient, func(func(*redis.Client)))
}

var clientKinds = []clientKind{
	{"client", func(t *testing.T) (redis.UniversalClient, func(func(*redis.Client))) {
		c := redis.NewClient(&redis.Options{Addr: adaptertest.RedisAddr(t)})
		return c, func(fn func(*redis.Client)) { fn(c) }
	}},
	{"ring", func(t *testing.T) (redis.UniversalClient, func(func(*redis.Client))) {
		c := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"shard1": adaptertest.RedisAddr(t)}})
		return c, func(fn func(*redis.Client)) {
			eachOf(fn, func(add func(context.Context, *redis.Client) error) {
				c.ForEachShard(context.Background(), add)
			})
		}
	}},
	{"cluster", func(t *testing.T) (redis.UniversalClient, func(func(*redis.Client))) {
		addrs := os.Getenv(EnvRedisCluster)
		if addrs == "" {
			t.Skipf("Redis Cluster not configured: set %s to run this test", EnvRedisCluster)
		}
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		return c, func(fn func(*redis.Client)) {
			eachOf(fn, func(add func(context.Context, *redis.Client) error) {
				c.ForEachMaster(context.Background(), add)
			})
		}
	}},
}

// eachOf runs fn on every server that list reports, one after the other
// in the calling goroutine (go-redis calls list's callback concurrently).
func eachOf(fn func(*redis.Client), list func(add func(context.Context, *redis.Client) error)) {
	var (
		mu      sync.Mutex
		servers []*redis.Client
	)
	list(func(_ context.Context, s *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		servers = append(servers, s)
		return nil
	})
	for _, s := range servers {
		fn(s)
	}
}

// onEachKind runs fn with a storage on each kind of client (c, the client
// the storage uses), with a prefix of its own whose keys are removed
// afterwards on every server.
func onEachKind(t *testing.T, fn func(t *testing.T, s *sluiceredis.Storage, c redis.UniversalClient, each func(func(*redis.Client)))) {
	for _, k := range clientKinds {
		t.Run(k.name, func(t *testing.T) {
			c, each := k.make(t)
			prefix := fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))
			t.Cleanup(func() {
				each(func(s *redis.Client) {
					ctx := context.Background()
					keys, _ := s.Keys(ctx, prefix+"*").Result()
					for _, key := range keys {
						s.Del(ctx, key) // one by one: a cluster refuses cross-slot DEL
					}
				})
				c.Close()
			})
			s, err := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			fn(t, s, c, each)
		})
	}
}

// TestClientKinds runs counters, the rate limiter and storage-only API keys
// on a plain client, a one-shard ring and a cluster client.
func TestClientKinds(t *testing.T) {
	onEachKind(t, func(t *testing.T, s *sluiceredis.Storage, _ redis.UniversalClient, _ func(func(*redis.Client))) {
		ctx := context.Background()
		if c, err := s.Increment(ctx, "n", 2, 10*time.Second); err != nil || c.Value != 2 || c.TTL <= 0 {
			t.Fatalf("Increment = %+v, %v; want 2 with a TTL", c, err)
		}
		l, err := ratelimit.New(ratelimit.Secondary(s))
		if err != nil {
			t.Fatal(err)
		}
		rule := ratelimit.Rule{Window: time.Minute, Max: 2}
		var allowed []bool
		for range 3 {
			d, err := l.Consume(ctx, "ip", rule)
			if err != nil {
				t.Fatal(err)
			}
			allowed = append(allowed, d.Allowed)
		}
		if fmt.Sprint(allowed) != "[true true false]" {
			t.Fatalf("three requests with max 2: allowed %v; want [true true false]", allowed)
		}
		checkManager(t, s)
	})
}

// checkManager runs the API-key manager in storage-only mode on s: create,
// verify until the quota is spent, list (Indexer), update (Patch), delete.
func checkManager(t *testing.T, s *sluiceredis.Storage) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	m, err := apikey.NewStorageOnly(s, apikey.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatalf("NewStorageOnly on sluiceredis.Storage: %v", err)
	}
	two := int64(2)
	plain, key, err := m.Create(ctx, apikey.CreateParams{ReferenceID: "owner", Name: "ci", Remaining: &two,
		Metadata: map[string]any{"plan": "pro"}, Permissions: map[string][]string{"files": {"read"}}})
	if err != nil {
		t.Fatal(err)
	}
	var codes []apikey.Code
	for range 3 {
		res, err := m.Verify(ctx, plain)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, res.Code)
	}
	if fmt.Sprint(codes) != fmt.Sprint([]apikey.Code{"", "", apikey.CodeUsageExceeded}) {
		t.Fatalf("three verifications with 2 uses: %q; want two valid then %s", codes, apikey.CodeUsageExceeded)
	}
	list, err := m.List(ctx, "owner")
	if err != nil || len(list) != 1 || list[0].ID != key.ID || *list[0].Remaining != 0 || list[0].Metadata["plan"] != "pro" {
		t.Fatalf("List = %+v, %v; want the one key with 0 left and its metadata", list, err)
	}
	off, ten := false, int64(10)
	upd, err := m.Update(ctx, key.ID, apikey.UpdateParams{Enabled: &off, Remaining: &ten})
	if err != nil || upd.Enabled || *upd.Remaining != 10 || upd.Name != "ci" {
		t.Fatalf("Update = %+v, %v; want disabled with 10 left, name kept", upd, err)
	}
	if res, err := m.Verify(ctx, plain); err != nil || res.Code != apikey.CodeDisabled {
		t.Fatalf("Verify of a disabled key = %+v, %v; want %s", res, err, apikey.CodeDisabled)
	}
	if ok, err := m.Delete(ctx, key.ID); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if res, err := m.Verify(ctx, plain); err != nil || res.Code != apikey.CodeInvalid {
		t.Fatalf("Verify of a deleted key = %+v, %v; want %s", res, err, apikey.CodeInvalid)
	}
	if list, err := m.List(ctx, "owner"); err != nil || len(list) != 0 {
		t.Fatalf("List after Delete = %v, %v; want none", list, err)
	}
}

// shaRecorder is a client hook that collects the script hashes the client
// sends with EVALSHA: the hashes of the scripts the storage runs, as the
// server knows them, without the package exporting them.
type shaRecorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *shaRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *shaRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); strings.HasPrefix(cmd.Name(), "evalsha") && len(args) > 1 {
			r.mu.Lock()
			r.seen[fmt.Sprint(args[1])] = true
			r.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (r *shaRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *shaRecorder) hashes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for h := range r.seen {
		out = append(out, h)
	}
	return out
}

// TestScriptFlushReloads: after SCRIPT FLUSH every call still works, the
// scripts being run by hash and loaded again on NOSCRIPT.
func TestScriptFlushReloads(t *testing.T) {
	onEachKind(t, func(t *testing.T, s *sluiceredis.Storage, c redis.UniversalClient, each func(func(*redis.Client))) {
		ctx := context.Background()
		rec := &shaRecorder{seen: map[string]bool{}}
		c.AddHook(rec)
		run := func() {
			t.Helper()
			if _, err := s.Increment(ctx, "n", 1, time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.IncrementBounded(ctx, "b", 1, 5, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := s.Set(ctx, "k", `{"enabled":true,"remaining":5}`, 0); err != nil {
				t.Fatal(err)
			}
			if res, err := s.Claim(ctx, "k", keystore.Request{Now: base, Cost: 1}); err != nil || res.Code != "" || *res.Key.Remaining != 4 {
				t.Fatalf("Claim = %+v, %v; want allowed with 4 left", res, err)
			}
			if _, ok, err := s.Patch(ctx, "k", map[string]any{"remaining": int64(5)}); !ok || err != nil {
				t.Fatalf("Patch = %v, %v", ok, err)
			}
		}
		run()
		// Increment, IncrementBounded, Claim and Patch each run a script
		// of their own.
		hashes := rec.hashes()
		if len(hashes) != 4 {
			t.Fatalf("the storage ran %d distinct scripts (%v); want 4", len(hashes), hashes)
		}
		loaded := func() (n int) {
			each(func(c *redis.Client) {
				exists, err := c.ScriptExists(ctx, hashes...).Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range exists {
					if e {
						n++
					}
				}
			})
			return n
		}
		each(func(c *redis.Client) {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		})
		if n := loaded(); n != 0 {
			t.Fatalf("%d scripts still loaded after SCRIPT FLUSH", n)
		}
		run()
		if n := loaded(); n < len(hashes) {
			t.Fatalf("%d scripts loaded after running them again; want at least %d", n, len(hashes))
		}
	})
}

// kindServers returns n storages on n clients of kind k sharing one prefix,
// whose keys are removed afterwards.
func kindServers(t *testing.T, k clientKind, n int) []*sluiceredis.Storage {
	t.Helper()
	prefix := fmt.Sprintf("sluicetest:%d:%d:", time.Now().UnixNano(), testSeq.Add(1))
	var out []*sluiceredis.Storage
	for i := range n {
		c, each := k.make(t)
		t.Cleanup(func() {
			if i == 0 { // before closing the client it needs
				each(func(s *redis.Client) {
					ctx := context.Background()
					keys, _ := s.Keys(ctx, prefix+"*").Result()
					for _, key := range keys {
						s.Del(ctx, key)
					}
				})
			}
			c.Close()
		})
		s, err := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestRacesOnClientKinds runs the limiter's exact-count race through four
// ring clients and four cluster clients too. (The storage's own races run
// on every kind of client in TestStorageConformance.)
func TestRacesOnClientKinds(t *testing.T) {
	for _, k := range clientKinds[1:] {
		t.Run(k.name, func(t *testing.T) {
			if got := limiterRace(t, kindServers(t, k, 4), same); got != 10 {
				t.Fatalf("admitted %d of 64 with max 10; want exactly 10", got)
			}
		})
	}
}
