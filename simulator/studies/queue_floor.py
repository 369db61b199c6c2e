"""The dequeue floor of a queue-budget run: the broker's queues, the jobs, and K workers.

Producers put each job on its room's queue (or the one shared queue) at its arrival time; a
worker takes the oldest visible job, drops it if it waited past ``stale_after_ms``, else asks
the budget: the TTL first (a positive PTTL defers the job by exactly that), then the admit (a
refusal defers it by the retry-after). An admitted job runs for its service time. A worker that
dies in the middle of a split admit loses its job and stops. Every dequeue is logged; the run
(:func:`simulator.studies.queue_budget.run`) turns the jobs and the log into frames.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import simpy

from simulator.backends import Backend
from simulator.engine.traffic import poisson_gaps
from simulator.records import Decision
from simulator.studies import telemetry
from simulator.studies.dequeue_budgets import LocalBudget, ServerBudget, SplitBudget, WorkerDied
from simulator.studies.queue_scenario import SHARED_QUEUE, QueueScenario

__all__ = ["Action", "Budget", "Outcome", "SHARED_BUDGETS", "Floor", "Job", "Dequeue"]


class _Broker:
    """Queues of job ids ordered by (visible_at_ms, job_id): oldest visible job first."""

    def __init__(self, env: simpy.Environment, queues: Sequence[str]) -> None:
        self.env, self.names = env, list(queues)
        self.heaps: dict[str, list[tuple[int, int]]] = {q: [] for q in self.names}
        self.turn = 0  # round robin over queues
        self.signal = env.event()

    def put(self, queue: str, visible_ms: int, job_id: int) -> None:
        heapq.heappush(self.heaps[queue], (visible_ms, job_id))
        if not self.signal.triggered:
            self.signal.succeed()
        self.signal = self.env.event()

    def take(self, now_ms: int) -> tuple[str, int] | None:
        n = len(self.names)
        for i in range(n):
            q = self.names[(self.turn + i) % n]
            heap = self.heaps[q]
            if heap and heap[0][0] <= now_ms:
                self.turn = (self.turn + i + 1) % n
                return q, heapq.heappop(heap)[1]
        return None

    def next_visible_ms(self) -> int | None:
        heads = [h[0][0] for h in self.heaps.values() if h]
        return min(heads) if heads else None


def _arrivals(scenario: QueueScenario) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times (int ms) and room index of every job, in time order; one rng per room."""
    seeds = np.random.SeedSequence(scenario.seed).spawn(len(scenario.rooms))
    times, rooms = [], []
    for i, (room, seed) in enumerate(zip(scenario.rooms, seeds, strict=True)):
        if room.rate_per_s == 0:
            continue
        rng = np.random.default_rng(seed)
        t = poisson_gaps(rng, 1000.0 / room.rate_per_s, scenario.duration_ms)
        t = np.floor(t).astype("int64")
        times.append(t)
        rooms.append(np.full(len(t), i, dtype="int64"))
    if not times:
        return np.empty(0, "int64"), np.empty(0, "int64")
    t_all, r_all = np.concatenate(times), np.concatenate(rooms)
    order = np.lexsort((r_all, t_all))
    return t_all[order], r_all[order]


class Outcome(StrEnum):
    """Where a job stands when the run ends (the ``outcome`` column)."""

    PENDING = "pending"  # still queued, never admitted
    RUNNING = "running"  # admitted, its service not finished
    DONE = "done"
    DROPPED = "dropped"  # dequeued after ``stale_after_ms``: thrown away
    LOST = "lost"  # its worker died in the middle of the admit


class Action(StrEnum):
    """What a worker did with a job it dequeued (the ``action`` column)."""

    ADMIT = "admit"
    DEFER_TTL = "defer_ttl"  # the budget's TTL said spent before the admit was tried
    DEFER_ADMIT = "defer_admit"  # the admit itself refused
    DROP = "drop"
    LOST = "lost"


class Budget(Protocol):
    """What stands at the dequeue point: the wait before a queue's budget has room (0: it has
    some now), and the admit that spends it."""

    def ttl(self, queue: str, now_ms: int) -> int: ...

    def admit(self, queue: str, now_ms: int) -> Decision: ...


#: The budget every worker shares, per limiter; a limiter not here (``local``) gives each worker
#: a :class:`LocalBudget` of its own.
SHARED_BUDGETS: dict[str, type[ServerBudget]] = {"server": ServerBudget, "split": SplitBudget}


@dataclass
class Job:
    """One job as it moves through the queue: where it waits, when it ran, how often it came back."""

    room: str
    queue: str
    enqueued_ms: int
    started_ms: int | None = None
    done_ms: int | None = None
    dequeues: int = 0
    deferrals: int = 0
    outcome: Outcome = Outcome.PENDING


#: A worker's dequeue: (t_ms, worker, queue, job_id, action, delay_ms, window_end_ms).
Dequeue = tuple[int, int, str, int, str, int, int | None]


class Floor:
    """The dequeue floor of one run: producers put jobs on the broker's queues, K workers take
    them, ask the budget and run, defer, drop or lose each one; every dequeue is logged."""

    def __init__(self, s: QueueScenario, env: simpy.Environment, backend: Backend | None) -> None:
        self.s, self.env = s, env
        queues = [SHARED_QUEUE] if s.design == "shared" else [r.name for r in s.rooms]
        self.broker = _Broker(env, queues)
        t_arr, r_arr = _arrivals(s)
        self.t_arr = t_arr
        rooms = [s.rooms[i].name for i in r_arr.tolist()]
        self.jobs = [
            Job(room, s.queue_of(room), t) for room, t in zip(rooms, t_arr.tolist(), strict=True)
        ]
        self.log: list[Dequeue] = []
        self.hit = telemetry.event(telemetry.RATE_LIMIT_HIT)
        kind = SHARED_BUDGETS.get(s.limiter)
        # one budget for all workers; None: each keeps a LocalBudget
        self.shared = (
            kind(backend, s.max_per_window, s.window_ms, s.crash_at_ms)
            if kind is not None and backend is not None
            else None
        )

    def producer(self) -> Generator[simpy.Event, Any, None]:
        """Each job appears on its room's queue at its arrival time."""
        env = self.env
        for job, t in enumerate(self.t_arr.tolist()):
            if t > env.now:
                yield env.timeout(t - env.now)
            self.broker.put(self.jobs[job].queue, t, job)

    def worker(self, wid: int) -> Generator[simpy.Event, Any, None]:
        """Take the oldest visible job, drop it if stale, else ask the budget: run it, or defer
        it by the TTL (or the admit's retry-after); a worker that dies in the admit stops."""
        s, env = self.s, self.env
        budget: Budget = (
            self.shared if self.shared is not None else LocalBudget(s.max_per_window, s.window_ms)
        )
        while True:
            now = int(env.now)
            item = self.broker.take(now)
            if item is None:
                nxt = self.broker.next_visible_ms()
                yield (
                    self.broker.signal
                    if nxt is None
                    else self.broker.signal | env.timeout(nxt - now)
                )
                continue
            queue, job = item
            self.jobs[job].dequeues += 1
            if s.stale_after_ms is not None and now - self.jobs[job].enqueued_ms > s.stale_after_ms:
                self.jobs[job].outcome = Outcome.DROPPED
                self.log.append((now, wid, queue, job, Action.DROP.value, 0, None))
                continue
            delay, action = budget.ttl(queue, now), Action.DEFER_TTL
            if delay <= 0:
                try:
                    refused = yield from self._admit(budget, wid, queue, job)
                except WorkerDied:
                    return
                if refused is None:
                    continue
                now, delay = refused
                action = Action.DEFER_ADMIT
            self._defer(wid, queue, job, now, delay, action)

    def _admit(
        self, budget: Budget, wid: int, queue: str, job: int
    ) -> Generator[simpy.Event, Any, tuple[int, int] | None]:
        """The budget had room by its TTL: (after ``read_to_admit_ms``) admit and run the job,
        None; or the admit refused, (now, retry_after_ms). A worker that dies here loses the job
        and raises :class:`WorkerDied` on."""
        s, env = self.s, self.env
        now = int(env.now)
        if s.read_to_admit_ms:
            yield env.timeout(s.read_to_admit_ms)
            now = int(env.now)
        try:
            decision = budget.admit(queue, now)
        except WorkerDied:
            self.jobs[job].outcome = Outcome.LOST
            self.log.append((now, wid, queue, job, Action.LOST.value, 0, None))
            raise
        if not decision.allowed:
            return now, decision.retry_after_ms
        end = now + decision.reset_ms if decision.reset_ms >= 0 else None
        self.log.append((now, wid, queue, job, Action.ADMIT.value, 0, end))
        record = self.jobs[job]
        record.started_ms, record.outcome = now, Outcome.RUNNING
        if s.service_ms:
            yield env.timeout(s.service_ms)
        record.done_ms, record.outcome = int(env.now), Outcome.DONE
        return None

    def _defer(self, wid: int, queue: str, job: int, now: int, delay: int, action: Action) -> None:
        """Put the job back, visible again after the wait the budget gave (plus the pad), or after
        ``min_defer_ms`` when it gave none; the rate-limit hit is emitted."""
        s = self.s
        delay = delay + s.defer_pad_ms if delay > 0 else s.min_defer_ms
        self.jobs[job].deferrals += 1
        self.log.append((now, wid, queue, job, action.value, delay, None))
        if self.hit.handlers:
            self.hit.emit(queue, delay, now)
        self.broker.put(queue, now + delay, job)
