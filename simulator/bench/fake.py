"""Benchmark ``fake``: the fake server's hot path, repaired and as fakeredis ships it.

The default backend is fakeredis, and there every decision is one ``EVALSHA`` that fakeredis
runs in Python. As shipped it compiles the script text again on every call, runs a full Lua
``collectgarbage()`` after it and lists every Lua global into a Python set before each
``redis.call`` and after the script; :mod:`simulator.backends.clock` compiles each script once,
leaves the heap to Lua's incremental collector and asks about globals in Lua. Here the same calls
(same keys, arguments and times, each on a fresh server) run both ways, taking turns, and the
replies are compared call by call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.backends.clock import plain_scripts
from simulator.bench.timing import best_of

__all__ = ["bench_fake"]

CLIENTS = 50
LIMIT, WINDOW_MS = 100, 60_000
REPEAT = 3


def _calls(algorithm: str, decisions: int) -> list[tuple[Any, ...]]:
    """``(now_ms, sha, numkeys, *keys, *args)`` per call: 50 clients at 10 requests/s each."""
    limiter = ALGORITHMS[algorithm](FakeRedisBackend(), LIMIT, WINDOW_MS)
    calls = []
    for k in range(decisions):
        now = (k // CLIENTS) * 100 + k % CLIENTS
        script, keys, args = limiter.call(f"user{k % CLIENTS}", now)
        calls.append((now, script.sha, len(keys), *keys, *args))
    return calls


def _run(calls: list[tuple[Any, ...]], plain: bool) -> list[Any]:
    """The replies of the calls, on a fresh server."""
    t_ms = [0]
    backend = FakeRedisBackend(lambda: t_ms[0])
    evalsha = backend.client.evalsha
    backend.clock.activate()
    replies = []
    with plain_scripts() if plain else contextlib.nullcontext():
        for now, sha, n, *rest in calls:
            t_ms[0] = now
            replies.append(evalsha(sha, n, *rest))
    backend.close()
    return replies


def bench_fake(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    out(
        f"fake: {decisions} EVALSHA per algorithm on fakeredis, {CLIENTS} clients; as fakeredis "
        f"runs scripts vs compiled once, no full collection per call, globals checked in Lua; "
        f"this process's CPU time (a fresh server each turn), best of {REPEAT}, taking turns"
    )
    out(f"{'algorithm':<20} {'fakeredis/s':>12} {'repaired/s':>11} {'speed-up':>9}  same replies")
    rows: list[dict[str, object]] = []
    for algorithm in ALGORITHMS:
        if not ALGORITHMS[algorithm].scripts:  # the server's own command: no script to run
            continue
        calls = _calls(algorithm, decisions)
        runs = {"plain": partial(_run, calls, True), "repaired": partial(_run, calls, False)}
        timed = best_of(runs, REPEAT, clock=time.process_time)
        (plain_s, plain_replies), (fast_s, fast_replies) = timed["plain"], timed["repaired"]
        plain_rate, fast_rate = decisions / plain_s, decisions / fast_s
        same = plain_replies == fast_replies
        rows.append(
            {
                "algorithm": algorithm,
                "plain_per_s": plain_rate,
                "repaired_per_s": fast_rate,
                "speedup": fast_rate / plain_rate,
                "same_replies": same,
            }
        )
        out(
            f"{algorithm:<20} {plain_rate:>12,.0f} {fast_rate:>11,.0f} "
            f"{fast_rate / plain_rate:>8.2f}x  {'yes' if same else 'NO'}"
        )
    return rows
