-- gcra: core.TATAdvancer.AdvanceTAT on the theoretical arrival time (epoch
-- ms) at KEYS[1], as one atomic step. ARGV: now, increment, limit.
-- t = max(stored, now); when t + increment - now <= limit the key becomes
-- t + increment, expiring when that time is reached, and t + increment is
-- returned; otherwise nothing changes and -t-1 is returned (one integer
-- either way, t never being negative, so that the client reads the reply
-- without an allocation). An increment of 0 writes nothing.
local now, inc, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = now
local raw = redis.call('GET', KEYS[1])
if raw then
  local v = tonumber(raw)
  if not v then return redis.error_reply('the value at ' .. KEYS[1] .. ' is not a time in milliseconds') end
  if v > tat then tat = v end
end
if tat + inc - now > limit then return -tat - 1 end
if inc > 0 then
  tat = tat + inc
  -- Numbers go as they are: Redis writes an integral double below 2^53
  -- with no exponent, and the inputs are below 2^51.
  redis.call('SET', KEYS[1], tat, 'PX', tat - now)
end
return tat
