package main

import (
	"context"
	"fmt"
	"sync/atomic"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// The GCRA rows: the rate limiter in ratelimit.GCRA mode, beside the fixed
// window on database/sql, and on Redis beside redis_rate, which computes
// the same algorithm.
const (
	kindGCRA      kind = "limiter-gcra"
	kindRedisGCRA kind = "redis-sluice-gcra"

	gcraSuffix          = " rate limiter, GCRA"
	redisSluiceGCRAName = "sluice Redis storage (rate limiter, GCRA)"
)

// addGCRA adds the GCRA limiter on database/sql (one adapter shows it:
// the algorithm is above the adapter).
func (e *sqlEnv) addGCRA(ctx context.Context, b *backend, orms []orm) error {
	for _, o := range orms {
		if o.name == "sql" {
			a, err := e.gcraLimiter(ctx, o)
			if err != nil {
				return err
			}
			b.approaches = append(b.approaches, a)
		}
	}
	return nil
}

// gcraLimiter is the database rate limiter in GCRA mode on o. Its rows
// hold a theoretical arrival time in lastRequest, not a window start, so
// its keys are its own ("gcra:" + key), the denial-storm key is filled by
// the limiter itself, and the stored-count checks do not apply; the burst
// check still counts admissions.
func (e *sqlEnv) gcraLimiter(ctx context.Context, o orm) (*approach, error) {
	lim, err := ratelimit.New(ratelimit.Database(o.db), ratelimit.WithMode(ratelimit.GCRA))
	if err != nil {
		return nil, err
	}
	decide := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := lim.Consume(ctx, "gcra:"+key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
	for range denyMax {
		if ok, err := decide(ctx, "deny", denyMax); err != nil || !ok {
			return nil, fmt.Errorf("filling the GCRA denial-storm key: %v %v", ok, err)
		}
	}
	a := e.rawApproach(o.name+gcraSuffix, kindGCRA, o.name+"-gcra", decide)
	a.stored = nil
	a.burst = func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
		key := fmt.Sprintf("burst-%s-gcra-%d", o.name, e.burstSeq.Add(1))
		return func(ctx context.Context, _ int) (bool, error) { return decide(ctx, key, burstMax) }, nil, nil
	}
	return a, nil
}

// redisGCRA is the Redis storage's rate limiter in GCRA mode: one Lua
// script (GET, SET with expiry) per decision, as redis_rate's.
func redisGCRA(ctx context.Context, st *sluiceredis.Storage, keyOf func(scenario) (func(int) string, int64)) (*approach, error) {
	lim, err := ratelimit.New(ratelimit.Secondary(st), ratelimit.WithMode(ratelimit.GCRA))
	if err != nil {
		return nil, err
	}
	consume := func(ctx context.Context, key string, max int64) (bool, error) {
		d, err := lim.Consume(ctx, "gcra:"+key, ratelimit.Rule{Window: window, Max: max})
		return d.Allowed, err
	}
	for range denyMax {
		if ok, err := consume(ctx, "deny", denyMax); err != nil || !ok {
			return nil, fmt.Errorf("filling the GCRA denial-storm key: %v %v", ok, err)
		}
	}
	var seq atomic.Int64
	return &approach{
		name: redisSluiceGCRAName, kind: kindRedisGCRA,
		decider: func(sc scenario) decideFunc {
			keyFor, max := keyOf(sc)
			return func(ctx context.Context, i int) (bool, error) { return consume(ctx, keyFor(i), max) }
		},
		burst: func(ctx context.Context) (decideFunc, func(context.Context) (int64, error), error) {
			key := fmt.Sprintf("burst-%d", seq.Add(1))
			return func(ctx context.Context, _ int) (bool, error) { return consume(ctx, key, burstMax) }, nil, nil
		},
	}, nil
}
