package sluiceredis

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// leaseClaimScript is boundedScript that also answers the counter's tag: its
// absolute expiry in milliseconds (PEXPIRETIME), which the counter's
// creation fixes and which is never extended, so two counters created at
// one key one after the other have different tags. A counter without
// expiry answers -1, and a server without PEXPIRETIME (before Redis 7) 0:
// no tag a return could name.
var leaseClaimScript = newScript(`
local by = tonumber(ARGV[1])
local v = redis.call('INCRBY', KEYS[1], by)
local ttl = redis.call('PTTL', KEYS[1])
local function tag()
  local e = redis.pcall('PEXPIRETIME', KEYS[1])
  if type(e) == 'number' then return e end
  return 0
end
if v > tonumber(ARGV[2]) then
  if ttl < 0 and v == by then
    redis.call('DEL', KEYS[1])
    return {0, -2, 0, 0}
  end
  redis.call('DECRBY', KEYS[1], by)
  return {v - by, ttl, 0, tag()}
end
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  ttl = tonumber(ARGV[3]) * 1000
end
return {v, ttl, 1, tag()}
`)

// leaseReturnScript subtracts ARGV[1] from the counter when its tag is still
// ARGV[2] and it holds at least ARGV[1]; it answers 1 when it did.
var leaseReturnScript = newScript(`
local n = tonumber(ARGV[1])
if redis.call('PEXPIRETIME', KEYS[1]) ~= tonumber(ARGV[2]) then return {0} end
local v = tonumber(redis.call('GET', KEYS[1]))
if not v or v < n then return {0} end
redis.call('DECRBY', KEYS[1], n)
return {1}
`)

// ClaimBounded is IncrementBounded that also returns the counter's tag,
// its absolute expiry in milliseconds (see driver.LeaseReturner); 0 or
// less when it has none, or the server (before Redis 7) cannot say.
func (s *Storage) ClaimBounded(ctx context.Context, key string, by, max int64, ttl time.Duration) (driver.Counter, bool, int64, error) {
	driver.AddRoundTrips(ctx, 1)
	if err := checkTTL(ttl); err != nil {
		return driver.Counter{}, false, 0, err
	}
	if err := checkCalc("by", by); err != nil {
		return driver.Counter{}, false, 0, err
	}
	if err := checkCalc("max", max); err != nil {
		return driver.Counter{}, false, 0, err
	}
	res, err := s.evalInts(ctx, leaseClaimScript, s.prefix+key, by, max, int64(ttl/time.Second))
	if err != nil {
		return driver.Counter{}, false, 0, fmt.Errorf("sluiceredis: claim: %w", err)
	}
	if len(res) != 4 {
		return driver.Counter{}, false, 0, fmt.Errorf("sluiceredis: claim: the script answered %d values, not 4", len(res))
	}
	c := driver.Counter{Value: res[0]}
	if res[1] > 0 {
		c.TTL = time.Duration(res[1]) * time.Millisecond
	}
	return c, res[2] == 1, res[3], nil
}

// ReturnClaimed subtracts n from the counter at key when it still has tag
// (its absolute expiry, as ClaimBounded returned it) and holds at least n,
// in one script: units a lease did not spend go back to the counter they
// were claimed from, never to one created since.
func (s *Storage) ReturnClaimed(ctx context.Context, key string, n, tag int64) (bool, error) {
	driver.AddRoundTrips(ctx, 1)
	if err := checkCalc("n", n); err != nil {
		return false, err
	}
	if n <= 0 || tag <= 0 {
		return false, nil
	}
	res, err := s.evalInts(ctx, leaseReturnScript, s.prefix+key, n, tag)
	if err != nil {
		return false, fmt.Errorf("sluiceredis: return claimed: %w", err)
	}
	if len(res) != 1 {
		return false, fmt.Errorf("sluiceredis: return claimed: the script answered %d values, not 1", len(res))
	}
	return res[0] == 1, nil
}

var _ driver.LeaseReturner = (*Storage)(nil)
