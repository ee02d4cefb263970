-- slot_acquire: concurrency.Store.AcquireSlot on the hash at KEYS[1], one
-- atomic step. ARGV: n, now, expires (epoch ms of the caller's clock),
-- seed. Field "<i>" is slot i as "<lease end>:<generation>"; field "g" is
-- the key's generation counter, started at seed when the hash is new, so
-- that a hash expired and made again does not repeat generations. The
-- first slot of 0 to n-1 whose lease ended at or before now is leased
-- until expires with the next generation, and {1, slot, generation,
-- expires} is returned; the hash expires when its last lease ends
-- (counted by Redis from the call). With every slot leased, nothing
-- changes and {0, -1, 0, earliest lease end} is returned.
local n, now, expires = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local earliest = -1
for i = 0, n - 1 do
  local raw = redis.call('HGET', KEYS[1], i)
  local e = 0
  if raw then
    e = tonumber(string.match(raw, '^(%d+):%d+$'))
    if not e then return redis.error_reply('slot ' .. i .. ' of ' .. KEYS[1] .. ' is not a lease') end
  end
  if e <= now then
    redis.call('HSETNX', KEYS[1], 'g', ARGV[4])
    local gen = redis.call('HINCRBY', KEYS[1], 'g', 1)
    redis.call('HSET', KEYS[1], i, ARGV[3] .. ':' .. string.format('%d', gen))
    if redis.call('PTTL', KEYS[1]) < expires - now then
      redis.call('PEXPIRE', KEYS[1], string.format('%d', expires - now))
    end
    return {1, i, gen, expires}
  end
  if earliest < 0 or e < earliest then earliest = e end
end
return {0, -1, 0, earliest}
