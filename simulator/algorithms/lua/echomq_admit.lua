--[[
echomq_admit: first-hit anchored fixed window, as EchoMQ budgets a queue.

The window starts at the first admitted hit and IS the counter's time to live: the counter is
armed with PEXPIRE(window) on its first increment and never re-armed, so the budget comes back
only when the server expires the key. Refused hits are not counted; an admitted one counts its cost.

KEYS[1]  counter    emq:{q}:limiter
KEYS[2]  meta hash  emq:{q}:meta (field max = the budget)
ARGV[1]  now_ms     current time, integer milliseconds (not used for the decision: the TTL is the clock)
ARGV[2]  max        budget per window; 0 = read it from the meta hash
ARGV[3]  window_ms  window length, integer milliseconds (> 0)
ARGV[4]  cost       what this job counts (>= 1; 1 when absent)

Returns {allowed 0|1, count, max, remaining, reset_ms, retry_after_ms}
  count           live counter compared with max (after the increment when admitted)
  reset_ms        PTTL of the counter (-1 if it has no expiry)
  retry_after_ms  the PTTL on a refusal, 0 when allowed; -1 (never) for a cost above max
Error when ARGV[2] is 0 and the meta hash has no max.
]]
local max = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4] or '1')
if max == 0 then
  max = tonumber(redis.call('HGET', KEYS[2], 'max'))
  if not max then
    return redis.error_reply('ERR echomq_admit: ' .. KEYS[2] .. ' has no max and the caller passed 0')
  end
else
  redis.call('HSETNX', KEYS[2], 'max', max)
end

local live = tonumber(redis.call('GET', KEYS[1]) or '0')
if live + cost > max then
  local ttl = redis.call('PTTL', KEYS[1])
  if cost > max then
    return {0, live, max, 0, ttl, -1}
  end
  return {0, live, max, 0, ttl, ttl}
end
local count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  redis.call('PEXPIRE', KEYS[1], window)
end
return {1, count, max, max - count, redis.call('PTTL', KEYS[1]), 0}
