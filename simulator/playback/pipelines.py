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


class _Feed:
    """The pieces on their way to the server, oldest first: ``waiting`` were handed to the stream
    and their replies not yet taken; ``unsent``, of those, the ones the stream has not taken yet.
    A stream takes up to ``ahead`` batches before it yields a reply."""

    def __init__(
        self,
        pieces: Iterator[Requests],
        batch: Callable[..., Sequence[Any]],
        ahead: int,
        watch: ExpiryWatch | None,
    ) -> None:
        self.pieces, self.batch, self.ahead, self.watch = pieces, batch, ahead, watch
        self.waiting: deque[Requests] = deque()
        self.unsent: deque[Requests] = deque()

    def batches(self) -> Iterator[Sequence[Any]]:
        """The calls of each piece, as the stream asks for them (the watch starts as one goes)."""
        while self.unsent:  # empty only once the pieces have run out (see oldest)
            piece = self.unsent.popleft()
            if self.watch is not None:
                self.watch.start(piece.t_ms[0])
            yield self.batch(piece.clients, piece.t_ms, piece.costs)

    def oldest(self) -> Requests | None:
        """The piece whose replies come next (None: the pieces have run out), after reading up to
        ``ahead`` pieces ahead. They are read here, outside the stream, so that a trace that fails
        to read is not taken for a server that failed."""
        while len(self.unsent) < self.ahead:
            piece = next(self.pieces, None)
            if piece is None:
                break
            self.waiting.append(piece)
            self.unsent.append(piece)
        return self.waiting[0] if self.waiting else None


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
    """Stream the pieces to the limiter's backend ``depth`` batches ahead, each sent no earlier
    than its first request's time on ``env``; hand each batch's decisions to ``on_rows`` in order,
    its size to ``on_progress``, and keep ``progress`` up to date for a run that stops early."""
    feed = _Feed(pieces, limiter.batch, max(1, depth), watch)
    advance = getattr(env, "advance", None)
    backend = limiter.backend
    # depth 0: one round trip per call, through the base class (no pipelining at all)
    stream = (backend.stream if depth > 0 else partial(Backend.stream, backend))(
        feed.batches(), depth
    )
    try:
        while (piece := feed.oldest()) is not None:
            t_ms = piece.t_ms
            progress.next_t_ms = t_ms[0]
            if t_ms[0] > env.now and not (advance is not None and advance(t_ms[0])):
                yield env.timeout(t_ms[0] - env.now)
            try:
                replies = next(stream)
            except BackendError as exc:
                if exc.replies is None:
                    raise
                raise _keep_answered(exc, piece, limiter, on_rows, progress) from exc
            feed.waiting.popleft()
            n = _hand_on(piece, replies, limiter, on_rows, progress)
            if watch is not None:
                watch.end(t_ms[-1])
            if on_progress is not None:
                on_progress(n)
    finally:
        close = getattr(stream, "close", None)  # a generator: release its connection now
        if close is not None:
            close()


def _keep_answered(
    exc: BackendError,
    piece: Requests,
    limiter: Limiter,
    on_rows: Callable[[Decisions], None] | None,
    progress: Progress,
) -> BackendError:
    """A server failed mid-batch. Some calls of the batch were answered before the failure (the
    other nodes of a cluster): their decisions are made and are handed on, even out of turn. The
    error to raise names the requests whose outcome is unknown."""
    replies = exc.replies or []
    answered = [
        i for i, r in enumerate(replies) if r is not NO_REPLY and not isinstance(r, ScriptError)
    ]
    if on_rows is not None and answered:
        on_rows(_some(piece, answered, limiter.parse_many([replies[i] for i in answered])))
    progress.decided += len(answered)
    missing = [i for i, r in enumerate(replies) if r is NO_REPLY]
    progress.next_t_ms = piece.t_ms[missing[0] if missing else -1]
    return unknown(exc, [piece.positions[i] for i in exc.unknown])


def _hand_on(
    piece: Requests,
    replies: Sequence[Any],
    limiter: Limiter,
    on_rows: Callable[[Decisions], None] | None,
    progress: Progress,
) -> int:
    """Hand on the decisions of one batch's replies; how many there were. A script that failed
    (or was stopped by a limit: a ScriptError too) keeps the decisions before it, then raises."""
    failed = None
    if any(issubclass(t, ScriptError) for t in set(map(type, replies))):
        failed = next(r for r in replies if isinstance(r, ScriptError))
        replies = replies[: replies.index(failed)]
    n = len(replies)
    if on_rows is not None and (n or failed is None):
        done = piece if n == len(piece.t_ms) else piece.part(0, n)
        columns = limiter.parse_many(replies)
        on_rows(Decisions(done.positions, done.clients, done.t_ms, done.costs, columns))
    progress.decided += n
    if failed is not None:
        progress.next_t_ms = piece.t_ms[n]
        failure = getattr(limiter, "failure", None)  # a user's script names its file
        raise failed if failure is None else failure(failed)
    return n


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
