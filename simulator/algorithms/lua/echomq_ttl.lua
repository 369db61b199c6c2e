--[[
echomq_ttl: get_rate_limit_ttl(q, max), the read a worker makes at the dequeue point.

A positive answer is how long to defer the job; 0 means go ahead.

KEYS[1]  counter    emq:{q}:limiter
KEYS[2]  meta hash  emq:{q}:meta
ARGV[1]  now_ms     current time, integer milliseconds (unused: the counter's TTL is the clock)
ARGV[2]  max        budget; 0 = read it from the meta hash

Returns an integer: the counter's remaining PTTL in ms when it has reached max and the window has
time left, else 0. With max 0 and no max in the meta hash there is no budget, so the answer is 0.
]]
local max = tonumber(ARGV[2])
if max == 0 then
  max = tonumber(redis.call('HGET', KEYS[2], 'max'))
  if not max then
    return 0
  end
end
local live = tonumber(redis.call('GET', KEYS[1]) or '0')
if live >= max then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    return ttl
  end
end
return 0
