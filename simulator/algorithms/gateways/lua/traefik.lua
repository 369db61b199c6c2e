--[[
traefik: the RateLimit middleware, a golang.org/x/time/rate token bucket per source.

The bucket holds at most burst tokens and gains average tokens per period, continuously; a new
source starts full. A request takes cost tokens by reservation: the level may go below zero, and
the time until it is back at zero is the wait. The middleware admits the request after that wait
when it is at most max_delay (it sleeps, then passes the request on) and refuses it with 429
otherwise, cancelling the reservation (the level is as it was). A request of more than burst
tokens is never admitted. A source is forgotten once the Unix second of now reaches the second
it was last seen at plus ttl (Traefik keeps its buckets in a mailgun ttlmap, whose expiry is in
whole seconds): its next request finds a full bucket. The
time a source was last seen is kept in the hash, so that forgetting follows now_ms, not the
server's clock; the key's own expiry comes after that and changes nothing.

KEYS[1]  the bucket, a hash {tokens, last, seen}, e.g. rl:traefik:{alice}
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  the period, integer milliseconds (> 0)
ARGV[3]  limit      average: tokens added per period (>= 1)
ARGV[4]  burst      capacity, in tokens (>= 1)
ARGV[5]  max_delay  the longest wait admitted, integer nanoseconds (Go's time.Duration)
ARGV[6]  ttl_s      whole seconds a source is remembered after its last request
ARGV[7]  cost       tokens this request takes (>= 1; 1 when absent)

Returns {allowed 0|1, tokens, burst, remaining, reset_ms, retry_after_ms}
  tokens          the level before this request (after the refill), as a string ('%.17g')
  remaining       requests of cost 1 that would pass now, held ones included
  reset_ms        ms until the bucket is full again
  retry_after_ms  admitted: the wait Traefik sleeps before passing it on (0: none);
                  refused: the wait it would have had (Traefik's X-Retry-In), -1: never
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local max_delay = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
local cost = tonumber(ARGV[7] or '1')
local rate = limit / window

local state = redis.call('HMGET', KEYS[1], 'tokens', 'last', 'seen')
local tokens = burst
local last = now
local seen = tonumber(state[3])
if seen ~= nil and math.floor(now / 1000) - math.floor(seen / 1000) < ttl then
  tokens = tonumber(state[1])
  last = tonumber(state[2])
end
local elapsed = now - last
if elapsed < 0 then elapsed = 0 end
local filled = tokens + elapsed * rate
if filled > burst then filled = burst end

-- the wait as x/time/rate makes it: seconds = tokens / limit, then whole ns, truncated
local left = filled - cost
local wait = 0
if left < 0 then wait = math.floor(1e9 * (-left / (limit * 1000 / window))) end
local allowed = cost <= burst and wait <= max_delay
local kept = filled
if allowed then kept = left end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', kept), 'last', now, 'seen', now)
redis.call('PEXPIRE', KEYS[1], (ttl + 2) * 1000)

local reset = math.ceil((burst - kept) / rate)
-- requests of cost 1 that would pass now, the ones held within max_delay included
local remaining = math.floor(kept + max_delay * (limit * 1000 / window) / 1e9)
if remaining < 0 then remaining = 0 end
local level = string.format('%.17g', filled)
if allowed then
  return {1, level, burst, remaining, reset, math.ceil(wait / 1e6)}
end
local retry = -1
if cost <= burst then retry = math.ceil(wait / 1e6) end
return {0, level, burst, remaining, reset, retry}
