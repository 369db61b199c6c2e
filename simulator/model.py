"""Run a scenario or replay a trace on the virtual clock, and get the decision log.

The SimPy environment counts milliseconds. The backend's clock follows ``env.now`` (on the
embedded fake server), each request is decided at ``floor(env.now)`` - the whole millisecond a
server would see - and every decision is appended to one log that becomes a DataFrame.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import simpy

from simulator.backends import Backend, FakeRedisBackend
from simulator.clients import process_for
from simulator.limiters import ALGORITHMS, Limiter
from simulator.records import Decision, DecisionLog
from simulator.scenario import BurstAt, Scenario

__all__ = ["simulate", "replay", "boundary_burst", "run_id_for"]


def run_id_for(*parts: object) -> str:
    """A short, deterministic id for a run (same inputs, same id)."""
    return hashlib.sha1(repr(parts).encode("utf-8")).hexdigest()[:12]


def _backend_for(env: simpy.Environment, backend: Backend | None) -> Backend:
    if backend is None:
        backend = FakeRedisBackend()
    backend.follow(lambda: env.now)
    return backend


def simulate(scenario: Scenario, backend: Backend | None = None) -> pd.DataFrame:
    """Run ``scenario`` and return its decision log (one row per request)."""
    env = simpy.Environment()
    backend = _backend_for(env, backend)
    limiter = ALGORITHMS[scenario.algorithm](backend, scenario.limit, scenario.window_ms)
    log = DecisionLog(run_id_for(scenario), scenario.seed, scenario.algorithm)
    decide, append = limiter.decide, log.append

    def ask(client: str) -> Decision:
        now_ms = math.floor(env.now)
        decision = decide(client, now_ms)
        append(client, now_ms, decision)
        return decision

    seeds = np.random.SeedSequence(scenario.seed).spawn(max(1, len(scenario.clients)))
    for spec, seed in zip(scenario.clients, seeds, strict=False):
        env.process(process_for(env, spec, ask, np.random.default_rng(seed)))
    env.run(until=scenario.duration_ms)
    return log.frame()


def _replay_process(
    env: simpy.Environment,
    t_ms: np.ndarray,
    clients: list[str],
    limiter: Limiter,
    log: DecisionLog,
    on_progress: Callable[[int], None] | None,
) -> Iterator[simpy.Event]:
    decide, append = limiter.decide, log.append
    for i, (t, client) in enumerate(zip(t_ms.tolist(), clients, strict=True)):
        if t > env.now:
            yield env.timeout(t - env.now)
        append(client, t, decide(client, t))
        if on_progress is not None and i % 1000 == 999:
            on_progress(1000)


def replay(
    trace: pd.DataFrame,
    algorithm: str,
    limit: int,
    window_ms: int,
    backend: Backend | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Replay a trace (columns ``t_ms``, ``client``) in time order, ties in trace order.

    Returns the decision log in the trace's own row order, with its index.
    """
    order = np.argsort(trace["t_ms"].to_numpy(), kind="stable")
    t_ms = np.floor(trace["t_ms"].to_numpy(dtype="float64")[order]).astype("int64")
    clients = trace["client"].astype(str).to_numpy()[order].tolist()
    env = simpy.Environment(initial_time=int(t_ms[0]) if len(t_ms) else 0)
    backend = _backend_for(env, backend)
    limiter = ALGORITHMS[algorithm](backend, limit, window_ms)
    log = DecisionLog(run_id_for("replay", algorithm, limit, window_ms, len(trace)), 0, algorithm)
    env.process(_replay_process(env, t_ms, clients, limiter, log, on_progress))
    env.run()
    frame = log.frame()
    frame.index = trace.index[order]
    return frame.sort_index()


def boundary_burst(
    algorithm: str,
    limit: int = 100,
    window_s: float = 60.0,
    first_s: float = 59.0,
    second_s: float = 61.0,
    per_burst: int | None = None,
    backend: Backend | None = None,
) -> pd.DataFrame:
    """The practice case: ``per_burst`` requests (default ``limit``) at each of two seconds."""
    n = limit if per_burst is None else per_burst
    scenario = Scenario(
        algorithm=algorithm,
        limit=limit,
        window_ms=round(window_s * 1000),
        duration_ms=max(first_s, second_s) * 1000 + 1,
        clients=(BurstAt("user", n=n, at_s=(first_s, second_s)),),
    )
    return simulate(scenario, backend)
