--[[
sliding_log: exact sliding window over a sorted set of admitted request times.

The window is (now - window_ms, now]: entries with a score <= now - window_ms are dropped first.
Only admitted requests are logged; each member is unique per request so that two requests in the
same millisecond both count.

KEYS[1]  log of admitted requests, e.g. rl:sl:{alice}
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed in any window (>= 1)
ARGV[4]  member     unique id of this request

Returns {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}
  count           requests in the window before this one (what was compared with the limit)
  reset_ms        ms until the oldest logged request leaves the window (one unit comes back)
  retry_after_ms  the same on a refusal, 0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
  return {1, count, limit, limit - count - 1, oldest + window - now, 0}
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
local retry = oldest + window - now
return {0, count, limit, 0, retry, retry}
