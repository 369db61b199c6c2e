--[[
spring: Spring Cloud Gateway's RedisRateLimiter, the token bucket of its request_rate_limiter.lua.

Two keys, as Spring writes them: the tokens left and the second they were counted at. Time is
whole seconds (Spring passes the epoch second, or reads the server's TIME, seconds only): the
bucket gains replenish_rate tokens per second boundary crossed since the last request, capped at
burst_capacity; a missing bucket is full. The request is admitted iff at least requested tokens
are there, and takes them; both keys are written for every request, admitted or not, with an
expiry of floor(2 x burst_capacity / replenish_rate) seconds, and not at all when that is 0 (a
bucket that refills in under half a second is then full at every request, as in Spring). A bucket
that has expired would have been full again by then: the expiry changes no decision.

KEYS[1]  the tokens,  e.g. request_rate_limiter.{alice}.tokens
KEYS[2]  the second they were counted at, e.g. request_rate_limiter.{alice}.timestamp
ARGV[1]  now_ms            current time, integer milliseconds (Spring counts its whole seconds)
ARGV[2]  replenish_rate    tokens added per second (a string, '%.17g')
ARGV[3]  burst_capacity    the most tokens the bucket holds
ARGV[4]  requested_tokens  tokens one request takes (Spring's requestedTokens)
ARGV[5]  cost              requests this one stands for (>= 1; 1 when absent): it takes
                           requested_tokens x cost

Returns {allowed 0|1, tokens, burst_capacity, remaining, reset_ms, retry_after_ms}
  tokens          the level before this request (after the refill), as a string ('%.17g')
  remaining       whole tokens left (Spring's X-RateLimit-Remaining)
  reset_ms        ms until the second boundary at which the bucket is full again
  retry_after_ms  on a refusal, ms until the second boundary at which enough tokens are there
                  (-1: never, more than burst_capacity); 0 when allowed
]]
local now_ms = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local requested = tonumber(ARGV[4]) * tonumber(ARGV[5] or '1')
local now = math.floor(now_ms / 1000)

local fill_time = capacity / rate
local ttl = math.floor(fill_time * 2)

local last_tokens = tonumber(redis.call('GET', KEYS[1]))
if last_tokens == nil then last_tokens = capacity end
local last_refreshed = tonumber(redis.call('GET', KEYS[2]))
if last_refreshed == nil then last_refreshed = 0 end

local delta = math.max(0, now - last_refreshed)
local filled = math.min(capacity, last_tokens + delta * rate)
local allowed = 0
local new_tokens = filled
if filled >= requested then
  new_tokens = filled - requested
  allowed = 1
end
if ttl > 0 then
  redis.call('SET', KEYS[1], string.format('%.17g', new_tokens), 'EX', ttl)
  redis.call('SET', KEYS[2], now, 'EX', ttl)
end

local function boundary_after(level, want)
  local seconds = math.ceil((want - level) / rate)
  if seconds <= 0 then return 0 end
  return (now + seconds) * 1000 - now_ms
end
local reset = boundary_after(new_tokens, capacity)
local level = string.format('%.17g', filled)
if allowed == 1 then
  return {1, level, capacity, math.floor(new_tokens), reset, 0}
end
local retry = -1
if requested <= capacity then retry = boundary_after(filled, requested) end
return {0, level, capacity, math.floor(new_tokens), reset, retry}
