"""GCRA: the generic cell rate algorithm, one theoretical arrival time per client.

go-redis/redis_rate and redis-cell implement it; nginx's ``limit_req`` leaky bucket is the same
meter. Requests are spaced ``T = W / limit`` apart on a schedule a client may run ahead of by
``tau = burst x T``: the key holds the time the schedule says the next request is due (``tat``).
As a meter it is the token bucket's twin (same ``burst + limit`` in any window); it differs in
what it stores (one number, nothing on a refusal) and in that the state is a time, not a level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from simulator.algorithms.base import (
    NEVER,
    BurstLimiter,
    MemoryModel,
    Param,
    Reference,
)
from simulator.records import Decision

__all__ = ["GCRA", "GCRARef", "BURST"]

#: Requests that may come at once (default: the limit).
BURST = Param("burst", lambda limit, window_ms: limit, unit="requests", minimum=1, integer=True)


def _units_left(tat: float, now: int, interval: float, burst: int) -> int:
    """Requests of cost 1 the schedule at ``tat`` still admits at ``now``: the first iff
    ``now - tat >= (1 - burst) x interval``, as a decision compares it, one more per interval
    past."""
    ahead = (now - tat) - (1 - burst) * interval
    return math.floor(ahead / interval) + 1 if ahead >= 0 else 0


def _step(
    tat: float, now: int, cost: int, burst: int, interval: float, tau: float
) -> tuple[bool, float, int, int, int, float]:
    """One request, as the script does it: (allowed, level, remaining, reset, retry, new tat)."""
    if tat < now:
        tat = now
    level = (tau - (tat - now)) / interval
    new_tat = tat + cost * interval
    # requests of cost 1 left, counted as the decision counts them (a refusal stores nothing)
    left = _units_left(tat, now, interval, burst)
    if cost > burst:
        return False, level, left, math.ceil(tat - now), NEVER, tat
    # now < new_tat - tau measured from now: a fresh key's side is exactly 0 (see gcra.lua);
    # the wait is the same two sides' gap, so a refusal's is never 0
    short_ms = (cost - burst) * interval - (now - tat)
    if short_ms > 0:
        return False, level, left, math.ceil(tat - now), math.ceil(short_ms), tat
    return (
        True,
        level,
        _units_left(new_tat, now, interval, burst),
        math.ceil(new_tat - now),
        0,
        new_tat,
    )


class GCRARef(Reference):
    name = "gcra"
    params_declared = (BURST,)

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.burst = int(self.params["burst"])
        self.interval = window_ms / limit
        self.tau = self.burst * self.interval
        self.tats: dict[str, tuple[float, int]] = {}  # client -> (tat, expire_at)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        tat, expire_at = self.tats.get(client, (float(now_ms), -1))
        if expire_at < now_ms:  # gone: the script reads now
            tat = float(now_ms)
        allowed, level, remaining, reset, retry, new_tat = _step(
            tat, now_ms, cost, self.burst, self.interval, self.tau
        )
        if allowed:
            self.tats[client] = (new_tat, now_ms + reset)
        return Decision(allowed, level, self.burst, remaining, reset, retry)


def bulk(
    c: np.ndarray,
    t: np.ndarray,
    limit: int,
    w: int,
    cost: np.ndarray | None = None,
    params: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    burst = int((params or {}).get("burst", limit))
    interval = w / limit
    tau = burst * interval
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, levels = [False] * len(tl), [0.0] * len(tl)
    last, tat, expire_at = None, 0.0, -1
    for i, now in enumerate(tl):
        if cl[i] != last or expire_at < now:
            last, tat, expire_at = cl[i], float(now), -1
        ok, levels[i], _, reset, _, new_tat = _step(tat, now, kl[i], burst, interval, tau)
        if ok:
            allowed[i], tat, expire_at = True, new_tat, now + reset
    return np.array(allowed, dtype=bool), np.array(levels, dtype="float64")


class GCRA(BurstLimiter):
    """GCRA: one theoretical arrival time per client, ``burst`` requests of tolerance."""

    name = "gcra"
    label = "GCRA"
    colour = "#e6ab02"
    scripts = ("gcra",)
    reference = GCRARef
    bulk = staticmethod(bulk)
    params_declared = (BURST,)
    # one string: a key name and one number (the time)
    key_prefix = "rl:gc:"
    memory = MemoryModel(lambda limit, key: key + 8, drained=True)
