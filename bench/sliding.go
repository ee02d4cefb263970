package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The sliding-window rows: the rate limiter in ratelimit.SlidingWindow
// mode (the weighted two-window counter), beside the fixed window on
// database/sql and on Redis.
const (
	kindSliding      kind = "limiter-sliding"
	kindRedisSliding kind = "redis-sluice-sliding"

	slidingSuffix          = " rate limiter, sliding window"
	redisSluiceSlidingName = "sluice Redis storage (rate limiter, sliding window)"
)

// slidingWindows returns the numbers of the current and previous windows.
func slidingWindows() (cur, prev int64) {
	i := time.Now().UnixMilli() / window.Milliseconds()
	return i, i - 1
}

// addSliding adds the sliding-window limiter on database/sql (one adapter
// shows it: the algorithm is above the adapter). Its rows are one per key
// and window, named key#window, so the fixed window's seeded rows do not
// apply: the denial-storm key is filled first, and the stored-count checks
// read the burst key's two windows.
func (e *sqlEnv) addSliding(ctx context.Context, b *backend, orms []orm) error {
	for _, o := range orms {
		if o.name != "sql" {
			continue
		}
		lim, err := ratelimit.New(ratelimit.Database(o.db), ratelimit.WithMode(ratelimit.SlidingWindow))
		if err != nil {
			return err
		}
		decide := func(ctx context.Context, key string, max int64) (bool, error) {
			d, err := lim.Consume(ctx, key, ratelimit.Rule{Window: window, Max: max})
			return d.Allowed, err
		}
		a := e.rawApproach(o.name+slidingSuffix, kindSliding, o.name+"-sliding", decide)
		a.stored = nil
		for range denyMax {
			if ok, err := decide(ctx, "deny", denyMax); err != nil || !ok {
				return fmt.Errorf("filling the sliding-window denial-storm key: %v %v", ok, err)
			}
		}
		a.burst = func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			key := fmt.Sprintf("burst-%s-sliding-%d", o.name, e.burstSeq.Add(1))
			stored := func(ctx context.Context) (int64, error) {
				var sum int64
				cur, prev := slidingWindows()
				for _, i := range []int64{prev, cur} {
					c, err := e.counterOf(ctx, key+ratelimit.SlidingSeparator+strconv.FormatInt(i, 10))
					if err != nil && !errors.Is(err, sql.ErrNoRows) {
						return 0, err
					}
					sum += c
				}
				return sum, nil
			}
			return func(ctx context.Context, _ int) (bool, error) { return decide(ctx, key, burstMax) }, stored, nil
		}
		b.approaches = append(b.approaches, a)
	}
	return nil
}

// redisSliding is the Redis storage's rate limiter in SlidingWindow mode:
// a GET of the previous window's counter, then the bounded increment of
// the current one.
func redisSliding(ctx context.Context, st *sluiceredis.Storage, keyOf func(scenario) (func(int) string, int64)) (*approach, error) {
	lim, err := ratelimit.New(ratelimit.Secondary(st), ratelimit.WithMode(ratelimit.SlidingWindow))
	if err != nil {
		return nil, err
	}
	consume := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := lim.Consume(ctx, "sliding:"+key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
	for range denyMax {
		if ok, err := consume(ctx, "deny", denyMax); err != nil || !ok {
			return nil, fmt.Errorf("filling the sliding-window denial-storm key: %v %v", ok, err)
		}
	}
	var seq atomic.Int64
	return &approach{
		name: redisSluiceSlidingName, kind: kindRedisSliding,
		decider: func(sc scenario) decideFunc {
			keyFor, max := keyOf(sc)
			return func(ctx context.Context, i int) (bool, error) { return consume(ctx, keyFor(i), max) }
		},
		burst: func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			key := fmt.Sprintf("burst-%d", seq.Add(1))
			read := func(ctx context.Context) (int64, error) {
				var sum int64
				cur, prev := slidingWindows()
				for _, i := range []int64{prev, cur} {
					v, ok, err := st.Get(ctx, ratelimit.SecondaryPrefix+"sliding:"+key+ratelimit.SlidingSeparator+strconv.FormatInt(i, 10))
					if err != nil {
						return 0, err
					}
					if ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							return 0, err
						}
						sum += n
					}
				}
				return sum, nil
			}
			return func(ctx context.Context, _ int) (bool, error) { return consume(ctx, key, burstMax) }, read, nil
		},
	}, nil
}
