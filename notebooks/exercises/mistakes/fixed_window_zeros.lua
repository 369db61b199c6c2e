--[[ ratelimit
label = "Fixed window that answers zeros"
keys = ["rl:zeros:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2, remaining = 3, reset = 4, retry_after = 5 }
]]
-- The decisions are right: a counter per grid window, admitted iff the count is <= limit.
-- The mistake: everything else in the reply is 0, so a client is told it has nothing left,
-- that its window resets now and that it may retry at once.
local window, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], window) end
local allowed = 0
if count <= limit then allowed = 1 end
return {allowed, 0, 0, 0, 0}
