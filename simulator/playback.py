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
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from functools import partial
from itertools import chain
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd
import simpy

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import NO_REPLY, Backend, BackendError, FakeRedisBackend, ScriptError
from simulator.model import _stopped, run_id_for
from simulator.realtime import ExpiryWatch, ServerClockWarning, environment_for, needs_real_time
from simulator.records import DecisionColumns, Decisions, frame_of
from simulator.scenario import ConfigError
from simulator.traces import Requests, exact_t_ms

__all__ = ["replay", "replay_requests", "Replayed", "PIPELINE_CALLS"]

#: Calls per pipeline in a replay on a real server.
PIPELINE_CALLS = 1000
#: Pipelines in flight at a time (the server works on one while the client prepares the next).
PIPELINES_IN_FLIGHT = 2


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


class Replayed(NamedTuple):
    """What :func:`replay_requests` did."""

    #: Decisions made (one per request replayed).
    decided: int
    #: False when the run was slow enough that server-side expiry may have changed decisions.
    server_clock_safe: bool


class _Progress:
    """How far a replay got: decisions made, and the time of the first request not decided."""

    __slots__ = ("decided", "next_t_ms")

    def __init__(self, t0: int) -> None:
        self.decided, self.next_t_ms = 0, t0


def _replay_process(
    env: simpy.Environment,
    pieces: Iterator[Requests],
    limiter: Limiter,
    depth: int,
    on_rows: Callable[[Decisions], None] | None,
    on_progress: Callable[[int], None] | None,
    watch: ExpiryWatch | None,
    progress: _Progress,
) -> Generator[simpy.Event, Any, None]:
    batch, parse_many = limiter.batch, limiter.parse_many
    waiting: deque[Requests] = deque()  # handed to the stream, replies not yet taken; oldest first
    unsent: deque[Requests] = deque()  # of those, the ones the stream has not taken yet
    ahead = max(1, depth)  # a stream takes up to ``depth`` batches before it yields a reply
    advance = getattr(env, "advance", None)

    def batches() -> Iterator[Sequence[Any]]:
        while unsent:  # empty only once the pieces have run out (see top_up)
            piece = unsent.popleft()
            if watch is not None:
                watch.start(piece.t_ms[0])
            yield batch(piece.clients, piece.t_ms, piece.costs)

    def top_up() -> None:
        # The pieces are read here, outside the stream, so that a trace that fails to read is
        # not taken for a server that failed.
        while len(unsent) < ahead:
            piece = next(pieces, None)
            if piece is None:
                return
            waiting.append(piece)
            unsent.append(piece)

    backend = limiter.backend
    # depth 0: one round trip per call, through the base class (no pipelining at all)
    stream = (backend.stream if depth > 0 else partial(Backend.stream, backend))(batches(), depth)
    try:
        while True:
            top_up()
            if not waiting:
                break
            piece = waiting[0]
            t_ms = piece.t_ms
            progress.next_t_ms = t_ms[0]
            if t_ms[0] > env.now and not (advance is not None and advance(t_ms[0])):
                yield env.timeout(t_ms[0] - env.now)
            try:
                replies = next(stream)
            except BackendError as exc:
                if exc.replies is None:
                    raise
                # Some calls of this batch were answered before the failure (the other nodes
                # of a cluster): their decisions are made and are kept, even out of turn.
                answered = [
                    i
                    for i, r in enumerate(exc.replies)
                    if r is not NO_REPLY and not isinstance(r, ScriptError)
                ]
                if on_rows is not None and answered:
                    on_rows(_some(piece, answered, parse_many([exc.replies[i] for i in answered])))
                progress.decided += len(answered)
                missing = [i for i, r in enumerate(exc.replies) if r is NO_REPLY]
                progress.next_t_ms = t_ms[missing[0] if missing else -1]
                raise _unknown(exc, [piece.positions[i] for i in exc.unknown]) from exc
            waiting.popleft()
            failed = None
            if ScriptError in map(type, replies):  # keep the decisions before the failure
                failed = next(r for r in replies if isinstance(r, ScriptError))
                replies = replies[: replies.index(failed)]
            n = len(replies)
            if on_rows is not None and (n or failed is None):
                done = piece if n == len(t_ms) else piece.part(0, n)
                columns = parse_many(replies)
                on_rows(Decisions(done.positions, done.clients, done.t_ms, done.costs, columns))
            progress.decided += n
            if failed is not None:
                progress.next_t_ms = t_ms[n]
                failure = getattr(limiter, "failure", None)  # a user's script names its file
                raise failed if failure is None else failure(failed)
            if watch is not None:
                watch.end(t_ms[-1])
            if on_progress is not None:
                on_progress(n)
    finally:
        close = getattr(stream, "close", None)  # a generator: release its connection now
        if close is not None:
            close()


def _some(piece: Requests, which: list[int], columns: DecisionColumns) -> Decisions:
    """The decisions of some of a piece's requests (``which``, in order)."""
    costs = None if piece.costs is None else [piece.costs[i] for i in which]
    return Decisions(
        [piece.positions[i] for i in which],
        [piece.clients[i] for i in which],
        [piece.t_ms[i] for i in which],
        costs,
        columns,
    )


def _pieces(chunks: Iterable[Requests], size: int, same_ms: bool) -> Iterator[Requests]:
    """The requests of ``chunks`` as the batches that will be sent; refuses any out of order."""
    last = -1
    for chunk in chunks:
        t_ms = chunk.t_ms
        if not t_ms:
            continue
        if t_ms[0] < last or t_ms != sorted(t_ms):  # timsort: one pass over sorted input
            raise ValueError("requests: must come in time order (ties in trace order)")
        last = t_ms[-1]
        for lo, hi in _batches(t_ms, size, same_ms):
            yield chunk.part(lo, hi)


def _replay_requests(
    requests: Iterable[Requests],
    algorithm: str,
    limit: int,
    window_ms: int,
    backend: Backend | None,
    on_progress: Callable[[int], None] | None,
    pipeline: int | None,
    on_rows: Callable[[Decisions], None] | None,
    total: int | None,
    params: Mapping[str, float] | None = None,
) -> tuple[Replayed, ExpiryWatch | None]:
    chunks = iter(requests)
    first = next((c for c in chunks if c.t_ms), None)
    if first is None:
        return Replayed(0, True), None
    t0 = first.t_ms[0]
    backend = backend or FakeRedisBackend()
    env = environment_for(backend, algorithm, initial_time=t0)
    backend.follow(lambda: env.now)
    limiter = ALGORITHMS[algorithm](backend, limit, window_ms, **(params or {}))
    realtime = needs_real_time(backend, algorithm)
    size = max(1, pipeline or PIPELINE_CALLS)
    # The fake server's clock is env.now: its batches must not span milliseconds; nor may the
    # real server's on real time. Elsewhere the server's clock does not matter.
    same_ms = backend.virtual_time or realtime
    watch = None if same_ms else ExpiryWatch(window_ms)
    depth = 0 if size == 1 else 1 if same_ms else PIPELINES_IN_FLIGHT  # 0: no pipeline at all
    progress = _Progress(t0)
    pieces = _pieces(chain([first], chunks), size, same_ms)
    env.process(_replay_process(env, pieces, limiter, depth, on_rows, on_progress, watch, progress))
    try:
        env.run()
    except (BackendError, ScriptError) as exc:
        raise _stopped(exc, backend, progress.next_t_ms, t0, progress.decided, total) from exc
    return Replayed(progress.decided, watch is None or watch.safe), watch


def replay_requests(
    requests: Iterable[Requests],
    algorithm: str,
    limit: int,
    window_ms: int,
    backend: Backend | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    pipeline: int | None = None,
    on_rows: Callable[[Decisions], None] | None = None,
    total: int | None = None,
    params: Mapping[str, float] | None = None,
) -> Replayed:
    """Replay requests that come in chunks, already in time order (ties in trace order).

    The streaming form of :func:`replay`: decisions go only to ``on_rows`` (each pipeline's
    as soon as they are made, as one :class:`~simulator.records.Decisions` batch: columns, with
    each request's position; it also reads as :data:`~simulator.records.Row` tuples), nothing
    is kept, and
    memory holds one chunk and the pipelines in flight however long the trace is. ``total``
    (the number of requests, if known) only goes into the message of an error.
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
            algorithm,
            limit,
            window_ms,
            backend,
            on_progress,
            pipeline,
            on_rows,
            total,
            params,
        )
    finally:
        if frozen:
            gc.unfreeze()
    if watch is not None and not watch.safe:
        warnings.warn(watch.message("the replay"), ServerClockWarning, stacklevel=2)
    return done


def replay(
    trace: pd.DataFrame,
    algorithm: str,
    limit: int,
    window_ms: int,
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
            algorithm,
            limit,
            window_ms,
            backend,
            on_progress,
            pipeline,
            keep,
            len(trace),
            params,
        )
        del in_time
        if not made.all():  # pragma: no cover - every request is decided, or the run raised
            raise RuntimeError(f"replay: {done.decided} of {len(trace)} requests decided")
        run_id = run_id_for("replay", algorithm, limit, window_ms, len(trace))
        frame = frame_of(run_id, 0, algorithm, clients, exact, costs, decided)
    finally:
        if collecting:
            gc.enable()
    frame.index = trace.index
    if not done.server_clock_safe:
        frame.attrs["server_clock_safe"] = False
        assert watch is not None
        warnings.warn(watch.message("the replay"), ServerClockWarning, stacklevel=2)
    return frame
