"""The budgets that can stand at a queue's dequeue point, each with ``ttl`` and ``admit``.

``server``: the real scripts, ``echomq_ttl`` to read and ``echomq_admit`` to spend, one counter
per queue in the server for every worker. ``split``: the same counter with INCR and PEXPIRE sent
as two commands, a step a worker can die in the middle of. ``local``: a counter inside each
worker (the pure-Python EchoMQ window), so K workers spend K budgets.
"""

from __future__ import annotations

from simulator.algorithms import EchoMQ, EchoMQRef, echomq_keys
from simulator.backends import Backend
from simulator.records import Decision

__all__ = ["WorkerDied", "ServerBudget", "SplitBudget", "LocalBudget"]


class WorkerDied(Exception):
    """The worker process stopped in the middle of its admit step."""


class ServerBudget:
    """The real scripts: ``echomq_ttl`` to read, ``echomq_admit`` to spend; one counter per queue."""

    def __init__(self, backend: Backend, max_: int, window_ms: int, crash_at_ms: int | None = None):
        self.backend, self.max, self.window_ms = backend, max_, window_ms
        self.limiter = EchoMQ(backend, max_, window_ms)
        self.crash_at_ms = crash_at_ms

    def ttl(self, queue: str, now_ms: int) -> int:
        return self.limiter.rate_limit_ttl(queue, now_ms)

    def _dies(self, now_ms: int) -> bool:
        if self.crash_at_ms is not None and now_ms >= self.crash_at_ms:
            self.crash_at_ms = None
            return True
        return False

    def admit(self, queue: str, now_ms: int) -> Decision:
        decision = self.limiter.decide(queue, now_ms)
        # The script is atomic: the earliest a worker can die is after it returned.
        if decision.allowed and decision.count == 1 and self._dies(now_ms):
            raise WorkerDied(queue)
        return decision


class SplitBudget(ServerBudget):
    """The non-atomic admit: GET, INCR and PEXPIRE as separate commands (do not do this)."""

    def admit(self, queue: str, now_ms: int) -> Decision:
        counter, _ = echomq_keys(queue)
        clock = getattr(self.backend, "clock", None)
        if clock is not None:
            clock.activate()
        r, cap = self.backend.client, self.max
        live = int(r.get(counter) or 0)
        if live >= cap:
            ttl = int(r.pttl(counter))
            return Decision(False, float(live), cap, 0, ttl, ttl)
        count = int(r.incr(counter))
        if count == 1:
            if self._dies(now_ms):
                raise WorkerDied(queue)  # INCR is done, PEXPIRE never will be
            r.pexpire(counter, self.window_ms)
        return Decision(True, float(count), cap, cap - count, int(r.pttl(counter)), 0)


class LocalBudget:
    """One worker's in-process counter with the same max (the pure-Python EchoMQ window)."""

    def __init__(self, max_: int, window_ms: int) -> None:
        self.ref = EchoMQRef(max_, window_ms)

    def ttl(self, queue: str, now_ms: int) -> int:
        count, expire_at = self.ref.counters.get(queue, (0, -1))
        if expire_at >= now_ms and count >= self.ref.limit:
            return max(0, expire_at - now_ms)
        return 0

    def admit(self, queue: str, now_ms: int) -> Decision:
        return self.ref.decide(queue, now_ms)
