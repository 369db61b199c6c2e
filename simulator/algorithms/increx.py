"""Redis 8.8's own limiter primitive: ``INCREX``, a bounded increment that can set its own expiry.

``INCREX key BYINT cost UBOUND limit PX window_ms ENX`` adds the request's cost to a counter only if
the sum stays within ``limit``, and sets the counter's expiry only when it has none: one command
is a first-hit fixed window (the window starts at a client's first admitted hit and *is* the
counter's TTL), with refused hits not counted: decision for decision EchoMQ's script. With
``PXAT`` at the next grid seam and the grid cell in the key it is the clock-grid window, except
that a refused hit is not counted (the Lua fixed window counts it, so after a refused costly
request a cheaper one may still pass here and not there).

There is no script: the call *is* the command (:func:`~simulator.calls.native`), one operation
per decision. The reply is ``[counter, added]``, which says whether the hit was admitted and what
the counter holds, and not when the window ends: ``reset_ms`` is -1 ("not said") and a refusal's
``retry_after_ms`` is the longest wait there can be: the window and 1 ms for the first-hit
counter (a key is still there at its expiry instant, gone 1 ms later), the window for the grid
(the next cell's key is a new one at the seam). A request that costs more than the
limit is never sent to INCREX: the limiter reads the counter (``GET``) and refuses it for good.
Valkey 9.1 and Redis 7 have no INCREX; a run there says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.algorithms.base import NEVER, Limiter, Reference, ServerTime, cost_field
from simulator.algorithms.echomq import bulk as first_hit_bulk
from simulator.calls import Call, Script, native
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["IncrexFirstHit", "IncrexGrid", "IncrexFirstHitRef", "IncrexGridRef"]


def _decision(reply: Any, limit: int, longest_wait_ms: int) -> Decision:
    """One reply: INCREX's ``[counter, added]``, or GET's counter for a cost never admitted."""
    if not isinstance(reply, list | tuple):
        counter = int(reply or 0)
        return Decision(False, float(counter), limit, max(0, limit - counter), -1, NEVER)
    counter, added = int(reply[0]), int(reply[1])
    if added:
        return Decision(True, float(counter), limit, limit - counter, -1, 0)
    return Decision(False, float(counter), limit, max(0, limit - counter), -1, longest_wait_ms)


class IncrexFirstHitRef(Reference):
    """The counter and its expiry per client, as INCREX keeps them (gone once now is past it)."""

    name = "increx"
    #: A refused client's longest wait past the window: the counter is still there at its
    #: expiry instant and gone 1 ms later (on the grid, the seam starts a new key: 0).
    after_expiry_ms = 1

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counters: dict[str, tuple[int, int]] = {}  # client -> (count, expire_at_ms)

    def _cell(self, client: str, now_ms: int) -> tuple[str, int]:
        return client, now_ms + self.window_ms  # the key, and its expiry if this hit creates it

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        limit, w = self.limit, self.window_ms
        key, expiry = self._cell(client, now_ms)
        count, expire_at = self.counters.get(key, (0, -1))
        if expire_at != -1 and expire_at < now_ms:
            count, expire_at = 0, -1
        if cost > limit:
            return Decision(False, float(count), limit, max(0, limit - count), -1, NEVER)
        if count + cost > limit:
            wait = w + self.after_expiry_ms
            return Decision(False, float(count), limit, max(0, limit - count), -1, wait)
        count += cost
        if expire_at == -1:
            expire_at = expiry
        self.counters[key] = (count, expire_at)
        return Decision(True, float(count), limit, limit - count, -1, 0)


class IncrexGridRef(IncrexFirstHitRef):
    """One counter per client and grid cell, expiring at the cell's end."""

    name = "increx_grid"
    after_expiry_ms = 0

    def _cell(self, client: str, now_ms: int) -> tuple[str, int]:
        idx = now_ms // self.window_ms
        return f"{idx}:{client}", (idx + 1) * self.window_ms


def grid_bulk(
    c: np.ndarray, t: np.ndarray, limit: int, w: int, cost: np.ndarray | None = None, params=None
) -> tuple[np.ndarray, np.ndarray]:
    """The clock-grid counter of admitted costs only, request by request."""
    cl, cells = c.tolist(), (t // w).tolist()
    kl = [1] * len(cl) if cost is None else cost.tolist()
    allowed, counts = [False] * len(cl), [0.0] * len(cl)
    last, count = None, 0
    for i, key in enumerate(zip(cl, cells, strict=True)):
        if key != last:
            last, count = key, 0
        k = kl[i]
        if count + k <= limit:
            count += k
            allowed[i] = True
        counts[i] = count
    return np.array(allowed, dtype=bool), np.array(counts, dtype="float64")


class IncrexFirstHit(ServerTime, Limiter):
    """``INCREX key BYINT cost UBOUND limit PX window ENX``: the first-hit window in one command."""

    name = "increx"
    counted_window = "first_hit"
    label = "INCREX (first hit, Redis 8.8)"
    colour = "#8c6d31"
    commands = ("INCREX", "GET")
    reference = IncrexFirstHitRef
    bulk = staticmethod(first_hit_bulk)
    after_expiry_ms = IncrexFirstHitRef.after_expiry_ms

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:ix:{hash_tag(client)}",)

    def expiry(self, now_ms: int) -> tuple[Any, ...]:
        return ("PX", self.window_ms, "ENX")

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return ("BYINT", cost, "UBOUND", self.limit, *self.expiry(now_ms))

    def call(
        self, client: str, now_ms: int, cost: int = 1
    ) -> tuple[Script, Sequence[str], Sequence[Any]]:
        keys = self.keys(client, now_ms)
        if cost > self.limit:  # never admitted: read the counter, add nothing
            return native("GET"), keys, ()
        return self.script, keys, self.args(client, now_ms, cost)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        return self.parse(self.backend.call(*self.call(client, now_ms, cost)))

    def parse(self, reply: Sequence[Any]) -> Decision:  # type: ignore[override]
        return _decision(reply, self.limit, self.window_ms + self.after_expiry_ms)

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        keys = [f"rl:ix:{tag}" for tag in map(hash_tag, clients)]
        limit, w = str(self.limit), str(self.window_ms)
        return 1, [keys, "BYINT", cost_field(costs), "UBOUND", limit, "PX", w, "ENX"]

    def batch(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None = None
    ) -> Sequence[Call]:
        """The commands of several requests, packed from a template (:meth:`fields`) unless one
        costs more than the limit (that one is a ``GET``): then one by one."""
        if costs is not None and max(costs, default=0) > self.limit:
            return self.calls(clients, t_ms, costs)
        return super().batch(clients, t_ms, costs)


class IncrexGrid(IncrexFirstHit):
    """``INCREX`` with ``PXAT`` at the next grid seam, the cell in the key: the clock-grid window
    whose refused hits are not counted."""

    name = "increx_grid"
    counted_window = "grid"
    label = "INCREX (clock grid, Redis 8.8)"
    colour = "#1b9e77"  # the colour rule: "#843c39" was a Delta E of 12 from the split role
    reference = IncrexGridRef
    bulk = staticmethod(grid_bulk)
    after_expiry_ms = IncrexGridRef.after_expiry_ms

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:ixg:{hash_tag(client)}:{now_ms // self.window_ms}",)

    def expiry(self, now_ms: int) -> tuple[Any, ...]:
        return ("PXAT", (now_ms // self.window_ms + 1) * self.window_ms)

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        w = self.window_ms
        cells = zip(map(hash_tag, clients), t_ms, strict=True)
        keys = [f"rl:ixg:{tag}:{t // w}" for tag, t in cells]
        seams = [str((t // w + 1) * w) for t in t_ms]
        return 1, [keys, "BYINT", cost_field(costs), "UBOUND", str(self.limit), "PXAT", seams]
