"""Benchmark ``servers``: one trace, one real Valkey, three ways to make the same decisions.

A gateway that replays its logs through a limiter on a real server wants to know what that
costs. Here one embedded valkey-server (127.0.0.1) takes the same trace three times per
algorithm, from a freshly flushed database each time:

* one round trip per decision: the replay with ``pipeline=1``, one ``EVALSHA`` per request
  through redis-py, waiting for each reply;
* the pipelined replay: requests in time order, :data:`~simulator.playback.run.PIPELINE_CALLS` per
  pipeline, two pipelines in flight (the decisions are the same: checked below);
* the ``limits`` package, what a Python user would pick instead: ``RedisStorage`` with
  ``FixedWindowRateLimiter`` or ``MovingWindowRateLimiter`` (its exact sliding log), one
  ``hit()`` per request.

``limits`` reads the wall clock, the replay the trace's clock; the trace spans less than one
window and starts at a window boundary, so on both clocks every request falls into the same
window and the three runs must admit exactly the same requests (the benchmark says whether
they did). The trace has many clients and many requests per millisecond, as a busy gateway
has. Each figure is the best of ``REPEAT`` runs, so that a moment of load elsewhere on the
machine does not decide it; the three take turns.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd

from simulator.backends import RedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.bench.timing import best_of
from simulator.playback.run import PIPELINE_CALLS, replay

__all__ = ["bench_servers", "server_trace"]

CLIENTS = 1000
LIMIT, WINDOW_MS = 5, 60_000
REQUESTS_PER_MS = 20
REPEAT = 3
#: Our algorithm and the ``limits`` strategy that makes the same decisions within one window.
PAIRS = {"fixed_window": "FixedWindowRateLimiter", "sliding_log": "MovingWindowRateLimiter"}


def server_trace(decisions: int, seed: int = 0) -> pd.DataFrame:
    """``decisions`` requests from :data:`CLIENTS` clients, :data:`REQUESTS_PER_MS` per ms."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    span_ms = max(1, decisions // REQUESTS_PER_MS)
    if span_ms >= WINDOW_MS:
        raise ValueError(f"decisions: at most {WINDOW_MS * REQUESTS_PER_MS - 1} (one window)")
    t_ms = np.sort(rng.integers(0, span_ms, decisions))
    clients = rng.integers(0, CLIENTS, decisions)
    return pd.DataFrame({"t_ms": t_ms, "client": [f"client-{c}" for c in clients]})


def _best_of(
    runs: dict[str, Callable[[], object]], n: int, flush: Callable[[], object]
) -> dict[str, tuple[float, object]]:
    """Decisions per second of the fastest of REPEAT turns of each, and that turn's result."""
    timed = best_of(runs, REPEAT, before=flush)
    return {name: (n / elapsed, result) for name, (elapsed, result) in timed.items()}


def _limits_run(url: str, strategy: str, trace: pd.DataFrame) -> Callable[[], list[bool]]:
    from limits import RateLimitItemPerSecond, storage, strategies

    limiter = getattr(strategies, strategy)(storage.RedisStorage(url))
    item = RateLimitItemPerSecond(LIMIT, WINDOW_MS // 1000)
    clients = trace["client"].tolist()

    def run() -> list[bool]:
        hit = limiter.hit
        return [hit(item, c) for c in clients]

    return run


def bench_servers(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, float]]:
    trace = server_trace(decisions)
    out(
        f"servers: {decisions} decisions, {CLIENTS} clients, {REQUESTS_PER_MS} requests per ms, "
        f"limit {LIMIT} per {WINDOW_MS // 1000} s, one embedded valkey-server on 127.0.0.1; "
        f"best of {REPEAT}; pipelines of {PIPELINE_CALLS} calls"
    )
    out(
        f"{'algorithm':<20} {'one round trip/s':>17} {'pipelined/s':>12} {'limits/s':>9} "
        f"{'pipelined/1rt':>14} {'pipelined/limits':>17}  same decisions"
    )
    rows: list[dict[str, float]] = []
    with EmbeddedValkey() as server:
        client = server.client()
        backend = RedisBackend(client, "valkey")
        flush = client.flushdb
        for algorithm, strategy in PAIRS.items():
            runs: dict[str, Callable[[], object]] = {
                "one": partial(replay, trace, algorithm, LIMIT, WINDOW_MS, backend, pipeline=1),
                "piped": partial(replay, trace, algorithm, LIMIT, WINDOW_MS, backend),
                "limits": _limits_run(server.url, strategy, trace),
            }
            measured = _best_of(runs, decisions, flush)
            (one, _), (piped, frame), (lim, allowed) = measured.values()
            ours: list[bool] = frame["allowed"].tolist()  # type: ignore[index]
            theirs: list[bool] = allowed  # type: ignore[assignment]
            same = ours == theirs
            rows.append(
                {
                    "algorithm": algorithm,  # type: ignore[dict-item]
                    "one_round_trip_per_s": one,
                    "pipelined_per_s": piped,
                    "limits_per_s": lim,
                    "pipelined_over_one": piped / one,
                    "pipelined_over_limits": piped / lim,
                    "same_decisions": float(same),
                }
            )
            verdict = (
                "yes"
                if same
                else f"NO ({sum(a != b for a, b in zip(ours, theirs, strict=True))} differ)"
            )
            out(
                f"{algorithm:<20} {one:>17,.0f} {piped:>12,.0f} {lim:>9,.0f} "
                f"{piped / one:>13.1f}x {piped / lim:>16.1f}x  {verdict} "
                f"({sum(ours)} of {decisions} admitted; limits: {strategy})"
            )
        backend.close()
    return rows
