-- claim: apikey.ApplyClaim on the record at KEYS[1], as one atomic step.
-- ARGV: now (epoch ms), cost. Returns {0} when no record is stored, else
-- {1, code, tryAgainIn, record}: code '' when allowed, record the JSON
-- after the claim. A denial or a cost of 0 writes nothing; an allowed
-- claim rewrites the record keeping its expiry.
local raw = redis.call('GET', KEYS[1])
if not raw then return {0} end
local rec, err = decode(raw)
if not rec then return fail(err) end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local need = math.max(cost, 1)
local function deny(code, wait) return {1, code, wait, raw} end

if field(rec, 'enabled') ~= true then return deny('KEY_DISABLED', 0) end
local expires = field(rec, 'expiresAt')
if expires and expires <= now then return deny('KEY_EXPIRED', 0) end
local remaining = field(rec, 'remaining')
local interval, amount = field(rec, 'refillInterval'), field(rec, 'refillAmount')
local refillable = interval ~= nil and interval > 0 and amount ~= nil and amount > 0
if remaining and remaining < need and not refillable then return deny('USAGE_EXCEEDED', 0) end

local reset, increment = false, false
local window, max = field(rec, 'rateLimitTimeWindow'), field(rec, 'rateLimitMax')
local count = field(rec, 'requestCount') or 0
if field(rec, 'rateLimitEnabled') == true and window and window > 0 and max then
  local last = field(rec, 'lastRequest')
  if last == nil or last <= now - window then
    if need > max then return deny('RATE_LIMITED', window) end
    reset = true
  elseif count > max - need then
    return deny('RATE_LIMITED', last + window - now)
  else
    increment = true
  end
end

local refill, decrement = false, false
if remaining then
  local due, wait = false, 0
  if refillable then
    local last = field(rec, 'lastRefillAt') or field(rec, 'createdAt') or 0
    if last <= now - interval then due = true else wait = last + interval - now end
  end
  if due and amount < need then
    return deny('USAGE_EXCEEDED', 0)
  elseif due then
    refill = true
  elseif remaining < need then
    return deny('USAGE_EXCEEDED', wait)
  else
    decrement = true
  end
end

if cost <= 0 then return {1, '', 0, raw} end
if reset then rec.requestCount, rec.lastRequest = cost, now end
if increment then rec.requestCount = count + cost end
if refill then rec.remaining, rec.lastRefillAt = amount - cost, now end
if decrement then rec.remaining = remaining - cost end
rec.updatedAt = now
local out, eerr = encode(rec)
if not out then return fail(eerr) end
redis.call('SET', KEYS[1], out, 'KEEPTTL')
return {1, '', 0, out}
