"""Clock-aligned fixed window: the key holds the grid cell ``floor(now / window)``.

Every client's windows start at the same instants; every hit is counted (by its cost), refused
ones too, and the counter expires one window after its first hit. At a seam a client can get ``2 x limit``
through in a moment: the limit of the window ending and the limit of the one starting.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simulator.algorithms.base import NEVER, Limiter, MemoryModel, Reference, cost_field
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["FixedWindow", "FixedWindowRef"]


class FixedWindowRef(Reference):
    name = "fixed_window"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        w, limit = self.window_ms, self.limit
        key = (client, now_ms // w)
        reset = w - now_ms % w
        if cost > limit:  # never admitted, so not counted
            count = self.counts.get(key, 0)
            return Decision(False, float(count), limit, max(0, limit - count), reset, NEVER)
        count = self.counts.get(key, 0) + cost
        self.counts[key] = count
        if count <= limit:
            return Decision(True, float(count), limit, limit - count, reset, 0)
        return Decision(False, float(count), limit, 0, reset, reset)


def bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    """No loop at all: a request's count is its position in its (client, grid cell) group (with
    costs: the running sum of its group's costs, those above the limit left out)."""
    cell = t // w
    new = np.ones(len(t), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (cell[1:] != cell[:-1])
    starts = np.flatnonzero(new)
    group_start = starts[np.cumsum(new) - 1]
    if cost is None:
        count = (np.arange(len(t)) - group_start + 1).astype("float64")  # every hit counts
        return count <= limit, count
    counted = np.where(cost <= limit, cost, 0).astype("int64")
    running = np.cumsum(counted)
    count = (running - running[group_start] + counted[group_start]).astype("float64")
    return (count <= limit) & (cost <= limit), count


class FixedWindow(Limiter):
    """Clock-aligned fixed window: the key holds ``floor(now / window)``."""

    name = "fixed_window"
    counted_window = "grid"
    label = "Fixed window (clock grid)"
    colour = "#d62728"
    scripts = ("fixed_window",)
    reference = FixedWindowRef
    bulk = staticmethod(bulk)
    # a counter is a key name and an 8-byte integer
    memory = MemoryModel(lambda limit, key: key + 8, states=("steady", "seam"))

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:fw:{hash_tag(client)}:{now_ms // self.window_ms}",)

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        w = self.window_ms
        cells = zip(map(hash_tag, clients), t_ms, strict=True)
        keys = [f"rl:fw:{tag}:{t // w}" for tag, t in cells]
        return 1, [keys, list(map(str, t_ms)), str(w), str(self.limit), cost_field(costs)]
