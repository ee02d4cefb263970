package redistest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// BenchmarkRateLimit compares a rate-limit decision of sluice's limiter on
// this storage with github.com/go-redis/redis_rate on the same Redis and
// the same client settings: one hot key or 10,000 keys used in turn, at 1
// and 32 goroutines. In "open" the limit is far away, so every request is
// admitted and reaches Redis (one script call each in both libraries); in
// "full" the hot key is at its limit, where sluice's denial cache answers
// without Redis and redis_rate still runs its script.
func BenchmarkRateLimit(b *testing.B) {
	addr := adaptertest.RedisAddr(b)
	const uniformKeys = 10000
	for _, scenario := range []string{"open/hot", "open/uniform", "full/hot"} {
		for _, g := range []int{1, 32} {
			for _, impl := range []string{"sluice", "redis_rate"} {
				b.Run(fmt.Sprintf("%s/g%d/%s", scenario, g, impl), func(b *testing.B) {
					client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
					prefix := fmt.Sprintf("sluicebench:%d:", time.Now().UnixNano())
					b.Cleanup(func() { cleanup(client, prefix) })
					max := int64(1 << 40)
					if scenario == "full/hot" {
						max = 1
					}
					key := func(i int) string { return "hot" }
					if scenario == "open/uniform" {
						key = func(i int) string { return fmt.Sprintf("k%d", i%uniformKeys) }
					}
					decide := newDecider(b, impl, client, prefix, max)
					if scenario == "full/hot" {
						decide(key(0)) // spend the one unit, so the key is full
					}
					open := scenario != "full/hot"
					parallel(b, g, func(i int) error {
						allowed, err := decide(key(i))
						if err == nil && allowed != open {
							err = fmt.Errorf("%s: allowed = %v, want %v", impl, allowed, open)
						}
						return err
					})
				})
			}
		}
	}
}

// BenchmarkRateLimitPaired measures the same comparison as
// BenchmarkRateLimit in the "open" scenarios, alternating blocks of
// requests of the two libraries (in alternating order) so that both see the
// same load on a shared machine. It reports each library's time per
// decision and ratio = sluice's throughput / redis_rate's.
func BenchmarkRateLimitPaired(b *testing.B) {
	addr := adaptertest.RedisAddr(b)
	for _, scenario := range []string{"hot", "uniform"} {
		for _, g := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/g%d", scenario, g), func(b *testing.B) {
				client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
				prefix := fmt.Sprintf("sluicebench:%d:", time.Now().UnixNano())
				b.Cleanup(func() { cleanup(client, prefix) })
				key := func(i int) string { return "hot" }
				if scenario == "uniform" {
					key = func(i int) string { return fmt.Sprintf("k%d", i%10000) }
				}
				deciders := [2]func(string) (bool, error){
					newDecider(b, "sluice", client, prefix, 1<<40),
					newDecider(b, "redis_rate", client, prefix, 1<<40),
				}
				const block = 512
				var spent [2]time.Duration
				b.ResetTimer()
				for done, round := 0, 0; done < b.N; round++ {
					n := min(block, b.N-done)
					for j := range 2 {
						which := (j + round) % 2
						start := time.Now()
						runOps(g, n, done, func(i int) error {
							ok, err := deciders[which](key(i))
							if err == nil && !ok {
								err = fmt.Errorf("request %d denied under an open limit", i)
							}
							return err
						}, b)
						spent[which] += time.Since(start)
					}
					done += n
				}
				b.StopTimer()
				b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "sluice-ns/op")
				b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "redis_rate-ns/op")
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
			})
		}
	}
}

// newDecider returns one rate-limit decision of impl: Max units per minute.
func newDecider(b *testing.B, impl string, client *redis.Client, prefix string, max int64) func(key string) (bool, error) {
	ctx := context.Background()
	if impl == "redis_rate" {
		l := redis_rate.NewLimiter(client)
		limit := redis_rate.PerMinute(int(max))
		return func(key string) (bool, error) {
			res, err := l.Allow(ctx, prefix+key, limit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		}
	}
	s, err := sluiceredis.New(client, sluiceredis.WithPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Secondary(s))
	if err != nil {
		b.Fatal(err)
	}
	rule := ratelimit.Rule{Window: time.Minute, Max: max}
	return func(key string) (bool, error) {
		d, err := l.Consume(ctx, key, rule)
		return d.Allowed, err
	}
}

// parallel runs op b.N times in all, spread over g goroutines.
func parallel(b *testing.B, g int, op func(i int) error) {
	b.ResetTimer()
	runOps(g, b.N, 0, op, b)
	b.StopTimer()
}

// runOps runs op for i in [from, from+n), spread over g goroutines.
func runOps(g, n, from int, op func(i int) error, b *testing.B) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(from + i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func cleanup(c *redis.Client, prefix string) {
	ctx := context.Background()
	keys, _ := c.Keys(ctx, prefix+"*").Result()
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		c.Del(ctx, keys[:n]...)
		keys = keys[n:]
	}
	c.Close()
}
