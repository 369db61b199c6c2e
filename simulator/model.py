"""Run a scenario or replay a trace on the virtual clock, and get the decision log.

The SimPy environment counts milliseconds. The backend's clock follows ``env.now`` (on the
embedded fake server), each request is decided at ``floor(env.now)`` - the whole millisecond a
server would see - and every decision is appended to one log that becomes a DataFrame.

On a real server (see :mod:`simulator.realtime`) the same code runs: on simulated time for the
algorithms that take ``now_ms`` from their arguments, on real time for ``echomq``. A replay there
sends its requests in pipelines: in time order, so per key too, the order of one call at a time.
If the server goes away the run stops with a :class:`BackendError` naming the backend and the
simulated time reached, after handing every decision made so far to ``on_rows``.
"""

from __future__ import annotations

import gc
import hashlib
import math
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import simpy

from simulator.backends import NO_REPLY, Backend, BackendError, FakeRedisBackend, ScriptError
from simulator.clients import process_for
from simulator.limiters import ALGORITHMS, Limiter
from simulator.realtime import (
    ExpiryWatch,
    ServerClockWarning,
    environment_for,
    late_ms,
    needs_real_time,
)
from simulator.records import Decision, DecisionLog
from simulator.scenario import BurstAt, Scenario
from simulator.traces import exact_t_ms

__all__ = ["simulate", "replay", "boundary_burst", "run_id_for", "Row", "PIPELINE_CALLS"]

#: One decided request for ``on_rows``: (position in the trace, client, t_ms, decision).
Row = tuple[int, str, int, Decision]
#: Calls per pipeline in a replay on a real server.
PIPELINE_CALLS = 1000
#: Pipelines in flight at a time (the server works on one while the client prepares the next).
PIPELINES_IN_FLIGHT = 2


def run_id_for(*parts: object) -> str:
    """A short, deterministic id for a run (same inputs, same id)."""
    return hashlib.sha1(repr(parts).encode("utf-8")).hexdigest()[:12]


def _stopped(
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


def simulate(
    scenario: Scenario,
    backend: Backend | None = None,
    on_rows: Callable[[list[Row]], None] | None = None,
) -> pd.DataFrame:
    """Run ``scenario`` and return its decision log (one row per request).

    On a real server ``echomq`` runs on real time (the scenario takes its duration in wall time);
    the frame's ``attrs["late_ms"]`` then holds how late (ms) each decision was sent.
    ``on_rows`` receives each decision as it is made (its position is the row number).
    """
    backend = backend or FakeRedisBackend()
    env = environment_for(backend, scenario.algorithm)
    backend.follow(lambda: env.now)
    limiter = ALGORITHMS[scenario.algorithm](backend, scenario.limit, scenario.window_ms)
    log = DecisionLog(run_id_for(scenario), scenario.seed, scenario.algorithm)
    decide, append = limiter.decide, log.append
    late: list[float] = []
    realtime = needs_real_time(backend, scenario.algorithm)
    watch = ExpiryWatch(scenario.window_ms) if not backend.virtual_time and not realtime else None

    def ask(client: str) -> Decision:
        now_ms = math.floor(env.now)
        if watch is not None:
            watch.start(now_ms)
        if realtime:
            late.append(late_ms(env))
        decision = decide(client, now_ms)
        if watch is not None:
            watch.end(now_ms)
        if on_rows is not None:
            on_rows([(len(log), client, now_ms, decision)])
        append(client, now_ms, decision)
        return decision

    seeds = np.random.SeedSequence(scenario.seed).spawn(max(1, len(scenario.clients)))
    for spec, seed in zip(scenario.clients, seeds, strict=False):
        env.process(process_for(env, spec, ask, np.random.default_rng(seed)))
    try:
        env.run(until=scenario.duration_ms)
    except (BackendError, ScriptError) as exc:
        raise _stopped(exc, backend, math.floor(env.now), 0, len(log)) from exc
    frame = log.frame()
    if realtime:
        frame.attrs["late_ms"] = late
    if watch is not None and not watch.safe:
        warnings.warn(watch.message("the simulation"), ServerClockWarning, stacklevel=2)
    return frame


def _batches(t_ms: Sequence[int], size: int, same_ms: bool) -> list[tuple[int, int]]:
    """[lo, hi) bounds of consecutive requests sent together (at most ``size``; one ms if asked)."""
    bounds, lo, n = [], 0, len(t_ms)
    while lo < n:
        hi = min(lo + size, n)
        if same_ms:
            t, hi = t_ms[lo], lo + 1
            while hi < n and hi - lo < size and t_ms[hi] == t:
                hi += 1
        bounds.append((lo, hi))
        lo = hi
    return bounds


def _unknown(exc: BackendError, positions: Sequence[int], show: int = 5) -> BackendError:
    """The same error, naming the requests whose calls went to the failed node."""
    if not positions:
        return exc
    first = ", ".join(str(p + 1) for p in sorted(positions)[:show])
    more = f" and {len(positions) - show} more" if len(positions) > show else ""
    error = BackendError(
        f"{str(exc).rstrip('. ')}; the outcome of {len(positions)} calls sent to "
        f"{exc.failed_node} is unknown (requests {first}{more}, counted from 1 in input order)"
    )
    error.replies, error.unknown, error.failed_node = exc.replies, exc.unknown, exc.failed_node
    return error


def _replay_process(
    env: simpy.Environment,
    t_ms: list[int],
    clients: list[str],
    positions: list[int],
    limiter: Limiter,
    log: DecisionLog,
    bounds: list[tuple[int, int]],
    depth: int,
    on_rows: Callable[[list[Row]], None] | None,
    on_progress: Callable[[int], None] | None,
    watch: ExpiryWatch | None,
    reached: list[int],
) -> Generator[simpy.Event, Any, None]:
    call, parse, logged = limiter.call, limiter.parse, log.rows

    def batches() -> Iterator[list]:
        for lo, hi in bounds:
            if watch is not None:
                watch.start(t_ms[lo])
            yield list(map(call, clients[lo:hi], t_ms[lo:hi]))

    backend = limiter.backend
    # depth 0: one round trip per call, through the base class (no pipelining at all)
    stream = (backend.stream if depth > 0 else partial(Backend.stream, backend))(batches(), depth)
    try:
        for lo, hi in bounds:
            if t_ms[lo] > env.now:
                yield env.timeout(t_ms[lo] - env.now)
            try:
                replies = next(stream)
            except BackendError as exc:
                if exc.replies is None:
                    raise
                # Some calls of this batch were answered before the failure (the other nodes
                # of a cluster): their decisions are made and are kept, even out of turn.
                missing = [i for i, r in enumerate(exc.replies) if r is NO_REPLY]
                rows = [
                    (positions[lo + i], clients[lo + i], t_ms[lo + i], parse(r))
                    for i, r in enumerate(exc.replies)
                    if r is not NO_REPLY and not isinstance(r, ScriptError)
                ]
                logged.extend((c, t, d) for _, c, t, d in rows)
                if on_rows is not None and rows:
                    on_rows(rows)
                reached.append(t_ms[lo + missing[0]] if missing else t_ms[hi - 1])
                raise _unknown(exc, [positions[lo + i] for i in exc.unknown]) from exc
            failed = None
            if ScriptError in map(type, replies):  # keep the decisions before the failure
                failed = next(r for r in replies if isinstance(r, ScriptError))
                replies = replies[: replies.index(failed)]
            end = lo + len(replies)
            decisions = list(map(parse, replies))
            logged.extend(zip(clients[lo:end], t_ms[lo:end], decisions, strict=True))
            if on_rows is not None and (decisions or failed is None):
                on_rows(
                    list(
                        zip(
                            positions[lo:end], clients[lo:end], t_ms[lo:end], decisions, strict=True
                        )
                    )
                )
            if failed is not None:
                raise failed
            if watch is not None:
                watch.end(t_ms[hi - 1])
            if on_progress is not None:
                on_progress(hi - lo)
    finally:
        close = getattr(stream, "close", None)  # a generator: release its connection now
        if close is not None:
            close()


def replay(
    trace: pd.DataFrame,
    algorithm: str,
    limit: int,
    window_ms: int,
    backend: Backend | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    pipeline: int | None = None,
    on_rows: Callable[[list[Row]], None] | None = None,
) -> pd.DataFrame:
    """Replay a trace (columns ``t_ms``, ``client``) in time order, ties in trace order.

    Returns the decision log in the trace's own row order, with its index. On a real server the
    requests go in pipelines of ``pipeline`` calls (default :data:`PIPELINE_CALLS`; 1 = one round
    trip per decision): across milliseconds for the algorithms that take the time from their
    arguments, within one millisecond for ``echomq``, which replays on real time there.
    ``on_rows`` gets each pipeline's decisions as soon as they are made.
    """
    exact = exact_t_ms(trace["t_ms"].to_numpy())  # int64 throughout: no float rounds a time
    order = np.argsort(exact, kind="stable")
    t_ms = exact[order].tolist()
    # Not .astype(str): pandas' default strings cannot hold the lone surrogates that stand for
    # bytes of an id that are not UTF-8.
    clients = [c if type(c) is str else str(c) for c in trace["client"].tolist()]
    clients = [clients[i] for i in order.tolist()]
    backend = backend or FakeRedisBackend()
    t0 = int(t_ms[0]) if t_ms else 0
    env = environment_for(backend, algorithm, initial_time=t0)
    backend.follow(lambda: env.now)
    limiter = ALGORITHMS[algorithm](backend, limit, window_ms)
    log = DecisionLog(run_id_for("replay", algorithm, limit, window_ms, len(trace)), 0, algorithm)
    realtime = needs_real_time(backend, algorithm)
    size = max(1, pipeline or PIPELINE_CALLS)
    # The fake server's clock is env.now: its batches must not span milliseconds; nor may the
    # real server's on real time. Elsewhere the server's clock does not matter.
    same_ms = backend.virtual_time or realtime
    bounds = _batches(t_ms, size, same_ms)
    watch = None if same_ms else ExpiryWatch(window_ms)
    depth = 0 if size == 1 else 1 if same_ms else PIPELINES_IN_FLIGHT  # 0: no pipeline at all
    reached: list[int] = []  # the time of the first request left undecided, if not the next
    process = _replay_process(
        env,
        t_ms,
        clients,
        order.tolist(),
        limiter,
        log,
        bounds,
        depth,
        on_rows,
        on_progress,
        watch,
        reached,
    )
    env.process(process)
    # The log grows by small tuples that never form cycles; the cyclic collector would rescan
    # them all again and again (a quarter of a pipelined replay's time), so it waits till the
    # frame is built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        env.run()
        frame = log.frame()
    except (BackendError, ScriptError) as exc:
        done = len(log)
        t_reached = reached[0] if reached else t_ms[min(done, len(t_ms) - 1)]
        raise _stopped(exc, backend, t_reached, t0, done, len(t_ms)) from exc
    finally:
        if collecting:
            gc.enable()
    frame.index = trace.index[order]
    frame = frame.sort_index()
    if watch is not None and not watch.safe:
        frame.attrs["server_clock_safe"] = False
        warnings.warn(watch.message("the replay"), ServerClockWarning, stacklevel=2)
    return frame


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
