"""Bulk reference: every algorithm over a whole trace at once, for studies of millions of requests.

The Lua scripts on fakeredis are the truth for what a server does, at a few thousand decisions a
second; each algorithm's ``Reference`` mirrors them request by request at ~50x that. A study of a
million requests wants more, and it does not need the objects: it needs, for every request, was it
admitted and what number was compared with the limit. Clients never share state, so the trace is
sorted by (client, time, arrival order) once and each client's requests are decided in one tight
loop over plain lists (the fixed window needs no loop at all: its count is a position in a group).
Each algorithm's kernel lives in its own module (``bulk``); this module sorts and puts back.

The arithmetic is the scripts' own, in the same order (``cur + prev * (W - elapsed) / W`` in
doubles), so :func:`decide_bulk` agrees with the Lua decision for decision; the tests and the
accuracy study check that on samples of real script runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import BULK
from simulator.algorithms.base import BulkDecider, Limiter, own_params
from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError, check_int
from simulator.policy import lookup

__all__ = ["Bulk", "decide_bulk", "decide_any", "decide_trace"]


@dataclass(frozen=True)
class Bulk:
    """Decisions for a trace, in the caller's row order.

    ``count`` is what the script compared with the limit: the counter after the hit (fixed window,
    echomq), the log size before it (sliding log) or the estimate (sliding counter). ``order``
    sorts the rows by (client, time, arrival), the order they were decided in per client.
    """

    allowed: np.ndarray  # bool
    count: np.ndarray  # float64
    order: np.ndarray  # int64 permutation


def _sort(codes: np.ndarray, t_ms: np.ndarray) -> np.ndarray:
    """A permutation sorting by (client, time), ties in arrival order.

    Traces usually come in time order; then a stable sort by client code alone is enough, done as
    a radix sort 16 bits at a time (numpy's stable sort of uint16 is a radix sort).
    """
    if int(codes.min()) < 0 or int(codes.max()) >= 2**32:
        return np.lexsort((np.arange(len(t_ms)), t_ms, codes))
    by_time = None if bool((t_ms[1:] >= t_ms[:-1]).all()) else np.argsort(t_ms, kind="stable")
    c = codes if by_time is None else codes[by_time]
    order = np.argsort((c & 0xFFFF).astype(np.uint16), kind="stable")
    if int(c.max()) >= 2**16:
        order = order[np.argsort((c[order] >> 16).astype(np.uint16), kind="stable")]
    return order if by_time is None else by_time[order]


def _with_kernel(algorithm: str | type[Limiter]) -> type[Limiter]:
    """The Limiter class of an algorithm that has a vectorised kernel; ConfigError naming those
    that have one otherwise."""
    if isinstance(algorithm, str) and algorithm not in BULK:
        raise ConfigError(f"algorithm: unknown {algorithm!r}; known: {', '.join(BULK)}")
    cls = lookup(algorithm)
    if not issubclass(cls, BulkDecider):
        known = ", ".join(BULK)
        raise ConfigError(f"algorithm: {cls.name} has no bulk kernel; those with one: {known}")
    return cls


def decide_bulk(
    algorithm: str | type[Limiter],
    codes: np.ndarray,
    t_ms: np.ndarray,
    limit: int,
    window_ms: int,
    order: np.ndarray | None = None,
    cost: np.ndarray | None = None,
    params: Mapping[str, float] | None = None,
) -> Bulk:
    """Decide every request ``(codes[i], t_ms[i])`` (integer client codes, integer ms).

    Requests of one client are decided in time order, ties in row order, as a replay would.
    Pass ``order`` (from an earlier :class:`Bulk`) to skip the sort. ``cost``: each request's
    cost (default 1 each); ``params``: the algorithm's own parameters (defaults for the rest).
    ``algorithm``: a name or the Limiter class, looked up here once.
    """
    cls = _with_kernel(algorithm)
    limit = check_int("decide_bulk", "limit", limit, 1, MAX_LIMIT)
    window_ms = check_int("decide_bulk", "window_ms", window_ms, 1, MAX_WINDOW_MS)
    resolved = own_params("decide_bulk", cls.params_declared, params or {}, limit, window_ms)
    codes = np.asarray(codes, dtype="int64")
    t_ms = np.asarray(t_ms, dtype="int64")
    n = len(t_ms)
    if n == 0:
        empty = np.empty(0, dtype="int64")
        return Bulk(np.empty(0, dtype=bool), np.empty(0, dtype="float64"), empty)
    if order is None:
        order = _sort(codes, t_ms)
    if cost is not None:
        cost = np.asarray(cost, dtype="int64")
        if len(cost) != n or (n and int(cost.min()) < 1):
            raise ConfigError("decide_bulk.cost: one integer >= 1 per request")
        cost = None if bool((cost == 1).all()) else cost[order]
    allowed_s, count_s = cls.bulk(  # type: ignore[attr-defined]
        codes[order], t_ms[order], int(limit), int(window_ms), cost, resolved
    )
    allowed, count = np.empty(n, dtype=bool), np.empty(n, dtype="float64")
    allowed[order], count[order] = allowed_s, count_s
    return Bulk(allowed, count, order)


def decide_any(
    algorithm: str | type[Limiter],
    codes: np.ndarray,
    t_ms: np.ndarray,
    limit: int,
    window_ms: int,
    params: Mapping[str, float] | None = None,
    order: np.ndarray | None = None,
) -> Bulk:
    """:func:`decide_bulk` for any registered algorithm, with its own parameters.

    The vectorised kernel decides where there is one; otherwise the algorithm's pure-Python
    reference, request by request in the same order; an algorithm with neither (a user's
    script) is replayed through its script on a fake server on the virtual clock (the Lua path:
    a few thousand decisions a second). ``algorithm``: a name or the Limiter class.
    """
    cls = lookup(algorithm)
    if issubclass(cls, BulkDecider):
        return decide_bulk(cls, codes, t_ms, limit, window_ms, order, params=params)
    codes = np.asarray(codes, dtype="int64")
    t_ms = np.asarray(t_ms, dtype="int64")
    n = len(t_ms)
    if order is None:
        order = _sort(codes, t_ms) if n else np.empty(0, dtype="int64")
    reference = getattr(cls, "reference", None)
    if reference is None:
        from simulator.playback.run import replay

        trace = pd.DataFrame({"t_ms": t_ms, "client": codes.astype(str)})
        log = replay(trace, cls, limit, window_ms, params=params)
        return Bulk(log["allowed"].to_numpy(dtype=bool), log["count"].to_numpy("float64"), order)
    ref = reference(limit, window_ms, **params) if params else reference(limit, window_ms)
    allowed, count = np.empty(n, dtype=bool), np.empty(n, dtype="float64")
    decide = ref.decide
    for i, c, t in zip(order.tolist(), codes[order].tolist(), t_ms[order].tolist(), strict=True):
        d = decide(str(c), t)
        allowed[i], count[i] = d.allowed, d.count
    return Bulk(allowed, count, order)


def decide_trace(
    trace: pd.DataFrame, algorithm: str | type[Limiter], limit: int, window_ms: int
) -> pd.DataFrame:
    """A trace (``t_ms``, ``client``) decided in bulk: columns client, t_ms, allowed, count.

    Times are floored to whole milliseconds, as :func:`simulator.playback.run.replay` does.
    """
    cls = _with_kernel(algorithm)
    codes, _ = pd.factorize(trace["client"].astype(str), sort=False)
    t_ms = np.floor(trace["t_ms"].to_numpy(dtype="float64")).astype("int64")
    bulk = decide_bulk(cls, codes, t_ms, limit, window_ms)
    return pd.DataFrame(
        {
            "algorithm": cls.name,
            "client": trace["client"].astype(str).to_numpy(),
            "t_ms": t_ms,
            "allowed": bulk.allowed,
            "count": bulk.count,
        },
        index=trace.index,
    )
