"""A run whose clients are all played ahead, decided in pipelines instead of one call at a time.

A client that never reacts (every kind but ``Polite``) asks at instants that no answer changes,
so the whole run's requests are known before the first one is decided: their instants merged in
time order (ties in client order, as the SimPy processes had them), each decided at its whole
millisecond. Sent one call at a time, a real server waits on the network for every decision;
sent as a replay sends a trace (:data:`PIPELINE_CALLS` calls a batch, two batches in flight), the
server is kept busy. The server runs one connection's commands in the order sent, so every
decision is the one the call-at-a-time run makes: the same rows.

On the fake server the server's clock must be each call's own millisecond (a key's expiry is
decided by it), so there a batch holds the requests of one millisecond and the clock is set to it
before the batch goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from simulator.algorithms import Limiter
from simulator.backends import NO_REPLY, Backend, BackendError, ScriptError
from simulator.engine.realtime import ExpiryWatch
from simulator.records import Decision, DecisionColumns, Row

__all__ = ["PIPELINE_CALLS", "PIPELINES_IN_FLIGHT", "decide_pipelined", "PIPELINED", "ONE_BY_ONE"]

#: Calls sent in one pipeline (a replay's size).
PIPELINE_CALLS = 1000
#: Pipelines in flight at once on a real server.
PIPELINES_IN_FLIGHT = 2
#: How a run's calls went, in ``frame.attrs["calls"]``.
PIPELINED = "pipelined"
ONE_BY_ONE = "one at a time"


def _bounds(t_ms: np.ndarray, size: int, same_ms: bool) -> list[tuple[int, int]]:
    """[lo, hi) of the batches: at most ``size`` requests, one millisecond each if asked."""
    n = len(t_ms)
    if not same_ms:
        return [(lo, min(lo + size, n)) for lo in range(0, n, size)]
    starts = np.flatnonzero(np.diff(t_ms, prepend=t_ms[0] - 1)) if n else np.array([], int)
    edges = starts.tolist() + [n]
    bounds = []
    for lo, end in zip(edges[:-1], edges[1:], strict=True):
        bounds += [(a, min(a + size, end)) for a in range(lo, end, size)]
    return bounds


def decide_pipelined(
    limiter: Limiter,
    backend: Backend,
    at_ms: np.ndarray,
    clients: list[str],
    costs: list[int],
    set_now: Callable[[float], None],
    on_rows: Callable[[list[Row]], None] | None,
    watch: ExpiryWatch | None,
) -> tuple[list[int], DecisionColumns]:
    """Decide the requests at ``at_ms`` (sorted instants) of ``clients`` in pipelines.

    ``set_now`` moves the run's clock to a batch's first instant before it is sent (the fake
    server's time). Returns each request's whole millisecond and the decisions' columns. A
    script that fails stops the run with every decision before it handed to ``on_rows`` and
    counted on the error (``decided``); so does a server that goes away (a cluster node that
    failed mid-batch: the calls answered before the first unanswered one count as made).
    """
    t_ms = np.floor(at_ms).astype(np.int64)
    times = t_ms.tolist()
    plain = all(c == 1 for c in costs)
    same_ms = backend.virtual_time
    bounds = _bounds(t_ms, PIPELINE_CALLS, same_ms)
    depth = 1 if same_ms else PIPELINES_IN_FLIGHT
    batch, parse_many = limiter.batch, limiter.parse_many
    sent: list[tuple[int, int]] = []

    def batches() -> Iterator[Sequence[Any]]:
        for lo, hi in bounds:
            sent.append((lo, hi))
            set_now(float(at_ms[lo]))
            if watch is not None:
                watch.start(times[lo])
            yield batch(clients[lo:hi], times[lo:hi], None if plain else costs[lo:hi])

    parts: list[DecisionColumns] = []
    done = 0
    stream = backend.stream(batches(), depth)
    try:
        for lo, hi in bounds:
            replies, lost = _answered(stream, done)
            failed = next((r for r in replies if isinstance(r, ScriptError)), None)
            if failed is not None:
                replies = replies[: replies.index(failed)]
            columns = parse_many(replies)
            n = len(replies)
            parts.append(columns)
            if on_rows is not None and n:
                decisions: list[Decision] = columns.decisions()
                on_rows(
                    list(
                        zip(
                            range(done, done + n),
                            clients[lo : lo + n],
                            times[lo : lo + n],
                            decisions,
                            costs[lo : lo + n],
                            strict=True,
                        )
                    )
                )
            done += n
            _raise_stopped(limiter, lost, failed, done)
            if watch is not None:
                watch.end(times[hi - 1])
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return times, DecisionColumns.concat(parts)


def _answered(
    stream: Iterator[Sequence[Any]], done: int
) -> tuple[Sequence[Any], BackendError | None]:
    """The next batch's replies, and the error of a server that went away mid-batch (None when
    it did not): the calls before the first unanswered one are decisions made, and kept. A
    failure with nothing answered is raised at once, counting the ``done`` before it."""
    try:
        return next(stream), None
    except BackendError as exc:
        if exc.replies is None:
            exc.decided = done
            raise
        replies = list(exc.replies)
        gap = next((i for i, r in enumerate(replies) if r is NO_REPLY), len(replies))
        return replies[:gap], exc


def _raise_stopped(
    limiter: Limiter, lost: BackendError | None, failed: ScriptError | None, done: int
) -> None:
    """Stop the run where a server went away or a script failed, ``done`` decisions made."""
    if lost is not None:
        lost.decided = done
        raise lost
    if failed is not None:
        failure = getattr(limiter, "failure", None)  # a user's script names its file
        error = failed if failure is None else failure(failed)
        error.decided = done
        raise error
