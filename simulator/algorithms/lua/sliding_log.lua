--[[
sliding_log: exact sliding window over a sorted set of admitted request times.

The window is (now - window_ms, now]: entries with a score <= now - window_ms are dropped first.
Only admitted requests are logged, ``cost`` members each; each member is unique per request so
that two requests in the same millisecond both count. A request costing more than the limit is
refused: it could never fit.

KEYS[1]  log of admitted requests, e.g. rl:sl:{alice}
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed in any window (>= 1)
ARGV[4]  member     unique id of this request (a request of cost c logs member#1 .. member#c)
ARGV[5]  cost       what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}
  count           requests in the window before this one (what was compared with the limit)
  remaining       what requests of cost 1 could still take now (a refusal logs nothing)
  reset_ms        ms until the oldest logged request leaves the window (one unit comes back)
  retry_after_ms  on a refusal, ms until enough entries have left for this cost (-1: never,
                  the cost exceeds the limit); 0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[5] or '1')

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count + cost <= limit then
  if cost == 1 then
    redis.call('ZADD', KEYS[1], now, ARGV[4])
  else
    for k = 1, cost do
      redis.call('ZADD', KEYS[1], now, ARGV[4] .. '#' .. k)
    end
  end
  redis.call('PEXPIRE', KEYS[1], window)
  local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
  return {1, count, limit, limit - count - cost, oldest + window - now, 0}
end
local reset = 0
if count > 0 then
  reset = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]) + window - now
end
local left = limit - count
if left < 0 then left = 0 end
if cost > limit then
  return {0, count, limit, left, reset, -1}
end
-- the entry whose leaving makes room for this cost: the (count + cost - limit)-th oldest
local nth = tonumber(redis.call('ZRANGE', KEYS[1], count + cost - limit - 1, count + cost - limit - 1, 'WITHSCORES')[2])
return {0, count, limit, left, reset, nth + window - now}
