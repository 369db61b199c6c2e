"""A replay's pipelines: the requests cut into the batches sent together, and their replies
taken back as decisions, in order, on the simulation's clock.

:func:`pieces` cuts chunks of a trace into batches (at most a pipeline's worth, one millisecond
each where the server's clock matters); :func:`replay_process` is the SimPy process that streams
them to the backend, :data:`~simulator.playback.run.PIPELINES_IN_FLIGHT` ahead, and hands each batch's
decisions on. When a server fails mid-batch, the calls its other nodes answered are kept and the
error names the requests whose outcome is unknown (:func:`unknown`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import simpy

from simulator.algorithms import Limiter
from simulator.backends import NO_REPLY, Backend, BackendError, ScriptError
from simulator.engine.realtime import ExpiryWatch
from simulator.playback.traces import Requests
from simulator.records import DecisionColumns, Decisions

__all__ = ["Progress", "batches", "pieces", "replay_process", "unknown"]


def batches(t_ms: Sequence[int], size: int, same_ms: bool) -> list[tuple[int, int]]:
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


def unknown(exc: BackendError, positions: Sequence[int], show: int = 5) -> BackendError:
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


class Progress:
    """How far a replay got: decisions made, and the time of the first request not decided."""

    __slots__ = ("decided", "next_t_ms")

    def __init__(self, t0: int) -> None:
        self.decided, self.next_t_ms = 0, t0


def replay_process(
    env: simpy.Environment,
    pieces: Iterator[Requests],
    limiter: Limiter,
    depth: int,
    on_rows: Callable[[Decisions], None] | None,
    on_progress: Callable[[int], None] | None,
    watch: ExpiryWatch | None,
    progress: Progress,
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
                raise unknown(exc, [piece.positions[i] for i in exc.unknown]) from exc
            waiting.popleft()
            failed = None
            if any(issubclass(t, ScriptError) for t in set(map(type, replies))):  # keep the
                # decisions before the failure (a script stopped by a limit is a ScriptError too)
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


def pieces(chunks: Iterable[Requests], size: int, same_ms: bool) -> Iterator[Requests]:
    """The requests of ``chunks`` as the batches that will be sent; refuses any out of order."""
    last = -1
    for chunk in chunks:
        t_ms = chunk.t_ms
        if not t_ms:
            continue
        if t_ms[0] < last or t_ms != sorted(t_ms):  # timsort: one pass over sorted input
            raise ValueError("requests: must come in time order (ties in trace order)")
        last = t_ms[-1]
        for lo, hi in batches(t_ms, size, same_ms):
            yield chunk.part(lo, hi)
