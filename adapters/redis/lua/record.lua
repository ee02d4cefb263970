-- Shared by claim.lua and patch.lua: decoding and encoding the JSON record
-- of an apikey.StoredKey so that Go's encoding/json reads back exactly what
-- it would have read from a record Go wrote.
--
-- Lua numbers are doubles. The record's integers are checked on decoding:
-- id must be below 2^53 (exact as a double) and every other integer field
-- below 2^51 in magnitude, so that the sums and differences of three of them
-- the claim computes stay below 2^53 and are exact too. cjson.encode writes
-- numbers with 14 significant digits, which would corrupt ids and epoch
-- milliseconds; encode below writes integers in full instead.

local null = cjson.null
local EXACT, CALC = 9007199254740992, 2251799813685248 -- 2^53, 2^51

-- kinds: the Lua type of each StoredKey field when it is not null, and the
-- bound of the integer ones. Go's decoder accepts null for every field.
local kinds = {
  id = 'number', configId = 'string', name = 'string', start = 'string',
  prefix = 'string', key = 'string', referenceId = 'string', enabled = 'boolean',
  rateLimitEnabled = 'boolean', rateLimitTimeWindow = 'number', rateLimitMax = 'number',
  requestCount = 'number', remaining = 'number', refillInterval = 'number',
  refillAmount = 'number', lastRefillAt = 'number', lastRequest = 'number',
  expiresAt = 'number', createdAt = 'number', updatedAt = 'number',
  permissions = 'string', metadata = 'string', rerolled = 'string',
  limits = 'string', limitCounts = 'string',
}

-- decode returns the record as a table, or nil and what is wrong with it.
local function decode(raw)
  local first = string.match(raw, '^%s*(%S)')
  if first ~= '{' and first ~= 'n' then
    return nil, 'is not a JSON object'
  end
  local ok, rec = pcall(cjson.decode, raw)
  if not ok then
    return nil, 'is not valid JSON'
  end
  if rec == null then
    rec = {} -- Go decodes a JSON null into the zero StoredKey
  elseif type(rec) ~= 'table' then
    return nil, 'is not a JSON object'
  end
  for name, want in pairs(kinds) do
    local v = rec[name]
    if v ~= nil and v ~= null then
      if type(v) ~= want then
        return nil, 'field ' .. name .. ' is a ' .. type(v) .. ', not a ' .. want
      end
      if want == 'number' then
        local bound = CALC
        if name == 'id' then bound = EXACT end
        if v ~= math.floor(v) or v >= bound or v <= -bound then
          return nil, 'field ' .. name .. ' is not an integer within +-2^' .. (name == 'id' and '53' or '51')
        end
      end
    end
  end
  return rec
end

-- field returns a field's value, nil for null or absent.
local function field(rec, name)
  local v = rec[name]
  if v == null then return nil end
  return v
end

local encode_value

local function encode_table(t, out)
  local n, count = #t, 0
  for _ in pairs(t) do count = count + 1 end
  if n > 0 and n == count then
    out[#out + 1] = '['
    for i = 1, n do
      if i > 1 then out[#out + 1] = ',' end
      local ok, err = encode_value(t[i], out)
      if not ok then return nil, err end
    end
    out[#out + 1] = ']'
    return true
  end
  local names = {}
  for k in pairs(t) do
    if type(k) ~= 'string' then return nil, 'has a non-string object key' end
    names[#names + 1] = k
  end
  table.sort(names)
  out[#out + 1] = '{'
  for i, k in ipairs(names) do
    if i > 1 then out[#out + 1] = ',' end
    out[#out + 1] = cjson.encode(k)
    out[#out + 1] = ':'
    local ok, err = encode_value(t[k], out)
    if not ok then return nil, err end
  end
  out[#out + 1] = '}'
  return true
end

encode_value = function(v, out)
  if v == null then
    out[#out + 1] = 'null'
  elseif type(v) == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then
      return nil, 'holds a number JSON cannot represent'
    elseif v == math.floor(v) then
      if v >= EXACT or v <= -EXACT then
        return nil, 'holds an integer beyond 2^53 that cannot be rewritten exactly'
      end
      out[#out + 1] = string.format('%d', v)
    else
      -- The shortest form that reads back as the same double, as Go writes.
      local s
      for digits = 15, 17 do
        s = string.format('%.' .. digits .. 'g', v)
        if tonumber(s) == v then break end
      end
      out[#out + 1] = s
    end
  elseif type(v) == 'table' then
    return encode_table(v, out)
  else
    out[#out + 1] = cjson.encode(v)
  end
  return true
end

-- encode returns the JSON text of the record, or nil and what is wrong.
local function encode(rec)
  local out = {}
  local ok, err = encode_table(rec, out)
  if not ok then return nil, err end
  return table.concat(out)
end

local function fail(msg)
  return redis.error_reply('sluiceredis: stored key ' .. KEYS[1] .. ' ' .. msg)
end
