--[[ ratelimit
label = "Sliding window counter (your script)"
keys = ["rl:ex:sc:{client}:{window}", "rl:ex:sc:{client}:{window-1}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2, remaining = 4, reset = 5 }
]]
-- Sliding window counter: KEYS[1] counts this grid window, KEYS[2] the previous one.
-- estimate = cur + prev * (window - elapsed) / window, elapsed = now % window (in ms).
-- Refuse iff estimate >= limit; otherwise count the hit in KEYS[1] (expiry: 2 windows, set on
-- its first hit).
-- Return {allowed 0|1, estimate (a string: string.format('%.17g', estimate)), limit,
--         remaining, reset_ms}:
--   remaining  ceil(limit - (estimate + 1)) when admitted (never below 0), 0 when refused
--   reset_ms   ms until a request is admitted again if nothing else arrives, but at least
--              until the current grid window ends (reset = window - elapsed). With c the
--              current window's counter after this request (a refusal leaves it as it was)
--              and p the previous one: if
--              c + p * (window - elapsed) / window < limit, it is reset; else, if c < limit (the
--              previous window's share fades), floor((window * p - (limit - c) * window) / p)
--              + 1 - elapsed; else reset + floor((window * c - limit * window) / c) + 1; and
--              never less than reset.
--
-- Write the algorithm below (KEYS and ARGV as declared above), then run notebook 06.

return redis.error_reply('not written yet: exercise sliding_counter')
