--[[
token_bucket: a bucket of tokens refilled continuously (Stripe's limiter, as Spring Cloud Gateway
ships it).

The bucket holds at most burst tokens and gains limit tokens per window_ms, continuously (so the
long-run rate equals the windows'). A client seen for the first time starts full. At each request
the bucket is refilled by the time elapsed since the last one, capped at burst; the request is
admitted iff at least cost tokens are there, and takes them. The new level and the time are
stored whether or not the request was admitted. The hash expires once it would be full again:
a bucket that has gone is a full one, so nothing is kept longer than it matters.

KEYS[1]  the bucket, a hash {tokens, ts}, e.g. rl:tb:{alice}
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  the window of the rate, integer milliseconds (> 0)
ARGV[3]  limit      tokens added per window (>= 1)
ARGV[4]  burst      capacity, in tokens (>= 1)
ARGV[5]  cost       tokens this request takes (>= 1; 1 when absent)

Returns {allowed 0|1, tokens, burst, remaining, reset_ms, retry_after_ms}
  tokens          the level compared with the cost (after the refill, before this request),
                  as a string ('%.17g')
  remaining       whole tokens left after this request
  reset_ms        ms until the bucket is full again
  retry_after_ms  on a refusal, ms until cost tokens are there (-1: never, cost > burst);
                  0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5] or '1')
local rate = limit / window

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then elapsed = 0 end
local filled = tokens + elapsed * rate
if filled > burst then filled = burst end

local allowed = 0
local left = filled
if cost <= filled then
  allowed = 1
  left = filled - cost
end
-- the refill a later request computes is left + elapsed * rate: where that falls a rounding
-- short of the whole, the ms computed by division is one too early
local reset = math.ceil((burst - left) / rate)
if left + reset * rate < burst then reset = reset + 1 end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', left), 'ts', ARGV[1])
redis.call('PEXPIRE', KEYS[1], reset + 1)

local level = string.format('%.17g', filled)
if allowed == 1 then
  return {1, level, burst, math.floor(left), reset, 0}
end
local retry = -1
if cost <= burst then
  retry = math.ceil((cost - filled) / rate)
  if filled + retry * rate < cost then retry = retry + 1 end
end
return {0, level, burst, math.floor(left), reset, retry}
