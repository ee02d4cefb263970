-- policy: driver.PolicyApplier.ApplyPolicy, every step in one atomic step.
-- KEYS: the steps' keys. ARGV, six per step: tat (1: a TAT advance, 0: a
-- bounded increment), by, max, ttl in ms, now, optional (1 or 0).
-- A bounded increment fits when value + by <= max; a TAT advance when
-- max(tat, now) + by - now <= max. When every step that is not optional
-- fits, each step that fits is applied; otherwise nothing changes.
-- Returns, per step, the value before the call (0 when absent), its PTTL
-- and 1 or 0 for fits; then 1 or 0 for applied.
local n = #KEYS
local out, vals, fits = {}, {}, {}
local ok = 1
for i = 1, n do
  local b = (i - 1) * 6
  local tat, by, max, now = ARGV[b + 1] == '1', tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 5])
  local v = 0
  local raw = redis.call('GET', KEYS[i])
  if raw then
    v = tonumber(raw)
    if not v then return redis.error_reply('the value at ' .. KEYS[i] .. ' is not an integer') end
  end
  local f
  if tat then
    f = math.max(v, now) + by - now <= max
  else
    f = v + by <= max
  end
  vals[i], fits[i] = v, f
  if not f and ARGV[b + 6] ~= '1' then ok = 0 end
  out[#out + 1] = v
  out[#out + 1] = redis.call('PTTL', KEYS[i])
  out[#out + 1] = f and 1 or 0
end
if ok == 1 then
  for i = 1, n do
    if fits[i] then
      local b = (i - 1) * 6
      local by, ttl, now = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
      if ARGV[b + 1] == '1' then
        if by > 0 then
          local t = math.max(vals[i], now) + by
          redis.call('SET', KEYS[i], t, 'PX', t - now)
        end
      elseif by ~= 0 then
        redis.call('INCRBY', KEYS[i], by)
        if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ttl) end
      end
    end
  end
end
out[#out + 1] = ok
return out
