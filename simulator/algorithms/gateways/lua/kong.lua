--[[
kong: the rate-limiting plugin, several fixed windows on the clock at once.

One counter per configured period (second, minute, hour, day), for the window of that period the
clock is in (windows start at multiples of the period since the epoch, UTC, as Kong's timestamps
do). As Kong's handler does, the request is refused (429) when any window's usage has reached its
limit, here when usage + cost would pass it; a refused request is counted nowhere. An admitted
one adds cost to every window's counter; a counter expires at its window's end.

KEYS[i]      the counter of window i, e.g. ratelimit:{alice}:60000:25:minute (period ms, index)
ARGV[1]      now_ms  current time, integer milliseconds
ARGV[2i]     window i's period, integer milliseconds
ARGV[2i+1]   window i's limit, requests
ARGV[last]   cost    requests this one stands for (>= 1; 1 when absent); there are
             2 x #KEYS + 2 arguments

Returns {allowed 0|1, usage, limit, remaining, reset_ms, retry_after_ms}, of the window with the
fewest requests left (the first such):
  usage           its count before this request
  remaining       requests left in it after this request
  reset_ms        ms until it ends
  retry_after_ms  on a refusal, ms until every window that is full has ended (-1: never, a cost
                  above a limit); 0 when allowed
]]
local now = tonumber(ARGV[1])
local n = #KEYS
local cost = tonumber(ARGV[2 * n + 2] or '1')

local used, periods, limits = {}, {}, {}
local tight, retry, never = 1, 0, false
for i = 1, n do
  periods[i] = tonumber(ARGV[2 * i])
  limits[i] = tonumber(ARGV[2 * i + 1])
  used[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  if limits[i] - used[i] < limits[tight] - used[tight] then tight = i end
  if used[i] + cost > limits[i] then
    if cost > limits[i] then never = true end
    local ends = (math.floor(now / periods[i]) + 1) * periods[i] - now
    if ends > retry then retry = ends end
  end
end

local ends = (math.floor(now / periods[tight]) + 1) * periods[tight] - now
if retry > 0 then
  if never then retry = -1 end
  return {0, used[tight], limits[tight], limits[tight] - used[tight], ends, retry}
end
for i = 1, n do
  redis.call('INCRBY', KEYS[i], cost)
  redis.call('PEXPIRE', KEYS[i], (math.floor(now / periods[i]) + 1) * periods[i] - now)
end
return {1, used[tight], limits[tight], limits[tight] - used[tight] - cost, ends, 0}
