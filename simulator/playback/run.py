"""Replay a trace on the virtual clock: requests in time order, decisions in bounded pieces.

A replay sends its requests in time order (ties in trace order), so per key too, in the order of
one call at a time. On a real server they go in pipelines of :data:`PIPELINE_CALLS`, two in
flight; on the fake server (whose clock is ``env.now``) and on real time a batch never spans a
millisecond. :func:`replay_requests` takes the trace in chunks and hands each pipeline's
decisions to ``on_rows`` as they are made, holding none of them; :func:`replay` is one chunk of
it that returns the whole frame. If the server goes away the run stops with a
:class:`BackendError` naming the backend and the simulated time reached, after every decision
made so far was handed over (on a cluster, those the other masters made too).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple, cast

import numpy as np
import pandas as pd

from simulator.algorithms.base import Limiter
from simulator.backends import Backend, BackendError, FakeRedisBackend, ScriptError
from simulator.checks import ConfigError
from simulator.engine.model import run_id_for, stopped_at
from simulator.engine.realtime import (
    ExpiryWatch,
    ServerClockWarning,
    environment_for,
    runs_on_real_time,
)
from simulator.playback.pipelines import Progress, pieces, replay_process
from simulator.playback.traces import Requests, exact_t_ms
from simulator.policy import Policy, resolve
from simulator.records import DecisionColumns, Decisions, frame_of

__all__ = ["replay", "replay_requests", "Replayed", "Streaming", "PIPELINE_CALLS"]

#: Calls per pipeline in a replay on a real server.
PIPELINE_CALLS = 1000
#: Pipelines in flight at a time (the server works on one while the client prepares the next).
PIPELINES_IN_FLIGHT = 2
#: On the fake server, whose keys live in this process, keys whose time has come are swept out
#: every this many decisions. fakeredis removes an expired key only when it is touched again,
#: and a fixed window's key is never touched after its window: without the sweep every
#: (client, window) of the trace would stay in memory to the end.
SWEEP_DECISIONS = 65_536


class Replayed(NamedTuple):
    """What :func:`replay_requests` did."""

    #: Decisions made (one per request replayed).
    decided: int
    #: False when the run was slow enough that server-side expiry may have changed decisions.
    server_clock_safe: bool


def _replay_requests(
    requests: Iterable[Requests],
    policy: Policy,
    backend: Backend | None,
    *,
    on_progress: Callable[[int], None] | None,
    pipeline: int | None,
    on_rows: Callable[[Decisions], None] | None,
    total: int | None,
) -> tuple[Replayed, ExpiryWatch | None]:
    chunks = iter(requests)
    first = next((c for c in chunks if c.t_ms), None)
    if first is None:
        return Replayed(0, True), None
    t0 = first.t_ms[0]
    backend = backend or FakeRedisBackend()
    env = environment_for(backend, policy.algorithm, initial_time=t0)
    backend.follow(lambda: env.now)
    limiter = policy.limiter(backend)
    realtime = runs_on_real_time(backend, policy)
    size = max(1, pipeline or PIPELINE_CALLS)
    # The fake server's clock is env.now: its batches must not span milliseconds; nor may the
    # real server's on real time. Elsewhere the server's clock does not matter.
    same_ms = backend.virtual_time or realtime
    watch = None if same_ms else ExpiryWatch(policy.window_ms)
    depth = 0 if size == 1 else 1 if same_ms else PIPELINES_IN_FLIGHT  # 0: no pipeline at all
    progress = Progress(t0)
    if isinstance(backend, FakeRedisBackend):
        on_progress = _sweeping_expired(backend, on_progress)
    batched = pieces(chain([first], chunks), size, same_ms)
    env.process(replay_process(env, batched, limiter, depth, on_rows, on_progress, watch, progress))
    try:
        env.run()
    except (BackendError, ScriptError) as exc:
        raise stopped_at(exc, backend, progress.next_t_ms, t0, progress.decided, total) from exc
    return Replayed(progress.decided, watch is None or watch.safe), watch


def _sweeping_expired(
    backend: FakeRedisBackend, on_progress: Callable[[int], None] | None
) -> Callable[[int], None]:
    """``on_progress``, and every :data:`SWEEP_DECISIONS` decisions the fake server's expired
    keys removed (counting its keys does that: DBSIZE looks only at the expiries due)."""
    due = SWEEP_DECISIONS

    def progressed(n: int) -> None:
        nonlocal due
        due -= n
        if due <= 0:
            due = SWEEP_DECISIONS
            backend.clock.activate()  # the server's time is this replay's virtual clock
            backend.client.dbsize()
        if on_progress is not None:
            on_progress(n)

    return progressed


@dataclass(frozen=True)
class Streaming:
    """How a streamed replay is sent and told: ``pipeline`` calls per pipeline on a real server
    (default :data:`PIPELINE_CALLS`; 1 = one round trip per decision), and ``total``, the number
    of requests if known, which only goes into the message of an error."""

    pipeline: int | None = None
    total: int | None = None


def replay_requests(
    requests: Iterable[Requests],
    algorithm: str | type[Limiter] | Policy,
    limit: int | None,
    window_ms: int | None,
    backend: Backend | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    on_rows: Callable[[Decisions], None] | None = None,
    params: Mapping[str, float] | None = None,
    streaming: Streaming = Streaming(),
) -> Replayed:
    """Replay requests that come in chunks, already in time order (ties in trace order).

    The streaming form of :func:`replay`: decisions go only to ``on_rows`` (each pipeline's
    as soon as they are made, as one :class:`~simulator.records.Decisions` batch: columns, with
    each request's position; it also reads as :data:`~simulator.records.Row` tuples), nothing
    is kept, and memory holds one chunk and the pipelines in flight however long the trace is.
    ``streaming`` sets the pipeline's size and the total named in an error (:class:`Streaming`).
    """
    # What is alive before the run (modules, a backend, the caller's data) is moved out of the
    # cyclic collector's sight: each full collection would scan all of it again, a sixth of a
    # streamed replay's CPU. The run's own garbage is still collected, so memory stays bounded.
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    try:
        done, watch = _replay_requests(
            requests,
            resolve(algorithm, limit, window_ms, params, owner="replay.algorithm"),
            backend,
            on_progress=on_progress,
            pipeline=streaming.pipeline,
            on_rows=on_rows,
            total=streaming.total,
        )
    finally:
        if frozen:
            gc.unfreeze()
    if watch is not None and not watch.safe:
        warnings.warn(watch.message("the replay"), ServerClockWarning, stacklevel=2)
    return done


def replay(
    trace: pd.DataFrame,
    algorithm: str | type[Limiter] | Policy,
    limit: int | None,
    window_ms: int | None,
    backend: Backend | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    pipeline: int | None = None,
    on_rows: Callable[[Decisions], None] | None = None,
    params: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Replay a trace (columns ``t_ms``, ``client``, optionally ``cost``) in time order, ties
    in trace order.

    Returns the decision log in the trace's own row order, with its index. On a real server the
    requests go in pipelines of ``pipeline`` calls (default :data:`PIPELINE_CALLS`; 1 = one round
    trip per decision): across milliseconds for the algorithms that take the time from their
    arguments, within one millisecond for ``echomq``, which replays on real time there.
    ``on_rows`` gets each pipeline's decisions as soon as they are made (a
    :class:`~simulator.records.Decisions` batch). The log is built from the replies' columns,
    with no Python object per row. (The whole frame is in memory here; :func:`replay_requests`
    streams.)
    """
    policy = resolve(algorithm, limit, window_ms, params, owner="replay.algorithm")
    exact = exact_t_ms(trace["t_ms"].to_numpy())  # int64 throughout: no float rounds a time
    order = np.argsort(exact, kind="stable")
    # Not .astype(str): pandas' default strings cannot hold the lone surrogates that stand for
    # bytes of an id that are not UTF-8.
    clients = [c if type(c) is str else str(c) for c in trace["client"].tolist()]
    costs, listed = None, None
    if "cost" in trace.columns:
        cost = trace["cost"].to_numpy()
        if cost.dtype.kind not in "iu" or (len(cost) and int(cost.min()) < 1):
            raise ConfigError("trace.cost: must be whole numbers >= 1")
        if not bool((cost == 1).all()):
            costs, listed = cost, cost[order].tolist()
    # The positions stay one int64 array (it indexes and slices as a sequence does).
    positions_in_time = cast(Sequence[int], order)
    in_time = Requests(
        positions_in_time, exact[order].tolist(), [clients[i] for i in order.tolist()], listed
    )
    # Each batch's decisions go straight to their rows of the log, in the trace's order.
    decided = DecisionColumns.empty(len(trace))
    made = np.zeros(len(trace), dtype=np.bool_)

    def keep(rows: Decisions) -> None:
        at = np.asarray(rows.positions, dtype=np.intp)
        for field, values in zip(decided, rows.columns, strict=True):
            field[at] = values
        made[at] = True
        if on_rows is not None:
            on_rows(rows)

    # The cyclic collector would rescan everything the run keeps again and again; it waits
    # till the frame is built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        done, watch = _replay_requests(
            [in_time],
            policy,
            backend,
            on_progress=on_progress,
            pipeline=pipeline,
            on_rows=keep,
            total=len(trace),
        )
        del in_time
        if not made.all():  # pragma: no cover - every request is decided, or the run raised
            raise RuntimeError(f"replay: {done.decided} of {len(trace)} requests decided")
        # the policy's name, not what was given: a Limiter class names itself by its name
        run_id = run_id_for("replay", policy.name, policy.limit, policy.window_ms, len(trace))
        frame = frame_of(run_id, 0, policy.name, clients, exact, costs, decided)
    finally:
        if collecting:
            gc.enable()
    frame.index = trace.index
    if not done.server_clock_safe:
        frame.attrs["server_clock_safe"] = False
        assert watch is not None
        warnings.warn(watch.message("the replay"), ServerClockWarning, stacklevel=2)
    return frame
