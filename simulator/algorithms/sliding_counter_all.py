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
from simulator.algorithms.sliding_counter import Cells, SlidingCounter
from simulator.records import Decision

__all__ = ["SlidingCounterAll", "SlidingCounterAllRef"]


class SlidingCounterAllRef(Reference):
    name = "sliding_counter_all"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        limit = self.limit
        at = Cells(self.counts, client, now_ms, self.window_ms, limit)
        estimate, cur, room = at.estimate, at.cur, limit - cost + 1
        if cost > limit:  # never admitted, so not counted
            left = max(0, math.ceil(limit - estimate))
            return Decision(False, estimate, limit, left, at.reset_for(cur), NEVER)
        counted = cur + cost  # admitted or not, it counts
        self.counts[(client, at.idx)] = counted
        left = max(0, math.ceil(limit - (estimate + cost)))
        if estimate < room:
            return Decision(True, estimate, limit, left, at.reset_for(counted), 0)
        return Decision(False, estimate, limit, left, at.reset_for(counted), at.wait(counted, room))


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
