"""Sliding window counter that counts refused hits too, as Kong's sliding window does.

The estimate is the sliding counter's, ``cur + prev x (W - elapsed) / W``, and so is the test
(admit iff ``estimate + cost - 1 < limit``); the difference is what a refusal does. Here it is
counted all the same, so a client that keeps sending above the rate feeds its own estimate and
stays above the limit for as long as it keeps sending: "blocked forever", where the sliding
counter that counts only admitted hits lets it through at the rate.
"""

from __future__ import annotations

import math

import numpy as np

from simulator.algorithms.base import NEVER, Reference
from simulator.algorithms.sliding_counter import SlidingCounter
from simulator.records import Decision

__all__ = ["SlidingCounterAll", "SlidingCounterAllRef"]


class SlidingCounterAllRef(Reference):
    name = "sliding_counter_all"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        w, limit = self.window_ms, self.limit
        idx, elapsed = divmod(now_ms, w)
        cur = self.counts.get((client, idx), 0)
        prev = self.counts.get((client, idx - 1), 0)
        estimate = cur + prev * (w - elapsed) / w  # same operations, same order as the Lua
        reset = w - elapsed

        def reset_for(c: int) -> int:
            # the grid end, unless a request of cost 1 would still be refused there
            if c + prev * (w - elapsed) / w < limit:
                wait = 0
            elif c < limit:
                wait = math.floor((w * prev - (limit - c) * w) / prev) + 1 - elapsed
            else:
                wait = reset + math.floor((w * c - limit * w) / c) + 1
            return max(reset, wait)

        room = limit - cost + 1
        if cost > limit:  # never admitted, so not counted
            left = max(0, math.ceil(limit - estimate))
            return Decision(False, estimate, limit, left, reset_for(cur), NEVER)
        counted = cur + cost  # admitted or not, it counts
        self.counts[(client, idx)] = counted
        left = max(0, math.ceil(limit - (estimate + cost)))
        if estimate < room:
            return Decision(True, estimate, limit, left, reset_for(counted), 0)
        if counted < room:
            wait = math.floor((w * prev - (room - counted) * w) / prev) + 1 - elapsed
        else:
            wait = reset + math.floor((w * counted - room * w) / counted) + 1
        return Decision(False, estimate, limit, left, reset_for(counted), wait)


def bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, counts = [False] * len(tl), [0.0] * len(tl)
    last, idx_cur, cur, prev = None, 0, 0, 0
    for i, now in enumerate(tl):
        idx, elapsed = divmod(now, w)
        if cl[i] != last:
            last, idx_cur, cur, prev = cl[i], idx, 0, 0
        elif idx != idx_cur:
            prev = cur if idx == idx_cur + 1 else 0
            idx_cur, cur = idx, 0
        estimate = cur + prev * (w - elapsed) / w
        counts[i] = estimate
        k = kl[i]
        if k <= limit:
            allowed[i] = estimate < limit - k + 1
            cur += k
    return np.array(allowed, dtype=bool), np.array(counts, dtype="float64")


class SlidingCounterAll(SlidingCounter):
    """Sliding window counter whose refused hits count too (Kong's): the sliding counter's keys
    and calls, under a prefix of its own, with a script that counts every hit."""

    name = "sliding_counter_all"
    label = "Sliding counter, refusals counted (Kong)"
    colour = "#393b79"
    scripts = ("sliding_counter_all",)
    reference = SlidingCounterAllRef
    bulk = staticmethod(bulk)
    memory = None  # not weighed: its keys are the sliding counter's
    prefix = "rl:sca"
