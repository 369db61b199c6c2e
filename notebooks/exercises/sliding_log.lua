--[[ ratelimit
label = "Sliding log (your script)"
keys = ["rl:ex:sl:{client}"]
argv = ["now_ms", "window_ms", "limit", "request_id"]
reply = { allowed = 1, count = 2, remaining = 4, reset = 5, retry_after = 6 }
]]
-- Sliding log, the exact answer: KEYS[1] is a sorted set of the admitted requests' times
-- (member: ARGV[4], unique per request; score: now). The window is (now - window, now]: drop
-- what is older first. Admit iff fewer than limit are left; log only admitted requests.
-- Return {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}:
--   count           requests in the window before this one
--   remaining       limit - count - 1 when admitted, 0 when refused
--   reset_ms        ms until the oldest logged request leaves the window
--   retry_after_ms  the same on a refusal, 0 when admitted
--
-- Write the algorithm below (KEYS and ARGV as declared above), then run notebook 06.

return redis.error_reply('not written yet: exercise sliding_log')
