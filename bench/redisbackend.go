package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// countHook counts the commands (and pipelines) sent to Redis: the round
// trips.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// redisBackend sets up sluice's Redis storage under the rate limiter and
// go-redis/redis_rate side by side, on one client, under keys of this run.
func redisBackend(ctx context.Context, addr string, cfg config, runID string) (*backend, error) {
	rt := new(atomic.Int64)
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: cfg.conns})
	client.AddHook(countHook{rt})
	prefix := "sluicebench:" + runID + ":"
	cleanup := func() {
		bg := context.Background()
		for _, pattern := range []string{prefix + "*", "rate:" + prefix + "*"} {
			iter := client.Scan(bg, 0, pattern, 1000).Iterator()
			var keys []string
			for iter.Next(bg) {
				keys = append(keys, iter.Val())
			}
			for len(keys) > 0 {
				n := min(len(keys), 500)
				client.Del(bg, keys[:n]...)
				keys = keys[n:]
			}
		}
		client.Close()
	}
	fail := func(err error) (*backend, error) {
		cleanup()
		return nil, fmt.Errorf("redis: %w", err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		return fail(err)
	}
	version := "?"
	if info, err := client.InfoMap(ctx, "server").Result(); err == nil {
		version = "Redis " + info["Server"]["redis_version"]
	}
	st, err := sluiceredis.New(client, sluiceredis.WithPrefix(prefix))
	if err != nil {
		return fail(err)
	}
	lim, err := ratelimit.New(ratelimit.Secondary(st))
	if err != nil {
		return fail(err)
	}
	rr := redis_rate.NewLimiter(client)

	ukeys := make([]string, cfg.keys)
	for i := range ukeys {
		ukeys[i] = fmt.Sprintf("u%05d", i)
	}
	keyOf := func(sc scenario) (func(int) string, int64) {
		switch sc {
		case uniformKeys:
			return func(k int) string { return ukeys[k] }, bigMax
		case denialStorm:
			return func(int) string { return "deny" }, denyMax
		default:
			return func(int) string { return "hot" }, bigMax
		}
	}
	consume := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := lim.Consume(ctx, key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
	// redis_rate is a GCRA: Burst requests at once, then Rate per Period.
	// Burst = Rate = max per window is the closest to a fixed window of max.
	allow := func(ctx context.Context, key string, max int64) (bool, error) {
		r, err := rr.Allow(ctx, prefix+key, redis_rate.Limit{Rate: int(max), Burst: int(max), Period: window})
		if err != nil {
			return false, err
		}
		return r.Allowed > 0, nil
	}
	var seq atomic.Int64
	mk := func(name string, k kind, decide func(context.Context, string, int64) (bool, error), stored func(ctx context.Context, key string) (int64, error)) *approach {
		return &approach{
			name: name, kind: k,
			decider: func(sc scenario) decideFunc {
				keyFor, max := keyOf(sc)
				return func(ctx context.Context, i int) (bool, error) { return decide(ctx, keyFor(i), max) }
			},
			burst: func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
				key := fmt.Sprintf("burst-%d", seq.Add(1))
				var read func(context.Context) (int64, error)
				if stored != nil {
					read = func(ctx context.Context) (int64, error) { return stored(ctx, key) }
				}
				return func(ctx context.Context, _ int) (bool, error) { return decide(ctx, key, burstMax) }, read, nil
			},
		}
	}
	counter := func(ctx context.Context, key string) (int64, error) {
		v, ok, err := st.Get(ctx, ratelimit.SecondaryPrefix+key)
		if err != nil || !ok {
			return 0, fmt.Errorf("counter %q: found %v, %v", key, ok, err)
		}
		return strconv.ParseInt(v, 10, 64)
	}
	// Both start the denial storm on a full key.
	for range denyMax {
		if ok, err := consume(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the denial-storm key: %v %v", ok, err))
		}
		if ok, err := allow(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the redis_rate denial-storm key: %v %v", ok, err))
		}
	}
	gcra, err := redisGCRA(ctx, st, keyOf)
	if err != nil {
		return fail(err)
	}
	sliding, err := redisSliding(ctx, st, keyOf)
	if err != nil {
		return fail(err)
	}
	return &backend{
		name: "redis", version: version, keys: cfg.keys, roundTrips: rt.Load, close: cleanup,
		approaches: []*approach{
			mk(redisSluiceName, kindRedis, consume, counter),
			mk(redisRateName, kindRedisRate, allow, nil),
			gcra,
			sliding,
		},
	}, nil
}
