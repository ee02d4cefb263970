-- claim: apikey.ApplyClaim on the record at KEYS[1], and on the record of
-- its owner's limits at KEYS[2] when given, as one atomic step.
-- ARGV: now (epoch ms), cost, the hash presented ('' for none), then the
-- count of RequireAll and of RequireAny permissions, then each as a
-- resource and an action, then the count of named limits spent, then each
-- as a name and a cost. Returns {0} when no record is stored, or when the
-- hash presented does not open it (rule 0), else {1, code, tryAgainIn,
-- record} (and, when a named limit denied, its name and 1 when it is the
-- owner's, else 0, as a fifth and sixth element): code '' when allowed,
-- record the JSON after the claim. A denial or a cost of 0 writes nothing;
-- an allowed claim rewrites the record (and the owner's, when its counters
-- changed) keeping its expiry.
local raw = redis.call('GET', KEYS[1])
if not raw then return {0} end
local rec, err = decode(raw)
if not rec then return fail(err) end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local need = math.max(cost, 1)
local function deny(code, wait) return {1, code, wait, raw} end

-- Rule 0: the hash presented is the key's, or an earlier one whose grace
-- ends after now, as the rerolled JSON text (hash -> epoch ms) says, read
-- as Go reads it into map[string]int64: null counts as 0, and any other
-- value that is not an integer makes the whole text hold nothing.
local hash = ARGV[3]
if hash ~= '' and field(rec, 'key') ~= hash then
  local ends = {}
  local text = field(rec, 'rerolled')
  if text and text ~= '' then
    local ok, m = pcall(cjson.decode, text)
    if ok and type(m) == 'table' and string.match(text, '^%s*{') then
      for h, e in pairs(m) do
        if e == null then e = 0 end
        if type(h) ~= 'string' or type(e) ~= 'number' or e ~= math.floor(e) then ends = {} break end
        ends[h] = e
      end
    end
  end
  local e = ends[hash]
  if not e or e <= now then return {0} end
end

if field(rec, 'enabled') ~= true then return deny('KEY_DISABLED', 0) end
local expires = field(rec, 'expiresAt')
if expires and expires <= now then return deny('KEY_EXPIRED', 0) end

-- Rule 3, the permissions: the stored JSON text of resource -> actions,
-- read as Go's json.Unmarshal into map[string][]string reads it (a null
-- action is the empty one, which no request can require; anything else
-- malformed holds no permission).
local nAll, nAny = tonumber(ARGV[4]) or 0, tonumber(ARGV[5]) or 0
if nAll + nAny > 0 then
  local held, good = {}, false
  local perms = field(rec, 'permissions')
  if perms and perms ~= '' then
    local ok, p = pcall(cjson.decode, perms)
    good = ok and type(p) == 'table'
    if good then
      for res, acts in pairs(p) do
        if type(res) ~= 'string' or (acts ~= null and type(acts) ~= 'table') then good = false break end
        if acts ~= null then
          local n = 0
          for i, a in pairs(acts) do
            if type(i) ~= 'number' or (a ~= null and type(a) ~= 'string') then good = false break end
            n = n + 1
          end
          if not good or n ~= #acts then good = false break end
          local set = {}
          for _, a in ipairs(acts) do
            if a ~= null then set[a] = true end
          end
          held[res] = set
        end
      end
    end
  end
  if not good then held = {} end
  local function has(i)
    local set = held[ARGV[i]]
    return set ~= nil and set[ARGV[i + 1]] == true
  end
  for i = 6, 5 + 2 * nAll, 2 do
    if not has(i) then return deny('INSUFFICIENT_PERMISSIONS', 0) end
  end
  if nAny > 0 then
    local any = false
    for i = 6 + 2 * nAll, 5 + 2 * (nAll + nAny), 2 do
      if has(i) then any = true break end
    end
    if not any then return deny('INSUFFICIENT_PERMISSIONS', 0) end
  end
end
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

-- Rule 5b, the named limits: limits is JSON text of name -> {max, window}
-- and limitCounts of name -> {count, start}, read as Go's json.Unmarshal
-- reads them into maps of structs of int64 fields (null or absent fields
-- are 0; any other value that is not an integer makes the whole text hold
-- nothing).
local function entries(text, fields)
  local out = {}
  if not text or text == '' or not string.match(text, '^%s*{') then return out end
  local ok, m = pcall(cjson.decode, text)
  if not ok or type(m) ~= 'table' then return out end
  for name, e in pairs(m) do
    if type(name) ~= 'string' then return {} end
    local v = {}
    if e ~= null then
      if type(e) ~= 'table' then return {} end
      for _, f in ipairs(fields) do
        local x = e[f]
        if x == nil or x == null then x = 0 end
        if type(x) ~= 'number' or x ~= math.floor(x) then return {} end
        v[f] = x
      end
    else
      for _, f in ipairs(fields) do v[f] = 0 end
    end
    out[name] = v
  end
  return out
end
local base = 6 + 2 * (nAll + nAny)
local nLimits = tonumber(ARGV[base]) or 0
-- sides: the key's limits, then its owner's, each with what the claim
-- opens and adds there.
local sides = {}
if nLimits > 0 then
  sides[1] = {rec = rec, owner = 0}
  if KEYS[2] then
    local oraw = redis.call('GET', KEYS[2])
    if oraw then
      local orec, oerr = decode(oraw)
      if not orec then
        return redis.error_reply('sluiceredis: owner limits ' .. KEYS[2] .. ' ' .. oerr)
      end
      sides[2] = {rec = orec, owner = 1, key = KEYS[2]}
    end
  end
  for _, side in ipairs(sides) do
    local cfg = entries(field(side.rec, 'limits'), {'max', 'window'})
    -- The counters as Go would write them back: those read, when well
    -- formed, and the changed ones.
    side.counts, side.opened, side.spent = entries(field(side.rec, 'limitCounts'), {'count', 'start'}), {}, {}
    for i = 1, nLimits do
      local name, c = ARGV[base + 2 * i - 1], tonumber(ARGV[base + 2 * i])
      local l = cfg[name]
      if l then
        local n = side.counts[name] or {count = 0, start = 0}
        local lneed = math.max(c, 1)
        if n.start == 0 or n.start <= now - l.window then
          if lneed > l.max then return {1, 'RATE_LIMITED', l.window, raw, name, side.owner} end
          side.opened[#side.opened + 1] = {name, c}
        elseif n.count > l.max - lneed then
          return {1, 'RATE_LIMITED', n.start + l.window - now, raw, name, side.owner}
        else
          side.spent[#side.spent + 1] = {name, c}
        end
      end
    end
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
-- The named limits' counters: changed ones are written back, the key's
-- with the record below, the owner's to its own record, once everything
-- is encoded (a script's writes are not undone when it fails later).
local ownerOut
for _, side in ipairs(sides) do
  local counts, changed = side.counts, false
  for _, o in ipairs(side.opened) do
    if o[2] > 0 then counts[o[1]], changed = {count = o[2], start = now}, true end
  end
  for _, sp in ipairs(side.spent) do
    if sp[2] > 0 then
      local n = counts[sp[1]] or {count = 0, start = 0}
      n.count = n.count + sp[2]
      counts[sp[1]], changed = n, true
    end
  end
  if changed then
    local text, terr = encode(counts)
    if not text then return fail(terr) end
    side.rec.limitCounts = text
    if side.key then
      local oerr
      ownerOut, oerr = encode(side.rec)
      if not ownerOut then return fail(oerr) end
    end
  end
end
rec.updatedAt = now
local out, eerr = encode(rec)
if not out then return fail(eerr) end
redis.call('SET', KEYS[1], out, 'KEEPTTL')
if ownerOut then redis.call('SET', KEYS[2], ownerOut, 'KEEPTTL') end
return {1, '', 0, out}
