--[[
nginx: limit_req's leaky bucket (ngx_http_limit_req_module), in its own integer arithmetic.

The state of a key is its excess, in milli-requests, and the ms it was last admitted at. A request
at now leaks rate x ms / 1000 (integer division, rate in milli-requests per second) off the
stored excess and adds 1000 per request it stands for. It is refused (nginx answers 503 or
limit_req_status) when the excess would be above burst, and then nothing is written. A key seen
for the first time takes its first request at the rate: an excess of 0 (1000 per request beyond
the first, for a cost above 1; a cost above burst + 1 is never admitted). So does a key that has
leaked its excess and one request more: for a request of cost 1, nginx's own sum clamped at 0
gives the same, and the key's expiry changes no decision. An admitted request is delayed
(excess - delay) x 1000 / rate ms when its excess is above delay (nginx holds it on a timer
before passing it on); nodelay is a delay of the burst (no admitted excess is above it). The key
expires once it would be taken as new, so its going changes no decision.

KEYS[1]  the bucket, a hash {excess, last}, e.g. rl:nginx:{alice}
ARGV[1]  now_ms  current time, integer milliseconds
ARGV[2]  rate    milli-requests per second (10r/s: 10000; 600r/m: 10000; 1r/m: 16)
ARGV[3]  burst   milli-requests of excess allowed (burst=20: 20000)
ARGV[4]  delay   milli-requests of excess forwarded at once (delay=N: N x 1000; nodelay: burst)
ARGV[5]  cost    requests this one stands for (>= 1; 1 when absent)

Returns {allowed 0|1, excess, burst + 1, remaining, reset_ms, retry_after_ms}
  excess          the excess after this request, in requests, as a string ('%.17g')
  burst + 1       the most admitted at one instant from an empty bucket
  remaining       requests of cost 1 still admitted at this instant
  reset_ms        ms until the excess has leaked to 0
  retry_after_ms  admitted: the delay nginx holds it for (0: passed on at once);
                  refused: ms until a request of this cost is admitted (-1: never)
]]
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local delay = tonumber(ARGV[4])
local cost = tonumber(ARGV[5] or '1')

local state = redis.call('HMGET', KEYS[1], 'excess', 'last')
local stored = tonumber(state[1])
local last = tonumber(state[2])
local excess = 1000 * (cost - 1)
if stored ~= nil and last ~= nil then
  local ms = now - last
  if ms < 0 then ms = 0 end
  local leaked = math.floor(rate * ms / 1000)
  if leaked < stored + 1000 then
    excess = stored - leaked + 1000 * cost
  else
    stored = nil -- leaked past its excess and one request: as a new key (see above)
  end
end

if excess > burst and stored == nil then -- more than an empty bucket takes: never
  return {0, string.format('%.17g', excess / 1000), burst / 1000 + 1, burst / 1000 + 1, 0, -1}
end
if excess > burst then
  local need = stored + 1000 * cost - burst
  local retry = last + math.ceil(1000 * need / rate) - now
  if 1000 * (cost - 1) > burst then retry = -1 end
  local reset = last + math.ceil(1000 * stored / rate) - now
  if reset < 0 then reset = 0 end
  local left = math.floor((burst - (excess - 1000 * cost)) / 1000)
  if left < 0 then left = 0 end
  return {0, string.format('%.17g', excess / 1000), burst / 1000 + 1, left, reset, retry}
end

redis.call('HSET', KEYS[1], 'excess', excess, 'last', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(1000 * (excess + 1000) / rate))
local held = 0
if excess > delay then
  held = math.floor((excess - delay) * 1000 / rate)
end
local left = math.floor((burst - excess) / 1000)
local reset = math.ceil(1000 * excess / rate)
return {1, string.format('%.17g', excess / 1000), burst / 1000 + 1, left, reset, held}
