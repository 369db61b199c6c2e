"""The arithmetic of the counting limiters, with the counters the server held.

Each function reads what its script read (the counters' ``GET``, the ``INCRBY`` that counted
the hit, ``INCREX``'s reply) and its ``ARGV``, and works the script's comparison out with them:
the fixed window's count against the limit, the sliding counter's estimate ``cur + prev ×
(W − elapsed)/W``, both policies of ``multi_policy``, EchoMQ's live counter and INCREX's bound.
"""

from __future__ import annotations

from simulator.explain.facts import Arithmetic, Facts, compared, decided, num, ratio

__all__ = [
    "fixed_window",
    "sliding_counter",
    "sliding_counter_all",
    "multi_policy",
    "echomq",
    "increx",
]


def _never(cost: float, limit: float, what: str = "limit") -> Arithmetic:
    line = f"cost {num(cost)} > {what} {num(limit)}: it could never be admitted → refused"
    return Arithmetic((line,), False)


def fixed_window(f: Facts) -> Arithmetic:
    """``count = INCRBY key cost`` (refused hits count too), admitted iff ``count ≤ limit``."""
    now, window, limit, cost = f.arg(1), f.arg(2), f.arg(3), f.arg(4, 1)
    if cost > limit:
        return _never(cost, limit)
    key = f.keys[0]
    count = f.number("INCRBY", key)
    ok = count <= limit
    return Arithmetic(
        (
            f"window = ⌊now / W⌋ = ⌊{num(now)} / {num(window)}⌋ = {num(now // window)}, "
            f"counter {key}",
            f"count = INCRBY by cost {num(cost)} → {num(count)} (a refused hit counts too)",
            f"count ≤ limit: {compared(count, ok, limit, False)} → {decided(ok)}",
        ),
        ok,
    )


def _estimate(f: Facts, counts_refusals: bool) -> Arithmetic:
    now, window, limit, cost = f.arg(1), f.arg(2), f.arg(3), f.arg(4, 1)
    if cost > limit:
        return _never(cost, limit)
    elapsed = now % window
    cur = f.number("GET", f.keys[0])
    prev = f.number("GET", f.keys[1])
    estimate = cur + prev * (window - elapsed) / window  # the script's own order of operations
    room = limit - cost + 1
    ok = estimate < room
    how = "" if cost == 1 else "limit − cost + 1 = "
    lines = [
        f"elapsed = now mod W = {num(now)} mod {num(window)} = {num(elapsed)} ms",
        f"cur = GET {f.keys[0]} → {num(cur)}, prev = GET {f.keys[1]} → {num(prev)}",
    ]
    if counts_refusals and not ok:
        counted = f.number("INCRBY", f.keys[0])
        lines.append(
            f"a refused hit is counted too: INCRBY {f.keys[0]} {num(cost)} → {num(counted)}"
        )
    lines.append(
        f"cur + prev × (W − elapsed)/W = {num(cur)} + {num(prev)} × "
        f"{ratio(window - elapsed, window)} = {compared(estimate, ok, room, True, how)} → {decided(ok)}"
    )
    return Arithmetic(tuple(lines), ok)


def sliding_counter(f: Facts) -> Arithmetic:
    """The estimate of two grid windows against the limit (``estimate + cost − 1 < limit``)."""
    return _estimate(f, counts_refusals=False)


def sliding_counter_all(f: Facts) -> Arithmetic:
    """As :func:`sliding_counter`; a refused hit is counted all the same."""
    return _estimate(f, counts_refusals=True)


def multi_policy(f: Facts) -> Arithmetic:
    """Both grid counters (``GET``) against their limits; admitted only when both have room."""
    now, cost = f.arg(1), f.arg(6, 1)
    policies = (("short", f.arg(2), f.arg(3)), ("long", f.arg(4), f.arg(5)))
    lines, ok = [], True
    for (name, window, limit), key in zip(policies, f.keys, strict=False):
        if cost > limit:
            return _never(cost, limit, f"the {name} policy's limit")
        count = f.number("GET", key)
        fits = count + cost <= limit
        ok = ok and fits
        lines.append(
            f"{name} ({num(limit)} per {num(window)} ms, ends in {num(window - now % window)} ms): "
            f"GET {key} → {num(count)}; count + cost = {compared(count + cost, fits, limit, False)}"
        )
    lines.append(f"admitted only when both have room → {decided(ok)}")
    return Arithmetic(tuple(lines), ok)


def echomq(f: Facts) -> Arithmetic:
    """The live counter (``GET``) plus the cost against the budget; the window is its TTL."""
    budget, window, cost = f.arg(2), f.arg(3), f.arg(4, 1)
    lines = []
    if budget == 0:
        budget = f.number("HGET", f.keys[1])
        lines.append(f"max = HGET {f.keys[1]} max → {num(budget)}")
    live = f.number("GET", f.keys[0])
    ok = live + cost <= budget
    if cost > budget:
        return _never(cost, budget, "max")
    lines.append(
        f"live = GET {f.keys[0]} → {num(live)} (the counter lives {num(window)} ms from its first hit)"
    )
    pttl = f.reply("PTTL", f.keys[0])
    if isinstance(pttl, int) and pttl >= 0:
        lines.append(f"PTTL {f.keys[0]} → {num(pttl)} ms left in this window")
    lines.append(
        f"live + cost ≤ max: {num(live)} + {num(cost)} = "
        f"{compared(live + cost, ok, budget, False)} → {decided(ok)}"
    )
    return Arithmetic(tuple(lines), ok)


def increx(f: Facts) -> Arithmetic:
    """``INCREX key BYINT cost UBOUND limit …`` adds the cost only while the counter stays within
    the bound; its reply ``[counter, added]`` says what it held and whether it added."""
    if not f.made("INCREX"):  # a cost above the limit: only read (GET), never sent
        counter = f.number("GET", f.keys[0])
        return Arithmetic(
            (
                f"GET {f.keys[0]} → {num(counter)}; cost is above the limit: never sent to INCREX → refused",
            ),
            False,
        )
    args = [str(a).upper() for a in f.argv]
    cost = float(f.argv[args.index("BYINT") + 1])
    bound = float(f.argv[args.index("UBOUND") + 1])
    counter, added = (float(x) for x in f.reply("INCREX"))
    before = counter - added
    ok = before + cost <= bound
    return Arithmetic(
        (
            f"INCREX {f.keys[0]} → [counter {num(counter)}, added {num(added)}]: "
            f"the counter held {num(before)} before",
            f"counter + cost ≤ UBOUND: {num(before)} + {num(cost)} = "
            f"{compared(before + cost, ok, bound, False)} → {decided(ok)}",
        ),
        ok,
    )
