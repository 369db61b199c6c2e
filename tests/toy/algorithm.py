"""A fixed window on the clock grid that counts admitted requests only: the toy algorithm.

It is what a contributor writes when adding an algorithm (CONTRIBUTING.md, "Adding an
algorithm"): this module beside its ``toy.lua``, and one registry line (in ``toy/registered.py``).
It offers none of the optional abilities (no batch template, no bulk kernel, no server time), so
the tests that need one skip it and say which.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.algorithms.base import NEVER, Limiter, Reference
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["Toy", "ToyRef"]


class ToyRef(Reference):
    """The script's twin: admitted cost per (client, grid cell)."""

    name = "toy"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        w, limit = self.window_ms, self.limit
        key = (client, now_ms // w)
        reset_ms = w - now_ms % w
        count = self.counts.get(key, 0)
        if cost > limit:
            return Decision(False, float(count), limit, limit - count, reset_ms, NEVER)
        if count + cost > limit:
            return Decision(False, float(count), limit, limit - count, reset_ms, reset_ms)
        self.counts[key] = count = count + cost
        return Decision(True, float(count), limit, limit - count, reset_ms, 0)


class Toy(Limiter):
    """A fixed window that counts admitted requests only."""

    name = "toy"
    label = "Admitted-only window (toy)"
    colour = "#d6616b"  # the colour rule: a colour, far from every other and every role's
    scripts = ("toy",)
    reference = ToyRef

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:toy:{hash_tag(client)}:{now_ms // self.window_ms}",)
