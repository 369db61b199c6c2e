"""Run a scenario on the virtual clock, and get the decision log (a trace: :mod:`simulator.playback.run`).

The SimPy environment counts milliseconds. The backend's clock follows ``env.now`` (on the
embedded fake server), each request is decided at ``floor(env.now)`` - the whole millisecond a
server would see - and every decision is appended to one log that becomes a DataFrame.

On a real server (see :mod:`simulator.engine.realtime`) the same code runs: on simulated time for the
algorithms that take ``now_ms`` from their arguments, on real time for ``echomq``. When no client
reacts to its answers, a real server gets the calls in pipelines instead, with the same rows
(:mod:`simulator.engine.pipelined`). If the server goes away the run stops with a
:class:`BackendError` naming the backend and the simulated time reached, after handing every
decision made so far to ``on_rows``.
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
from simulator.engine.pipelined import ONE_BY_ONE, PIPELINED, decide_pipelined
from simulator.engine.realtime import (
    ExpiryWatch,
    ServerClockWarning,
    environment_for,
    late_ms,
    runs_on_real_time,
)
from simulator.engine.scenario import Scenario
from simulator.engine.traffic import draw_costs
from simulator.records import Decision, DecisionLog, Row, frame_of

__all__ = ["simulate_whole", "pipelines_fit", "stopped_at", "run_id_for", "scenario_run_id", "Row"]


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
    pipelined: bool | None = None,
) -> pd.DataFrame:
    """Run ``scenario`` in this process (see :func:`simulator.engine.run.simulate`).

    A shard passes the whole run's ``run_id``, for each of its clients its position in the
    whole run (``indices``: the client's random generator), and a list that gets each
    decision's exact simulated instant (``instants``: how shards merge).

    ``pipelined``: decide in pipelines where the run allows it (:func:`pipelines_fit`); None
    (the default) does so on a real server, where it saves a round trip per decision. The
    frame's ``attrs["calls"]`` says which way the calls went."""
    backend = backend or FakeRedisBackend()
    policy = scenario.policy
    if run_id is None:
        run_id = scenario_run_id(scenario)
    if pipelined is None:
        pipelined = not backend.virtual_time
    if pipelined and pipelines_fit(scenario, backend, instants):
        return _simulate_pipelined(scenario, backend, on_rows, run_id, indices)
    env = environment_for(backend, policy.algorithm)
    backend.follow(lambda: env.now)
    limiter = policy.limiter(backend)
    log = DecisionLog(run_id, scenario.seed, scenario.algorithm)
    decide = limiter.decide
    # The log's columns, appended to directly: this is the hot path of every simulated request.
    clients, times, decisions, weights = log.clients, log.t_ms, log.decisions, log.costs
    late: list[float] = []
    realtime = runs_on_real_time(backend, policy)
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
    frame.attrs["calls"] = ONE_BY_ONE
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


def _played_ahead(
    scenario: Scenario,
    indices: Sequence[int] | None = None,
    env: simpy.Environment | None = None,
    ask: Callable[..., Decision] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray] | None:
    """The requests of the clients that never react, merged in time order: ``(t_ms, who, names,
    cost)`` (None when there are none). A client that reacts gets its process on ``env`` (with
    ``ask``) instead.

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
            if env is None or ask is None:
                raise ValueError(f"client {spec.name!r} reacts: it needs an environment")
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
        return None
    t_ms = np.concatenate(times)
    who = np.repeat(np.array(owners, dtype="int64"), [len(w) for w in times])
    cost = np.concatenate(costs)
    del times, costs
    order = np.argsort(t_ms, kind="stable")  # ties in client order, as the processes had them
    return t_ms[order], who[order], names, cost[order]


def _start_clients(
    env: simpy.Environment,
    scenario: Scenario,
    ask: Callable[..., Decision],
    indices: Sequence[int] | None = None,
) -> None:
    """A process for each client that reacts; one feeder for all the others' requests."""
    ahead = _played_ahead(scenario, indices, env, ask)
    if ahead is None:
        return
    t_ms, who, names, cost = ahead
    fed_cost = None if bool((cost == 1).all()) else cost
    env.process(feeder(env, t_ms, who, names, ask, fed_cost))


def pipelines_fit(scenario: Scenario, backend: Backend, instants: object = None) -> bool:
    """True when the run can go in pipelines: no client reacts, the answer takes its time from
    the call (not from a real server's clock), and the script is a vetted one (a user's script
    that loops would hold every call in flight on a real server)."""
    algorithm = scenario.policy.algorithm
    return (
        instants is None
        and (algorithm.vetted or backend.virtual_time)
        and not any(reacts(spec) for spec in scenario.clients)
        and not runs_on_real_time(backend, scenario.policy)
    )


def _simulate_pipelined(
    scenario: Scenario,
    backend: Backend,
    on_rows: Callable[[list[Row]], None] | None,
    run_id: str,
    indices: Sequence[int] | None,
) -> pd.DataFrame:
    """The run of clients all played ahead, decided in pipelines (:mod:`simulator.engine.pipelined`)."""
    policy = scenario.policy
    ahead = _played_ahead(scenario, indices)
    nothing: list[str] = []
    at_ms, who, names, cost = (
        (np.zeros(0), np.zeros(0, np.int64), nothing, np.zeros(0, np.int64))
        if ahead is None
        else ahead
    )
    now = [0.0]
    backend.follow(lambda: now[0])
    limiter = policy.limiter(backend)
    clients = np.array(names, dtype=object)[who].tolist() if len(who) else []
    costs = cost.tolist()
    watch = ExpiryWatch(scenario.window_ms) if not backend.virtual_time else None
    try:
        times, columns = decide_pipelined(
            limiter, backend, at_ms, clients, costs, lambda t: now.__setitem__(0, t), on_rows, watch
        )
    except (BackendError, ScriptError) as exc:
        done = exc.decided or 0
        t_fail = math.floor(at_ms[min(done, len(at_ms) - 1)]) if len(at_ms) else 0
        raise stopped_at(exc, backend, t_fail, 0, done) from exc
    frame = frame_of(run_id, scenario.seed, scenario.algorithm, clients, times, costs, columns)
    frame.attrs["calls"] = PIPELINED
    if watch is not None and not watch.safe:
        warnings.warn(watch.message("the simulation"), ServerClockWarning, stacklevel=3)
    return frame
