--[[ ratelimit
keys = ["rl:wrong:{client}"]
argv = ["limit", "window_ms"]
reply = { allowed = 1, count = 2 }
server_time = true
]]
local limit = tonumber(ARGV[1])
local live = tonumber(redis.call('GET', KEYS[1]) or '0')
if live >= limit then return {0, live} end
local count = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])  -- the mistake: the window is re-armed on every hit
return {1, count}
