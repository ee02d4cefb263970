package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

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

// The Redis approaches beside sluice's and redis_rate's.
const (
	kindRedisUlule kind = "redis-ulule"
	kindRedisFloor kind = "redis-floor"
	kindRedisAlone kind = "redis-sluice-alone"

	redisUluleName = "ulule/limiter Redis store (fixed window)"
	redisFloorName = "Redis floor: one EVALSHA (INCR, PEXPIRE on the first)"
	redisAloneName = "sluice Redis storage (rate limiter, every call alone: WithInFlight(0))"
)

// floorScript is the least a fixed window on Redis can do in one round
// trip: INCR, an expiry on the counter's first request, admitted while at
// most ARGV[1]. It counts denied requests too (sluice's bounded increment
// does not), and it is read into an IntCmd, one integer.
var floorScript = redis.NewScript(redisFloorSource)

const redisFloorSource = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if v > tonumber(ARGV[1]) then return 0 end
return 1
`

// redisClient opens a client on addr ("redis") or on the comma-separated
// addresses of a Redis Cluster ("redis-cluster").
func redisClient(db, addr string, conns int) redis.UniversalClient {
	if db == "redis-cluster" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addr, ","), PoolSize: conns})
	}
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: conns})
}

// deleteMatching deletes the keys matching pattern, on every master of a
// cluster.
func deleteMatching(ctx context.Context, c redis.UniversalClient, pattern string) {
	del := func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n.Del(ctx, iter.Val())
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, del)
		return
	}
	_ = del(ctx, c.(*redis.Client))
}

// redisBackend sets up sluice's Redis storage under the rate limiter,
// go-redis/redis_rate, ulule/limiter's Redis store and the floor side by
// side, on one client, under keys of this run; db "redis-cluster" runs
// them on a Redis Cluster.
func redisBackend(ctx context.Context, db, addr string, cfg config, runID string) (*backend, error) {
	rt := new(atomic.Int64)
	client := redisClient(db, addr, cfg.conns)
	client.AddHook(countHook{rt})
	prefix := "sluicebench:" + runID + ":"
	cleanup := func() {
		bg := context.Background()
		for _, pattern := range []string{prefix + "*", "rate:" + prefix + "*"} {
			deleteMatching(bg, client, pattern)
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
	// The same limiter with no batching: each script on a round trip of
	// its own, as go-redis sends commands and as redis_rate does.
	stAlone, err := sluiceredis.New(client, sluiceredis.WithPrefix(prefix+"alone:"), sluiceredis.WithInFlight(0))
	if err != nil {
		return fail(err)
	}
	limAlone, err := ratelimit.New(ratelimit.Secondary(stAlone))
	if err != nil {
		return fail(err)
	}
	consumeAlone := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := limAlone.Consume(ctx, key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
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
	ust, err := ululeredis.NewStoreWithOptions(client, ulule.StoreOptions{Prefix: prefix + "ulule:", MaxRetry: ulule.DefaultMaxRetry})
	if err != nil {
		return fail(err)
	}
	ulules := map[int64]*ulule.Limiter{}
	for _, m := range []int64{bigMax, denyMax, burstMax} {
		ulules[m] = ulule.New(ust, ulule.Rate{Period: window, Limit: m})
	}
	ululeTake := func(ctx context.Context, key string, max int64) (bool, error) {
		c, err := ulules[max].Get(ctx, key)
		return err == nil && !c.Reached, err
	}
	floorTTL := window.Milliseconds()
	floor := func(ctx context.Context, key string, max int64) (bool, error) {
		cmd := redis.NewIntCmd(ctx, "evalsha", floorScript.Hash(), 1, prefix+"floor:"+key, max, floorTTL)
		err := client.Process(ctx, cmd)
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmd = redis.NewIntCmd(ctx, "eval", redisFloorSource, 1, prefix+"floor:"+key, max, floorTTL)
			err = client.Process(ctx, cmd)
		}
		return cmd.Val() == 1, err
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
		if ok, err := consumeAlone(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the unbatched denial-storm key: %v %v", ok, err))
		}
		if ok, err := allow(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the redis_rate denial-storm key: %v %v", ok, err))
		}
		if ok, err := ululeTake(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the ulule denial-storm key: %v %v", ok, err))
		}
		if ok, err := floor(ctx, "deny", denyMax); err != nil || !ok {
			return fail(fmt.Errorf("filling the floor's denial-storm key: %v %v", ok, err))
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
		name: db, version: version, keys: cfg.keys, roundTrips: rt.Load, close: cleanup,
		approaches: []*approach{
			mk(redisSluiceName, kindRedis, consume, counter),
			mk(redisRateName, kindRedisRate, allow, nil),
			gcra,
			sliding,
			mk(redisUluleName, kindRedisUlule, ululeTake, nil),
			mk(redisFloorName, kindRedisFloor, floor, nil),
			mk(redisAloneName, kindRedisAlone, consumeAlone, nil),
		},
	}, nil
}
