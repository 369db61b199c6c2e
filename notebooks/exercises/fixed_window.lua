--[[ ratelimit
label = "Fixed window (your script)"
keys = ["rl:ex:fw:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2, remaining = 4, reset = 5, retry_after = 6 }
]]
-- Fixed window on the clock grid: the key is this client's counter for the grid window
-- floor(now / window) (KEYS[1] holds it). Count every hit, refused ones too; the key expires one
-- window after its first hit. Admit iff the count after this hit is <= limit.
-- Return {allowed 0|1, count, limit, remaining, reset_ms, retry_after_ms}:
--   count           the counter after this hit
--   remaining       limit - count when admitted, 0 when refused
--   reset_ms        ms until this grid window ends: window - now % window
--   retry_after_ms  reset_ms on a refusal, 0 when admitted
--
-- Write the algorithm below (KEYS and ARGV as declared above), then run notebook 06.

return redis.error_reply('not written yet: exercise fixed_window')
