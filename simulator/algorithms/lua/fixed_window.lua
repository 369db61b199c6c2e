--[[
fixed_window: clock-aligned fixed window counter (the interview card's version).

The window is the grid cell floor(now_ms / window_ms); its index is part of the key, so every
client's windows start at the same instants. Every hit is counted (its cost), refused ones
included, and the key expires one window after its first hit (only the first hit sets the expiry).
A request that costs more than the limit is refused uncounted: it could never be admitted.

KEYS[1]  counter for this client and grid window, e.g. rl:fw:{alice}:28000000
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed per window (>= 1)
ARGV[4]  cost       what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}
  count           the counter after this hit (what was compared with the limit)
  remaining       what a request of cost 1 could still take in this window
  reset_ms        milliseconds until this grid window ends
  retry_after_ms  same as reset_ms on a refusal, 0 when allowed; -1 (never) for a cost > limit
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4] or '1')
local reset = window - (now % window)

if cost > limit then
  local count = tonumber(redis.call('GET', KEYS[1]) or '0')
  local left = limit - count
  if left < 0 then left = 0 end
  return {0, count, limit, left, reset, -1}
end
local count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  redis.call('PEXPIRE', KEYS[1], window)
end
if count <= limit then
  return {1, count, limit, limit - count, reset, 0}
end
return {0, count, limit, 0, reset, reset}
