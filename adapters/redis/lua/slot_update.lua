-- slot_update: concurrency.Store.ReleaseSlot (ARGV[4] = 0) and RenewSlot on
-- the hash at KEYS[1], one atomic step. ARGV: slot, generation, now,
-- expires. When the slot has that generation and its lease ends after
-- now, its lease end becomes expires (0: free), the hash lives at least
-- until then, and 1 is returned; otherwise nothing changes and 0 is
-- returned.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local e, g = string.match(raw, '^(%d+):(%d+)$')
if not e then return redis.error_reply('slot ' .. ARGV[1] .. ' of ' .. KEYS[1] .. ' is not a lease') end
local now, expires = tonumber(ARGV[3]), tonumber(ARGV[4])
if g ~= ARGV[2] or tonumber(e) <= now then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4] .. ':' .. g)
if expires > now and redis.call('PTTL', KEYS[1]) < expires - now then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', expires - now))
end
return 1
