"""Run a scenario on the virtual clock, and get the decision log (a trace: :mod:`simulator.playback.run`).

The SimPy environment counts milliseconds. The backend's clock follows ``env.now`` (on the
embedded fake server), each request is decided at ``floor(env.now)`` - the whole millisecond a
server would see - and every decision is appended to one log that becomes a DataFrame.

On a real server (see :mod:`simulator.engine.realtime`) the same code runs: on simulated time for the
algorithms that take ``now_ms`` from their arguments, on real time for ``echomq``. If the server
goes away the run stops with a :class:`BackendError` naming the backend and the simulated time
reached, after handing every decision made so far to ``on_rows``.
"""

from __future__ import annotations

import gc
import hashlib
import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import simpy
import simpy.rt

from simulator.backends import Backend, BackendError, FakeRedisBackend, ScriptError
from simulator.engine.clients import arrivals, feeder, process_for, reacts
from simulator.engine.realtime import (
    ExpiryWatch,
    ServerClockWarning,
    environment_for,
    late_ms,
    needs_real_time,
)
from simulator.engine.scenario import Scenario
from simulator.engine.traffic import draw_costs
from simulator.records import Decision, DecisionLog, Row

__all__ = ["simulate_whole", "stopped_at", "run_id_for", "scenario_run_id", "Row"]


def run_id_for(*parts: object) -> str:
    """A short, deterministic id for a run (same inputs, same id)."""
    return hashlib.sha1(repr(parts).encode("utf-8")).hexdigest()[:12]


def scenario_run_id(scenario: Scenario) -> str:
    """The run id of ``scenario``: its algorithm's own parameters are part of it only where it
    has any, and the clients' costs only where some are not 1 (so older ids stay as they were)."""
    params = dict(scenario.params)
    costs = tuple(c.cost for c in scenario.clients)
    extra = ((params,) if params else ()) + ((costs,) if any(c != 1 for c in costs) else ())
    return run_id_for(scenario, *extra)


def stopped_at(
    exc: BackendError | ScriptError,
    backend: Backend,
    t_ms: int,
    t0: int,
    done: int,
    total: int | None = None,
) -> BackendError | ScriptError:
    """The same error, saying where the run stopped and how much of it was decided."""
    where = f"at simulated t_ms={t_ms} ({(t_ms - t0) / 1000:.3f} s into the run)"
    kind = type(exc)
    said = str(exc).rstrip(". ")
    of = "" if total is None else f" of {total}"
    error = kind(f"{said}; stopped {where} after {done}{of} decisions on {backend.name}")
    error.decided = done
    return error


def simulate_whole(
    scenario: Scenario,
    backend: Backend | None = None,
    on_rows: Callable[[list[Row]], None] | None = None,
    run_id: str | None = None,
    indices: Sequence[int] | None = None,
    instants: list[float] | None = None,
) -> pd.DataFrame:
    """Run ``scenario`` in this process (see :func:`simulator.engine.run.simulate`).

    A shard passes the whole run's ``run_id``, for each of its clients its position in the
    whole run (``indices``: the client's random generator), and a list that gets each
    decision's exact simulated instant (``instants``: how shards merge)."""
    backend = backend or FakeRedisBackend()
    policy = scenario.policy
    env = environment_for(backend, policy.algorithm)
    backend.follow(lambda: env.now)
    limiter = policy.limiter(backend)
    if run_id is None:
        run_id = scenario_run_id(scenario)
    log = DecisionLog(run_id, scenario.seed, scenario.algorithm)
    decide = limiter.decide
    # The log's columns, appended to directly: this is the hot path of every simulated request.
    clients, times, decisions, weights = log.clients, log.t_ms, log.decisions, log.costs
    late: list[float] = []
    realtime = needs_real_time(backend, policy.algorithm)
    watch = ExpiryWatch(scenario.window_ms) if not backend.virtual_time and not realtime else None

    def ask(client: str, cost: int = 1) -> Decision:
        now_ms = math.floor(env.now)
        if watch is not None:
            watch.start(now_ms)
        if realtime:
            late.append(late_ms(env))
        decision = decide(client, now_ms, cost)
        if watch is not None:
            watch.end(now_ms)
        if on_rows is not None:
            on_rows([(len(decisions), client, now_ms, decision, cost)])
        if instants is not None:
            instants.append(env.now)
        clients.append(client)
        times.append(now_ms)
        decisions.append(decision)
        weights.append(cost)
        return decision

    # The log grows by objects that never form cycles; the cyclic collector would scan them all
    # again and again (half of a run's time). It is off for the run and on again after it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _start_clients(env, scenario, ask, indices)
        if isinstance(env, simpy.rt.RealtimeEnvironment):
            env.sync()  # playing the clients ahead took wall time; the run starts now
        try:
            env.run(until=scenario.duration_ms)
        except (BackendError, ScriptError) as exc:
            raise stopped_at(exc, backend, math.floor(env.now), 0, len(log)) from exc
        frame = log.frame()
    finally:
        if collecting:
            gc.enable()
    if realtime:
        frame.attrs["late_ms"] = late
    if watch is not None and not watch.safe:
        warnings.warn(watch.message("the simulation"), ServerClockWarning, stacklevel=2)
    return frame


def _client_rng(seed: int, i: int) -> np.random.Generator:
    """Client ``i``'s generator: ``SeedSequence(seed).spawn(n)[i]``, made without the others."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))


def _cost_rng(seed: int, i: int) -> np.random.Generator:
    """The generator client ``i``'s costs are drawn from, apart from its arrivals."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, 1)))


def _start_clients(
    env: simpy.Environment,
    scenario: Scenario,
    ask: Callable[..., Decision],
    indices: Sequence[int] | None = None,
) -> None:
    """A process for each client that reacts; one feeder for all the others' requests.

    A played-ahead client with a cost mix draws its costs from a generator of their own (so its
    arrivals are those it has without costs); a reacting one draws them as it goes."""
    times: list[np.ndarray] = []
    costs: list[np.ndarray] = []
    owners: list[int] = []
    names: list[str] = []
    for i, spec in enumerate(scenario.clients):
        at = i if indices is None else indices[i]  # its position in the whole run
        rng = _client_rng(scenario.seed, at)
        if reacts(spec):
            env.process(process_for(env, spec, ask, rng))
            continue
        when = arrivals(spec, rng, scenario.duration_ms)
        if len(when):
            times.append(when)
            fixed = isinstance(spec.cost, int)
            costs.append(
                draw_costs(spec.cost, None if fixed else _cost_rng(scenario.seed, at), len(when))
            )
            owners.append(len(names))
            names.append(spec.name)
    if not times:
        return
    t_ms = np.concatenate(times)
    who = np.repeat(np.array(owners, dtype="int64"), [len(w) for w in times])
    cost = np.concatenate(costs)
    del times, costs
    order = np.argsort(t_ms, kind="stable")  # ties in client order, as the processes had them
    fed_cost = None if bool((cost == 1).all()) else cost[order]
    env.process(feeder(env, t_ms[order], who[order], names, ask, fed_cost))
