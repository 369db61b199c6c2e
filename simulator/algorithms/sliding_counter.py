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

__all__ = ["SlidingCounter", "SlidingCounterRef", "Cells"]


class Cells:
    """One client's two grid windows at ``now_ms``, as the script reads them: the counts, the
    estimate, and how long a count ``c`` keeps a request of room ``room`` refused."""

    __slots__ = ("idx", "elapsed", "cur", "prev", "estimate", "reset", "w", "limit")

    def __init__(
        self, counts: dict[tuple[str, int], int], client: str, now_ms: int, w: int, limit: int
    ):
        self.w, self.limit = w, limit
        self.idx, self.elapsed = divmod(now_ms, w)
        self.cur = counts.get((client, self.idx), 0)
        self.prev = counts.get((client, self.idx - 1), 0)
        # same operations, same order as the Lua
        self.estimate = self.cur + self.prev * (w - self.elapsed) / w
        self.reset = w - self.elapsed

    def wait(self, c: int, room: float) -> int:
        """Until the estimate over a count ``c`` falls below ``room``: within the next window
        while ``c`` alone is under it (the previous window's share fades), else past it too."""
        w, prev = self.w, self.prev
        if c < room:
            return math.floor((w * prev - (room - c) * w) / prev) + 1 - self.elapsed
        return self.reset + math.floor((w * c - room * w) / c) + 1

    def reset_for(self, c: int) -> int:
        """When a request comes back: 1 ms past the grid end, unless a request of cost 1 would
        still be refused there. At the end itself the count ``c`` still weighs fully and only
        the previous window's last share (``prev / w``) leaves, which brings back a request only
        when it was a whole one (or when nothing is counted)."""
        w, limit = self.w, self.limit
        back = self.reset + 1 if c > 0 and self.prev < w else self.reset
        if c + self.prev * (w - self.elapsed) / w < limit:
            return back
        return max(back, self.wait(c, limit))


class SlidingCounterRef(Reference):
    name = "sliding_counter"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        limit = self.limit
        at = Cells(self.counts, client, now_ms, self.window_ms, limit)
        estimate, cur, room = at.estimate, at.cur, limit - cost + 1
        if cost <= limit and estimate < room:
            self.counts[(client, at.idx)] = cur + cost
            remaining = max(0, math.ceil(limit - (estimate + cost)))
            return Decision(True, estimate, limit, remaining, at.reset_for(cur + cost), 0)
        wait = NEVER if cost > limit else at.wait(cur, room)
        left = max(0, math.ceil(limit - estimate))  # a refusal counts nothing
        return Decision(False, estimate, limit, left, at.reset_for(cur), wait)


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
    counted_window = "two_grids"
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
