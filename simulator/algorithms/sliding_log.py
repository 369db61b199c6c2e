"""Sliding log: the exact answer, one sorted-set member per admitted request.

A request at ``t`` is admitted iff fewer than ``limit`` admitted requests lie in ``(t - W, t]``
(one of cost ``c``: iff ``c`` more still fit; it is logged as ``c`` members).
Exact, and the most expensive in memory: a client at its limit holds ``limit`` members.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.algorithms.base import (
    NEVER,
    Limiter,
    MemoryModel,
    Reference,
    cost_field,
    templated,
)
from simulator.calls import Batch, Call, Fields
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["SlidingLog", "SlidingLogRef"]


class SlidingLogRef(Reference):
    name = "sliding_log"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.logs: dict[str, deque[int]] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        w, limit = self.window_ms, self.limit
        log = self.logs.setdefault(client, deque())
        while log and log[0] <= now_ms - w:
            log.popleft()
        count = len(log)
        if count + cost <= limit:
            log.extend([now_ms] * cost)
            return Decision(True, float(count), limit, limit - count - cost, log[0] + w - now_ms, 0)
        reset = log[0] + w - now_ms if log else 0
        left = max(0, limit - count)  # a refusal logs nothing
        if cost > limit:
            return Decision(False, float(count), limit, left, reset, NEVER)
        return Decision(
            False, float(count), limit, left, reset, log[count + cost - limit - 1] + w - now_ms
        )


def bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, counts = [False] * len(tl), [0.0] * len(tl)
    last, log = None, deque[int]()
    for i, now in enumerate(tl):
        if cl[i] != last:
            last, log = cl[i], deque()
        edge = now - w
        while log and log[0] <= edge:
            log.popleft()
        n, k = len(log), kl[i]
        counts[i] = n
        if n + k <= limit:
            if k == 1:
                log.append(now)
            else:
                log.extend([now] * k)
            allowed[i] = True
    return np.array(allowed, dtype=bool), np.array(counts, dtype="float64")


class SlidingLog(Limiter):
    """Exact sliding window over a sorted set of admitted request times."""

    name = "sliding_log"
    label = "Sliding log (exact)"
    colour = "#2ca02c"
    scripts = ("sliding_log",)
    reference = SlidingLogRef
    bulk = staticmethod(bulk)
    # ``limit`` entries of an 8-byte score and a ~16-byte request id
    memory = MemoryModel(lambda limit, key: key + limit * (8 + 16), trailing=True, request_ids=True)

    def __init__(self, backend: Any, limit: int, window_ms: int) -> None:
        super().__init__(backend, limit, window_ms)
        self._seq = 0

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:sl:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        self._seq += 1  # unique member: two requests in one millisecond must both count
        return (now_ms, self.window_ms, self.limit, f"{now_ms}-{self._seq}", cost)

    def batch(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None = None
    ) -> Sequence[Call]:
        if not templated(type(self), "batch"):  # a subclass with calls of its own
            return Limiter.batch(self, clients, t_ms, costs)
        # The members' sequence numbers are taken now, so that the bytes and the calls (each
        # made only if asked for) carry the same ones.
        first, self._seq = self._seq + 1, self._seq + len(t_ms)
        members = lambda: [f"{t}-{k}" for k, t in enumerate(t_ms, first)]  # noqa: E731
        w, limit = self.window_ms, self.limit

        def to_fields() -> Fields:
            keys = [f"rl:sl:{tag}" for tag in map(hash_tag, clients)]
            times = list(map(str, t_ms))
            return 1, [keys, times, str(w), str(limit), members(), cost_field(costs)]

        def to_calls() -> list[Call]:
            weights = [1] * len(t_ms) if costs is None else costs
            return [
                (self.script, (f"rl:sl:{hash_tag(c)}",), (t, w, limit, m, k))
                for c, t, m, k in zip(clients, t_ms, members(), weights, strict=True)
            ]

        return Batch(self.script, len(t_ms), to_fields, to_calls)
