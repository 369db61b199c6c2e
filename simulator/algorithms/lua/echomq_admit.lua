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
  remaining       what a request of cost 1 could still take now: max - count (refusals take nothing)
  reset_ms        ms until the budget is whole again: the counter's PTTL + 1, since a key lives
                  through the millisecond of its expiry and is gone only after it; 0 when there is
                  no counter (nothing spent); -1 if the counter has no expiry
  retry_after_ms  reset_ms on a refusal, 0 when allowed; -1 (never) for a cost above max
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

-- PTTL is -2 for a missing key (nothing spent: whole now) and -1 for one without expiry
local function reset_of(ttl)
  if ttl == -2 then return 0 end
  if ttl < 0 then return ttl end
  return ttl + 1
end

local live = tonumber(redis.call('GET', KEYS[1]) or '0')
if live + cost > max then
  local reset = reset_of(redis.call('PTTL', KEYS[1]))
  local left = max - live
  if left < 0 then left = 0 end
  if cost > max then
    return {0, live, max, left, reset, -1}
  end
  return {0, live, max, left, reset, reset}
end
local count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  redis.call('PEXPIRE', KEYS[1], window)
end
return {1, count, max, max - count, reset_of(redis.call('PTTL', KEYS[1])), 0}
