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

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import simpy

from simulator.backends import Backend, FakeRedisBackend
from simulator.engine.model import run_id_for
from simulator.studies import telemetry
from simulator.studies.dequeue_budgets import LocalBudget, ServerBudget, SplitBudget, WorkerDied
from simulator.studies.queue_floor import Dequeue, Floor, Job
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
    floor = Floor(s, env, backend)
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


def _job_frame(ident: dict[str, Any], jobs: Sequence[Job]) -> pd.DataFrame:
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


def _dequeue_frame(ident: dict[str, Any], log: Sequence[Dequeue]) -> pd.DataFrame:
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
