-- patch: set fields of the record at KEYS[1], as one atomic step. ARGV
-- holds triples: field name, kind ('i' integer, 'b' boolean as '1' or '0',
-- 's' string, 'n' null) and value. Returns {0} when no record is stored,
-- else {1, record after}. The record keeps its expiry.
local raw = redis.call('GET', KEYS[1])
if not raw then return {0} end
local rec, err = decode(raw)
if not rec then return fail(err) end
for i = 1, #ARGV, 3 do
  local name, kind, v = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if kind == 'i' then
    rec[name] = tonumber(v)
  elseif kind == 'b' then
    rec[name] = v == '1'
  elseif kind == 's' then
    rec[name] = v
  else
    rec[name] = null
  end
end
local out, eerr = encode(rec)
if not out then return fail(eerr) end
redis.call('SET', KEYS[1], out, 'KEEPTTL')
return {1, out}
