"""EchoMQ queue budget: the limiter sits at the dequeue point, and K workers share it.

A chat game posts bot messages through queues. Producers enqueue jobs; K workers dequeue them.
Before running a job a worker asks the server ``get_rate_limit_ttl(q)`` (``echomq_ttl``): a positive
answer means the queue's budget is spent, and the job is deferred by exactly that PTTL - it becomes
visible again when the counter expires - and ``[:emq, :rate_limit, :hit]`` is emitted. Otherwise the
worker admits the job with ``echomq_admit``, which increments ``emq:{q}:limiter`` (arming its expiry
on the first increment only), and runs it for its service time. The counter lives in the server, so
the budget is one figure across every worker.

Three budgets can stand at the dequeue point: ``server`` (the real scripts, one counter for all
workers), ``local`` (each worker keeps its own in-process counter with the same max: the pure-Python
:class:`~simulator.algorithms.echomq.EchoMQRef`) and ``split`` (INCR and PEXPIRE sent as two commands, the
non-atomic admit a worker can die in the middle of). Two queue layouts: ``shared`` (every room's jobs
on one queue under one budget) and ``per_room`` (one queue and one budget per room).

Everything runs on the virtual clock: the SimPy environment counts whole milliseconds and the fake
server's expiry follows it. Each run gives a job frame and a dequeue frame (explicit dtypes); the
measures in :mod:`simulator.studies.queue_studies` turn them into the figures: admitted per window,
latency, deferrals, wasted dequeues.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd
import simpy

from simulator.backends import Backend, FakeRedisBackend
from simulator.engine.model import run_id_for
from simulator.engine.traffic import poisson_gaps
from simulator.studies import telemetry
from simulator.studies.dequeue_budgets import LocalBudget, ServerBudget, SplitBudget, WorkerDied
from simulator.studies.queue_scenario import SHARED_QUEUE, QueueScenario, Room

__all__ = [
    "Room",
    "QueueScenario",
    "QueueRun",
    "WorkerDied",
    "ServerBudget",
    "SplitBudget",
    "LocalBudget",
    "run",
    "run_many",
    "sweep",
    "JOB_DTYPES",
    "DEQUEUE_DTYPES",
    "SHARED_QUEUE",
]


# --- the model --------------------------------------------------------------------------------
JOB_DTYPES: dict[str, str] = {
    "run_id": "string",
    "label": "string",
    "design": "string",
    "limiter": "string",
    "workers": "int64",
    "job_id": "int64",
    "room": "string",
    "queue": "string",
    "enqueued_ms": "int64",
    "started_ms": "Int64",  # <NA>: never admitted
    "done_ms": "Int64",
    "wait_ms": "Int64",  # started - enqueued
    "latency_ms": "Int64",  # done - enqueued
    "dequeues": "int64",
    "deferrals": "int64",
    "outcome": "string",  # done | running | pending | dropped | lost
}
DEQUEUE_DTYPES: dict[str, str] = {
    "run_id": "string",
    "label": "string",
    "design": "string",
    "limiter": "string",
    "workers": "int64",
    "t_ms": "int64",
    "worker": "int64",
    "queue": "string",
    "job_id": "int64",
    "action": "string",  # admit | defer_ttl | defer_admit | drop | lost
    "delay_ms": "int64",  # the deferral applied (0 unless deferred)
    "window_end_ms": "Int64",  # admitted: when that budget window ends (<NA>: no expiry)
}


@dataclass(frozen=True)
class QueueRun:
    scenario: QueueScenario
    jobs: pd.DataFrame
    dequeues: pd.DataFrame
    events: pd.DataFrame  # telemetry, when record_events=True (else empty)


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


#: The budget every worker shares, per limiter; a limiter not here (``local``) gives each worker
#: a :class:`LocalBudget` of its own.
SHARED_BUDGETS: dict[str, type[ServerBudget]] = {"server": ServerBudget, "split": SplitBudget}


@dataclass
class _Job:
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
_Dequeue = tuple[int, int, str, int, str, int, int | None]


class _Floor:
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
            _Job(room, s.queue_of(room), t) for room, t in zip(rooms, t_arr.tolist(), strict=True)
        ]
        self.log: list[_Dequeue] = []
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
        budget: Any = (
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
        self, budget: Any, wid: int, queue: str, job: int
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


def run(
    scenario: QueueScenario, backend: Backend | None = None, record_events: bool = False
) -> QueueRun:
    """Play ``scenario``; with ``record_events`` the telemetry hits also land in ``events``."""
    s = scenario
    env = simpy.Environment()
    if backend is None and s.limiter != "local":
        backend = FakeRedisBackend()
    if backend is not None:
        backend.follow(lambda: env.now)
    floor = _Floor(s, env, backend)
    recorder = telemetry.Recorder()
    if record_events:
        telemetry.attach(telemetry.RATE_LIMIT_HIT, recorder)
    try:
        env.process(floor.producer())
        for wid in range(s.workers):
            env.process(floor.worker(wid))
        env.run(until=s.duration_ms + s.drain_ms)
    finally:
        if record_events:
            telemetry.detach(telemetry.RATE_LIMIT_HIT, recorder)
    ident = {
        "run_id": run_id_for("queue_budget", asdict(s)),
        "label": s.label,
        "design": s.design,
        "limiter": s.limiter,
        "workers": s.workers,
    }
    return QueueRun(
        s, _job_frame(ident, floor.jobs), _dequeue_frame(ident, floor.log), recorder.frame()
    )


def _job_frame(ident: dict[str, Any], jobs: Sequence[_Job]) -> pd.DataFrame:
    """One row per job (:data:`JOB_DTYPES`): its times, waits, dequeues and outcome."""
    n = len(jobs)
    st = pd.array([j.started_ms for j in jobs], dtype="Int64")
    dn = pd.array([j.done_ms for j in jobs], dtype="Int64")
    enq = pd.array([j.enqueued_ms for j in jobs], dtype="Int64")
    return pd.DataFrame(
        {
            **{k: [v] * n for k, v in ident.items()},
            "job_id": np.arange(n, dtype="int64"),
            "room": [j.room for j in jobs],
            "queue": [j.queue for j in jobs],
            "enqueued_ms": enq,
            "started_ms": st,
            "done_ms": dn,
            "wait_ms": st - enq,
            "latency_ms": dn - enq,
            "dequeues": [j.dequeues for j in jobs],
            "deferrals": [j.deferrals for j in jobs],
            "outcome": [j.outcome.value for j in jobs],
        },
        columns=list(JOB_DTYPES),
    ).astype(JOB_DTYPES)


def _dequeue_frame(ident: dict[str, Any], log: Sequence[_Dequeue]) -> pd.DataFrame:
    """One row per dequeue (:data:`DEQUEUE_DTYPES`), in the order the workers made them."""
    cols = ["t_ms", "worker", "queue", "job_id", "action", "delay_ms", "window_end_ms"]
    deq = pd.DataFrame(log, columns=cols)
    deq["window_end_ms"] = pd.array(deq["window_end_ms"].tolist(), dtype="Int64")
    for k, v in reversed(ident.items()):
        deq.insert(0, k, [v] * len(deq))
    return deq.astype(DEQUEUE_DTYPES)


def run_many(scenarios: Sequence[QueueScenario]) -> QueueRun:
    """Several runs, frames concatenated (each run on its own fresh fake server)."""
    runs = [run(s) for s in scenarios]
    cat = lambda frames: pd.concat(frames, ignore_index=True)  # noqa: E731
    return QueueRun(
        scenarios[0],
        cat([r.jobs for r in runs]),
        cat([r.dequeues for r in runs]),
        cat([r.events for r in runs]),
    )


def sweep(base: QueueScenario, **grid: Sequence[Any]) -> list[QueueScenario]:
    """``sweep(base, workers=[1, 2], limiter=["server", "local"])``: the product as scenarios."""
    out = [(base, "")]
    for name, values in grid.items():
        shown = name not in ("design", "limiter", "workers")
        out = [
            (replace(s, **{name: v}), tag + (f" {name}={v}" if shown else ""))
            for s, tag in out
            for v in values
        ]
    scenarios = []
    for s, tag in out:
        fresh = replace(s, label="")  # the default label names design, limiter and K
        scenarios.append(replace(fresh, label=fresh.label + tag))
    return scenarios
