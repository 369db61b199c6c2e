"""Sliding window counter: two grid counters, the previous one weighted by its overlap.

The estimate ``cur + prev x (W - elapsed) / W`` assumes the previous window's requests were
spread evenly; when they were not, it decides differently from the exact log (how often, and by
how much, is the accuracy study's question). A request of cost ``c`` is admitted iff
``estimate + c - 1 < limit`` (for ``c = 1``: ``estimate < limit``) and adds ``c``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from simulator.algorithms.base import NEVER, Limiter, MemoryModel, Reference, cost_field
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["SlidingCounter", "SlidingCounterRef"]


class SlidingCounterRef(Reference):
    name = "sliding_counter"

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
        if cost <= limit and estimate < room:
            self.counts[(client, idx)] = cur + cost
            remaining = max(0, math.ceil(limit - (estimate + cost)))
            return Decision(True, estimate, limit, remaining, reset_for(cur + cost), 0)
        if cost > limit:
            wait = NEVER
        elif cur < room:
            wait = math.floor((w * prev - (room - cur) * w) / prev) + 1 - elapsed
        else:
            wait = reset + math.floor((w * cur - room * w) / cur) + 1
        left = max(0, math.ceil(limit - estimate))  # a refusal counts nothing
        return Decision(False, estimate, limit, left, reset_for(cur), wait)


def bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, counts = [False] * len(tl), [0.0] * len(tl)
    last, idx_cur, cur, prev = None, 0, 0, 0  # idx_cur is set at the first request
    for i, now in enumerate(tl):
        idx, elapsed = divmod(now, w)
        if cl[i] != last:
            last, idx_cur, cur, prev = cl[i], idx, 0, 0
        elif idx != idx_cur:
            prev = cur if idx == idx_cur + 1 else 0
            idx_cur, cur = idx, 0
        estimate = cur + prev * (w - elapsed) / w  # same operations, same order as the Lua
        counts[i] = estimate
        k = kl[i]
        if k <= limit and estimate < limit - k + 1:
            cur += k
            allowed[i] = True
    return np.array(allowed, dtype=bool), np.array(counts, dtype="float64")


class SlidingCounter(Limiter):
    """Sliding window counter: current + previous grid window, weighted by overlap."""

    name = "sliding_counter"
    label = "Sliding window counter"
    colour = "#1f77b4"
    scripts = ("sliding_counter",)
    reference: ClassVar[type[Reference]] = SlidingCounterRef
    bulk = staticmethod(bulk)
    # two counters
    memory: ClassVar[MemoryModel | None] = MemoryModel(
        lambda limit, key: 2 * (key + 8), states=("steady", "seam"), windows=2
    )
    #: What its keys start with (a variant of it keeps its own).
    prefix: ClassVar[str] = "rl:sc"

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        tag, idx = hash_tag(client), now_ms // self.window_ms
        return (f"{self.prefix}:{tag}:{idx}", f"{self.prefix}:{tag}:{idx - 1}")

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        w = self.window_ms
        cells = list(zip(map(hash_tag, clients), [t // w for t in t_ms], strict=True))
        current = [f"{self.prefix}:{tag}:{idx}" for tag, idx in cells]
        previous = [f"{self.prefix}:{tag}:{idx - 1}" for tag, idx in cells]
        times, limit = list(map(str, t_ms)), str(self.limit)
        return 2, [current, previous, times, str(w), limit, cost_field(costs)]
