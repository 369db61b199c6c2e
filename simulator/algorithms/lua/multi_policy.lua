--[[
multi_policy: two limits on one request, all or nothing (for example 10 per second and 1,000 per
day, or a user's limit inside a global one).

Each policy is a clock-grid counter (its cell floor(now_ms / its window) in the key). A request is
admitted only when every policy admits it, and then it counts in every policy; refused, it counts
in none (so no policy's budget is spent on a request another one refuses). The reply speaks for
the binding policy: admitted, the one with the fewest requests left (the short one on a tie);
refused, the refusing one with the longest wait.

KEYS[1]  counter of the short policy's grid cell, e.g. rl:mp:{alice}:s:28000000
KEYS[2]  counter of the long policy's grid cell,  e.g. rl:mp:{alice}:l:2800000
ARGV[1]  now_ms          current time, integer milliseconds
ARGV[2]  window_ms       the short policy's window, integer milliseconds (> 0)
ARGV[3]  limit           the short policy's requests per window (>= 1)
ARGV[4]  long_window_ms  the long policy's window, integer milliseconds (> 0)
ARGV[5]  long_limit      the long policy's requests per long window (>= 1)
ARGV[6]  cost            what this request counts (>= 1; 1 when absent)

Returns {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms, policy 1|2}
  count, limit, remaining, reset_ms  those of the binding policy (count after this request if
                  admitted, else its counter as it stands; remaining: what a request of cost 1
                  could still take, a refusal counting nothing)
  retry_after_ms  0 when allowed; refused, ms until the refusing policies' cells end (the longest);
                  -1 (never) for a cost above either limit
  policy          1 for the short policy, 2 for the long one
]]
local now = tonumber(ARGV[1])
local windows = {tonumber(ARGV[2]), tonumber(ARGV[4])}
local limits = {tonumber(ARGV[3]), tonumber(ARGV[5])}
local cost = tonumber(ARGV[6] or '1')

local counts, resets = {}, {}
for i = 1, 2 do
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  resets[i] = windows[i] - (now % windows[i])
end

local binding, wait = 0, 0
for i = 1, 2 do
  if cost > limits[i] then
    return {0, counts[i], limits[i], math.max(0, limits[i] - counts[i]), resets[i], -1, i}
  end
  if counts[i] + cost > limits[i] and resets[i] > wait then
    binding, wait = i, resets[i]
  end
end
if binding > 0 then
  local b = binding
  return {0, counts[b], limits[b], math.max(0, limits[b] - counts[b]), resets[b], wait, b}
end

for i = 1, 2 do
  counts[i] = redis.call('INCRBY', KEYS[i], cost)
  if counts[i] == cost then
    redis.call('PEXPIRE', KEYS[i], windows[i])
  end
end
binding = 1
if limits[2] - counts[2] < limits[1] - counts[1] then binding = 2 end
local b = binding
return {1, counts[b], limits[b], limits[b] - counts[b], resets[b], 0, b}
