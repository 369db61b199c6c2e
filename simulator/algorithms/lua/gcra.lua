--[[
gcra: the generic cell rate algorithm, in its theoretical-arrival-time form (as go-redis/redis_rate's
allowN and redis-cell do it; as a meter, nginx's leaky bucket is the same).

Requests are spaced by the emission interval T = window_ms / limit; a client may run ahead of that
schedule by the tolerance tau = burst * T. The key holds the theoretical arrival time (tat) of the
client's next request. tat = max(stored tat or now, now); new_tat = tat + cost * T; the request
is refused iff now < new_tat - tau, otherwise new_tat is stored, expiring when it no longer
matters (once now passes it, a missing key and the stored one decide alike). A refusal stores
nothing.

The comparison is made as now - tat < (cost - burst) * T, the same inequality measured from
now: summing tat + cost * T - tau rounds, and a fresh key (tat = now) at 3 per 1000 ms, burst 1,
t = 2000 came to 2000.0000000000002 and was refused. Measured from now, a fresh key's side is
exactly 0 against (cost - burst) * T <= 0, so its first request (cost <= burst) is always
admitted; the count of what is left is gated the same way.

KEYS[1]  the theoretical arrival time, a string, e.g. rl:gc:{alice}
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  the window of the rate, integer milliseconds (> 0)
ARGV[3]  limit      requests per window (>= 1)
ARGV[4]  burst      requests that may come at once (>= 1)
ARGV[5]  cost       what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, level, burst, remaining, reset_ms, retry_after_ms}
  level           requests' worth the client could send before this one ((tau - (tat - now)) / T),
                  as a string ('%.17g')
  remaining       whole requests of cost 1 the client could still send now (a refusal stores
                  nothing, so after one it is what was there before)
  reset_ms        ms until the bucket is full again (tat - now after this request)
  retry_after_ms  on a refusal, new_tat - tau - now rounded up, as (cost - burst) * T - (now - tat)
                  (-1: never, cost > burst);
                  0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5] or '1')
local interval = window / limit
local tau = burst * interval

local tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
if tat < now then tat = now end
local level = string.format('%.17g', (tau - (tat - now)) / interval)
local new_tat = tat + cost * interval
-- how far now is short of new_tat - tau, measured from now (see above); its wait, too
local short = (cost - burst) * interval - (now - tat)

-- what is left for requests of cost 1 after a schedule at t, counted as the decision counts:
-- the first is admitted iff now - t >= (1 - burst) * interval, one more per interval past that
local function units_left(t)
  local ahead = (now - t) - (1 - burst) * interval
  if ahead < 0 then return 0 end
  return math.floor(ahead / interval) + 1
end
local left = units_left(tat)
if cost > burst then
  return {0, level, burst, left, math.ceil(tat - now), -1}
end
if short > 0 then
  return {0, level, burst, left, math.ceil(tat - now), math.ceil(short)}
end
local reset = math.ceil(new_tat - now)
redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', reset)
return {1, level, burst, units_left(new_tat), reset, 0}
