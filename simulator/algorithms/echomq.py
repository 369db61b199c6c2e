"""EchoMQ's first-hit window, as it budgets a queue at the dequeue point.

The window starts at a client's first hit and *is* the counter's TTL: ``INCR``, and ``PEXPIRE``
only on the first hit; the counter is gone once the server's clock passes its expiry. So this is
the one algorithm whose decisions follow the server's own clock (on the fake server, the
simulated one). Refused hits are not counted; an admitted one counts its cost. ``echomq_ttl`` is the worker's question before a
dequeue: how long to defer a job (0 = go ahead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.algorithms.base import (
    NEVER,
    Limiter,
    MemoryModel,
    Reference,
    ServerTime,
    cost_field,
)
from simulator.algorithms.scripts import load
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["EchoMQ", "EchoMQRef", "echomq_keys"]


def echomq_keys(queue: str) -> tuple[str, str]:
    tag = hash_tag(queue)
    return (f"emq:{tag}:limiter", f"emq:{tag}:meta")


class EchoMQRef(Reference):
    name = "echomq"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counters: dict[str, tuple[int, int]] = {}  # client -> (count, expire_at_ms)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        limit = self.limit
        count, expire_at = self.counters.get(client, (0, -1))
        if expire_at < now_ms:  # gone only once now is past expire-at
            count, expire_at = 0, -1
        if count + cost > limit:
            # the key lives through its expire-at: the budget is back one ms after (none: now)
            reset = expire_at - now_ms + 1 if count else 0
            left = max(0, limit - count)
            return Decision(
                False, float(count), limit, left, reset, NEVER if cost > limit else reset
            )
        was = count
        count += cost
        if was == 0:
            expire_at = now_ms + self.window_ms
        self.counters[client] = (count, expire_at)
        return Decision(True, float(count), limit, limit - count, expire_at - now_ms + 1, 0)


def bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, counts = [False] * len(tl), [0.0] * len(tl)
    last, count, expire_at = None, 0, -1
    for i, now in enumerate(tl):
        if cl[i] != last:
            last, count, expire_at = cl[i], 0, -1
        if expire_at < now:  # the counter is gone only once now is past its expiry
            count = 0
        k = kl[i]
        if count + k > limit:
            counts[i] = count
            continue
        if count == 0:
            expire_at = now + w
        count += k
        allowed[i], counts[i] = True, count
    return np.array(allowed, dtype=bool), np.array(counts, dtype="float64")


class EchoMQ(ServerTime, Limiter):
    """First-hit anchored window as EchoMQ budgets a queue; the window is the counter's TTL."""

    name = "echomq"
    counted_window = "first_hit"
    label = "Fixed window (first hit, EchoMQ)"
    colour = "#ff7f0e"
    scripts = ("echomq_admit", "echomq_ttl")
    # Per client: in a simulation each client id is a queue of its own (``emq:{client}:...``).
    # A budget shared by a queue's K workers is the queue studies' model, not a simulation's.
    per_client = True
    reference = EchoMQRef
    bulk = staticmethod(bulk)
    # the counter, and a small hash holding the budget (which never expires)
    memory = MemoryModel(lambda limit, key: (key + 8) + key + 3 + 8, states=("steady", "idle"))

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return echomq_keys(client)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return (now_ms, self.limit, self.window_ms, cost)

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        tags = list(map(hash_tag, clients))
        counters, metas = [f"emq:{t}:limiter" for t in tags], [f"emq:{t}:meta" for t in tags]
        times = list(map(str, t_ms))
        return 2, [counters, metas, times, str(self.limit), str(self.window_ms), cost_field(costs)]

    def rate_limit_ttl(self, queue: str, now_ms: int, max_: int | None = None) -> int:
        """``get_rate_limit_ttl(q, max)``: ms to defer a job, 0 to go ahead (max 0 = from meta)."""
        script = load("echomq_ttl")
        cap = self.limit if max_ is None else max_
        return int(self.backend.call(script, echomq_keys(queue), (now_ms, cap)))
