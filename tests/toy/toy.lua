--[[
toy: a fixed window on the clock grid that counts admitted requests only (the algorithm the
extension test adds exactly as CONTRIBUTING.md says; it ships with the tests, not the package).

The window is the grid cell floor(now_ms / window_ms), part of the key. Unlike fixed_window, a
refused request leaves the counter as it was, so a client that keeps knocking is not punished for
it. A request that costs more than the limit is refused: it could never be admitted.

KEYS[1]  admitted cost in this client's grid window, e.g. rl:toy:{alice}:28000000
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed per window (>= 1)
ARGV[4]  cost       what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}
  count           the admitted cost in this window, this request included if admitted
  remaining       what a request of cost 1 could still take in this window
  reset_ms        milliseconds until this grid window ends
  retry_after_ms  0 when allowed, reset_ms on a refusal, -1 (never) for a cost > limit
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4] or '1')
local reset = window - (now % window)
local count = tonumber(redis.call('GET', KEYS[1]) or '0')

if cost > limit then
  return {0, count, limit, limit - count, reset, -1}
end
if count + cost > limit then
  return {0, count, limit, limit - count, reset, reset}
end
count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  redis.call('PEXPIRE', KEYS[1], window)
end
return {1, count, limit, limit - count, reset, 0}
