"""The arithmetic of the limiters that keep a time or a log: the bucket, GCRA and the exact log.

The bucket's stored tokens and timestamp (``HMGET``) refilled by the time since, GCRA's stored
theoretical arrival time (``GET``) against now and the tolerance, and the log's entries left in
(now − W, now] once the older ones are dropped (``ZREMRANGEBYSCORE``, then ``ZCARD``), each with
the script's ARGV.
"""

from __future__ import annotations

from simulator.explain.facts import Arithmetic, Facts, compared, decided, num

__all__ = ["token_bucket", "gcra", "sliding_log"]


def token_bucket(f: Facts) -> Arithmetic:
    """``tokens = min(capacity, stored + elapsed × rate)``, admitted iff ``cost ≤ tokens``."""
    now, window, limit, burst, cost = f.arg(1), f.arg(2), f.arg(3), f.arg(4), f.arg(5, 1)
    rate = limit / window
    state = f.reply("HMGET", f.keys[0]) or [False, False]
    stored, ts = state[0], state[1]
    lines = []
    if stored is False or ts is False or stored is None or ts is None:
        tokens, since = burst, now
        lines.append(
            f"HMGET {f.keys[0]} tokens ts → nothing: a new bucket starts full ({num(burst)})"
        )
    else:
        tokens, since = float(stored), float(ts)
        lines.append(f"HMGET {f.keys[0]} tokens ts → stored {num(tokens)} at {num(since)} ms")
    elapsed = max(0.0, now - since)
    refilled = tokens + elapsed * rate
    filled = min(burst, refilled)
    lines.append(
        f"tokens = min(capacity, stored + elapsed × rate) = min({num(burst)}, {num(tokens)} + "
        f"{num(elapsed)} ms × {num(limit)} per {num(window)} ms) = min({num(burst)}, {num(refilled)}) "
        f"= {num(filled)}"
    )
    ok = cost <= filled
    lines.append(f"cost ≤ tokens: {compared(cost, ok, filled, False)} → {decided(ok)}")
    return Arithmetic(tuple(lines), ok)


def gcra(f: Facts) -> Arithmetic:
    """The new theoretical arrival time ``TAT + cost × T`` less ``τ`` against now, measured
    from now as the script compares it: refused iff ``now − TAT < (cost − burst) × T``."""
    now, window, limit, burst, cost = f.arg(1), f.arg(2), f.arg(3), f.arg(4), f.arg(5, 1)
    interval = window / limit
    tau = burst * interval
    got = f.reply("GET", f.keys[0])
    stored = now if got is None or got is False else float(got)
    tat = max(stored, now)
    new_tat = tat + cost * interval
    shown_tat = "nil (taken as now)" if got is None or got is False else num(stored)
    lines = [
        f"T = W / limit = {num(window)}/{num(limit)} = {num(interval)} ms; "
        f"tolerance τ = burst × T = {num(burst)} × {num(interval)} = {num(tau)} ms",
        f"TAT = max(GET {f.keys[0]} → {shown_tat}, now {num(now)}) = {num(tat)}; "
        f"new TAT = TAT + cost × T = {num(new_tat)}",
    ]
    if cost > burst:
        lines.append(f"cost {num(cost)} > burst {num(burst)}: never admitted → refused")
        return Arithmetic(tuple(lines), False)
    need = (cost - burst) * interval
    ok = not now - tat < need  # the script's comparison (gcra.lua), in its order
    how = f"now − TAT = {num(now)} − {num(tat)} = "
    lines.append(
        f"(cost − burst) × T ≤ now − TAT: ({num(cost)} − {num(burst)}) × {num(interval)} = "
        f"{compared(need, ok, now - tat, False, how)} → {decided(ok)}"
    )
    return Arithmetic(tuple(lines), ok)


def sliding_log(f: Facts) -> Arithmetic:
    """The log's entries in (now − W, now] plus the cost against the limit."""
    now, window, limit, cost = f.arg(1), f.arg(2), f.arg(3), f.arg(5, 1)
    key = f.keys[0]
    removed = f.number("ZREMRANGEBYSCORE", key)
    count = f.number("ZCARD", key)
    ok = count + cost <= limit
    return Arithmetic(
        (
            f"ZREMRANGEBYSCORE {key} -inf {num(now - window)} → {num(removed)} dropped "
            f"(scores ≤ now − W)",
            f"entries in (now − W, now] = ({num(now - window)}, {num(now)}]: ZCARD → {num(count)}",
            f"entries + cost ≤ limit: {num(count)} + {num(cost)} = "
            f"{compared(count + cost, ok, limit, False)} → {decided(ok)}",
        ),
        ok,
    )
