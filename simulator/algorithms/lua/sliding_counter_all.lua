--[[
sliding_counter_all: the sliding window counter that counts refused hits too (as Kong's does).

estimate = cur + prev * (window - elapsed) / window, where elapsed is how far (in ms) now is into
the current grid window. A request of cost c is refused iff estimate + c - 1 >= limit (for c = 1:
estimate >= limit); admitted or refused, the current window's counter grows by c (expiry 2
windows, set on its first hit only), so a client that keeps sending above the rate keeps its own
estimate above the limit: blocked for as long as it sends. A cost above the limit is refused
uncounted: it could never be admitted.

KEYS[1]  counter of the current grid window,  e.g. rl:sca:{alice}:28000001
KEYS[2]  counter of the previous grid window, e.g. rl:sca:{alice}:28000000
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed per window (>= 1)
ARGV[4]  cost       what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, estimate, limit, remaining, reset_ms, retry_after_ms}
  estimate        the estimate compared with the limit, as a string ('%.17g')
  remaining       requests of cost 1 still admitted right now after this one (a refused hit is
                  counted too, so after one it is what is left once it has been)
  reset_ms        ms until a request comes back: 1 ms past the current grid window's end (where
                  this window's count starts to fade; the end itself when nothing is counted, or
                  when the previous window's last ms weighed a whole request), or, if a request
                  of cost 1 would still be refused then, until one is admitted again if nothing
                  else arrives
  retry_after_ms  on a refusal, ms until the estimate (this hit counted) leaves room for this cost
                  if nothing else arrives (-1: never, the cost exceeds the limit); 0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4] or '1')
local elapsed = now % window

local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local estimate = cur + prev * (window - elapsed) / window
local reset = window - elapsed

-- ms from now until a request of cost 1 is admitted if nothing else arrives, with the current
-- window's counter at c: the same estimate, compared as a decision compares it
local function unit_wait(c)
  if c + prev * (window - elapsed) / window < limit then
    return 0
  end
  if c < limit then
    -- the previous window's share fades: first elapsed e with prev * (window - e) < (limit - c) * window
    return math.floor((window * prev - (limit - c) * window) / prev) + 1 - elapsed
  end
  return reset + math.floor((window * c - limit * window) / c) + 1
end
-- the grid end is when the quota comes back, unless a request would still be refused there
-- At the grid end the previous window's last share (prev / window) leaves, and this window's
-- count c still weighs fully: unless that share was a whole request, nothing comes back there,
-- and the first request comes back one ms later, as c starts to fade.
local function reset_for(c)
  local wait = unit_wait(c)
  local back = reset
  if c > 0 and prev < window then back = reset + 1 end
  if wait > back then return wait end
  return back
end

-- room is what the estimate must stay under for this cost: limit for a single request
local room = limit - cost + 1
if cost <= limit and estimate < room then
  local count = redis.call('INCRBY', KEYS[1], cost)
  if count == cost then
    redis.call('PEXPIRE', KEYS[1], 2 * window)
  end
  local remaining = math.ceil(limit - (estimate + cost))
  if remaining < 0 then remaining = 0 end
  return {1, string.format('%.17g', estimate), limit, remaining, reset_for(cur + cost), 0}
end

local left
if cost > limit then
  left = math.ceil(limit - estimate)
  if left < 0 then left = 0 end
  return {0, string.format('%.17g', estimate), limit, left, reset_for(cur), -1}
end
-- refused, and counted all the same
local counted = redis.call('INCRBY', KEYS[1], cost)
if counted == cost then
  redis.call('PEXPIRE', KEYS[1], 2 * window)
end
local wait
if counted < room then
  -- the previous window's share fades: first elapsed e with prev * (window - e) < (room - counted) * window
  wait = math.floor((window * prev - (room - counted) * window) / prev) + 1 - elapsed
else
  -- only the next window helps: there the counter becomes prev
  wait = reset + math.floor((window * counted - room * window) / counted) + 1
end
left = math.ceil(limit - (estimate + cost))
if left < 0 then left = 0 end
return {0, string.format('%.17g', estimate), limit, left, reset_for(counted), wait}
