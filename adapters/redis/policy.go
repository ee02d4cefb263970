package sluiceredis

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
)

//go:embed lua/policy.lua
var policyLua string

// policyScript touches every key of a policy; on Redis Cluster they must
// share a slot, which the rate limiter's keys of one policy do through
// their {key} hash tag.
var policyScript = redis.NewScript(policyLua)

// ApplyPolicy applies the steps of a rate-limit policy in one Lua script,
// all or none (see driver.PolicyApplier): one round trip for every rule.
// The keys must share a hash slot on a Cluster or a Ring, as the rate
// limiter's do. By, Max and Now must be within ±2^51 (the script computes
// in doubles); a bounded increment's TTL a positive whole number of
// milliseconds.
func (s *Storage) ApplyPolicy(ctx context.Context, steps []driver.PolicyStep) (bool, error) {
	driver.AddRoundTrips(ctx, 1)
	keys := make([]string, len(steps))
	args := make([]any, 0, 6*len(steps))
	for i, st := range steps {
		for _, a := range []struct {
			name string
			v    int64
		}{{"by", st.By}, {"max", st.Max}, {"now", st.Now}} {
			if err := checkCalc(a.name, a.v); err != nil {
				return false, fmt.Errorf("sluiceredis: apply policy: step %d: %w", i, err)
			}
		}
		if !st.TAT && (st.TTL <= 0 || st.TTL%time.Millisecond != 0) {
			return false, fmt.Errorf("sluiceredis: apply policy: %w: step %d: ttl %v is not a positive whole number of milliseconds", core.ErrInvalid, i, st.TTL)
		}
		keys[i] = s.prefix + st.Key
		args = append(args, flag(st.TAT), st.By, st.Max, st.TTL.Milliseconds(), st.Now, flag(st.Optional))
	}
	res, err := policyScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return false, fmt.Errorf("sluiceredis: apply policy: %w", err)
	}
	if len(res) != 3*len(steps)+1 {
		return false, fmt.Errorf("sluiceredis: apply policy: the script answered %d values, not %d", len(res), 3*len(steps)+1)
	}
	for i := range steps {
		st := &steps[i]
		st.Value, st.Fits, st.TTLLeft = res[3*i], res[3*i+2] == 1, 0
		if ttl := res[3*i+1]; ttl > 0 {
			st.TTLLeft = time.Duration(ttl) * time.Millisecond
		}
	}
	return res[len(res)-1] == 1, nil
}

// flag is a boolean as the script reads it.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

var _ driver.PolicyApplier = (*Storage)(nil)
