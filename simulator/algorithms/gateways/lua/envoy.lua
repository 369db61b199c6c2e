--[[
envoy: the local rate limit filter's token bucket, filled by a timer at interval boundaries.

The bucket starts with max_tokens and gains tokens_per_fill at every multiple of fill_interval
(the timer's ticks, counted from time 0), never above max_tokens; between ticks nothing is
added. A request is admitted iff cost tokens are there, and takes them; a refused one changes
nothing. The state is the level and the tick it was counted at, so a bucket is brought up to date
by the ticks crossed since. The key expires at the tick it is full again: gone, it is full, which
it would have been.

KEYS[1]  the bucket, a hash {tokens, tick}, e.g. rl:envoy:{alice}
ARGV[1]  now_ms           current time, integer milliseconds
ARGV[2]  fill_interval    ms between ticks (>= 50, as Envoy requires)
ARGV[3]  tokens_per_fill  tokens added at each tick (>= 1)
ARGV[4]  max_tokens       capacity, and the level a bucket starts with (>= 1)
ARGV[5]  cost             tokens this request takes (>= 1; 1 when absent)

Returns {allowed 0|1, tokens, max_tokens, remaining, reset_ms, retry_after_ms}
  tokens          the level before this request (after the ticks crossed)
  remaining       tokens left after this request
  reset_ms        ms until the tick at which the bucket is full again (0: full)
  retry_after_ms  on a refusal, ms until the tick at which cost tokens are there
                  (-1: never, cost > max_tokens); 0 when allowed
]]
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local per_fill = tonumber(ARGV[3])
local max_tokens = tonumber(ARGV[4])
local cost = tonumber(ARGV[5] or '1')
local tick = math.floor(now / interval)

local state = redis.call('HMGET', KEYS[1], 'tokens', 'tick')
local tokens = max_tokens
if state[1] and state[2] then
  local crossed = tick - tonumber(state[2])
  if crossed < 0 then crossed = 0 end
  tokens = math.min(max_tokens, tonumber(state[1]) + crossed * per_fill)
end

local function ticks_until(level, want)
  local ticks = math.ceil((want - level) / per_fill)
  if ticks <= 0 then return 0 end
  return (tick + ticks) * interval - now
end

if cost > tokens then
  local retry = -1
  if cost <= max_tokens then retry = ticks_until(tokens, cost) end
  return {0, tokens, max_tokens, tokens, ticks_until(tokens, max_tokens), retry}
end
local left = tokens - cost
local reset = ticks_until(left, max_tokens)
redis.call('HSET', KEYS[1], 'tokens', left, 'tick', tick)
redis.call('PEXPIRE', KEYS[1], reset + 1)
return {1, tokens, max_tokens, left, reset, 0}
