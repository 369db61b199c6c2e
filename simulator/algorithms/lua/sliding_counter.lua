--[[
sliding_counter: sliding window counter (the estimate of two grid windows).

estimate = cur + prev * (window - elapsed) / window, where elapsed is how far (in ms) now is into
the current grid window. A request is refused iff estimate >= limit; otherwise the current
window's counter is incremented (expiry 2 windows, set on its first hit only).

KEYS[1]  counter of the current grid window,  e.g. rl:sc:{alice}:28000001
KEYS[2]  counter of the previous grid window, e.g. rl:sc:{alice}:28000000
ARGV[1]  now_ms     current time, integer milliseconds
ARGV[2]  window_ms  window length, integer milliseconds (> 0)
ARGV[3]  limit      requests allowed per window (>= 1)

Returns {allowed 0|1, estimate, limit, remaining, reset_ms, retry_after_ms}
  estimate        the estimate compared with the limit, as a string ('%.17g')
  remaining       requests still admitted right now after this one
  reset_ms        ms until the current grid window ends
  retry_after_ms  on a refusal, ms until the estimate drops below the limit if nothing else
                  arrives; 0 when allowed
]]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local elapsed = now % window

local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local estimate = cur + prev * (window - elapsed) / window
local reset = window - elapsed

if estimate < limit then
  local count = redis.call('INCR', KEYS[1])
  if count == 1 then
    redis.call('PEXPIRE', KEYS[1], 2 * window)
  end
  local remaining = math.ceil(limit - (estimate + 1))
  if remaining < 0 then remaining = 0 end
  return {1, string.format('%.17g', estimate), limit, remaining, reset, 0}
end

local wait
if cur < limit then
  -- the previous window's share fades: first elapsed e with prev * (window - e) < (limit - cur) * window
  wait = math.floor((window * prev - (limit - cur) * window) / prev) + 1 - elapsed
else
  -- only the next window helps: there cur becomes prev
  wait = reset + math.floor((window * cur - limit * window) / cur) + 1
end
return {0, string.format('%.17g', estimate), limit, 0, reset, wait}
