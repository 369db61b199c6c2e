"""Benchmark ``fake``: the fake server's script path, the project's and as fakeredis ships it.

The default backend is fakeredis, and there every decision is one ``EVALSHA`` that fakeredis
runs in Python. As shipped (``stock``) each call goes through redis-py's packing and the fake
socket's parsing, the script text is compiled again on every call, a full Lua
``collectgarbage()`` runs after it and every Lua global is listed into a Python set before each
``redis.call`` and after the script. :mod:`simulator.backends.fakeserver` compiles each script once,
leaves the heap to Lua's incremental collector, asks about globals in Lua (``repaired``, still
through redis-py) and hands the call's fields straight to fakeredis's command execution
(``project``: what a limiter's call does). An algorithm whose call is the server's own command
(``INCREX``) has no script: stock and repaired send it through redis-py, the project hands it
straight to the command's execution too. Here the same calls (same keys, arguments and times,
each on a fresh server) run the three ways, taking turns, and the replies are compared call by
call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import FakeRedisBackend
from simulator.backends.fakeserver import plain_scripts
from simulator.bench.timing import best_of
from simulator.calls import Call

__all__ = ["bench_fake"]

CLIENTS = 50
LIMIT, WINDOW_MS = 100, 60_000
REPEAT = 3


def _calls(algorithm: type[Limiter], decisions: int) -> list[tuple[int, Call]]:
    """``(now_ms, call)`` per decision: 50 clients at 10 requests/s each."""
    limiter = algorithm(FakeRedisBackend(), LIMIT, WINDOW_MS)
    calls = []
    for k in range(decisions):
        now = (k // CLIENTS) * 100 + k % CLIENTS
        calls.append((now, limiter.call(f"user{k % CLIENTS}", now)))
    return calls


def _run(calls: list[tuple[int, Call]], way: str) -> list[Any]:
    """The replies of the calls, on a fresh server, ``way`` stock, repaired or project."""
    t_ms = [0]
    backend = FakeRedisBackend(lambda: t_ms[0])
    backend.preload({script for _, (script, _, _) in calls})
    replies = []
    if way == "project":
        call = backend.call
        for now, (script, keys, args) in calls:
            t_ms[0] = now
            replies.append(call(script, keys, args))
    else:
        evalsha, execute = backend.client.evalsha, backend.client.execute_command
        backend.clock.activate()
        with plain_scripts() if way == "stock" else contextlib.nullcontext():
            for now, (script, keys, args) in calls:
                t_ms[0] = now
                if script.command:  # the server's own command: through redis-py
                    replies.append(execute(script.command, *keys, *args))
                else:
                    replies.append(evalsha(script.sha, len(keys), *keys, *args))
    backend.close()
    return replies


def bench_fake(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    out(
        f"fake: {decisions} calls (EVALSHA, or the server's own command) per algorithm on "
        f"fakeredis, {CLIENTS} clients; stock = "
        f"fakeredis as shipped through redis-py, repaired = scripts compiled once (still through "
        f"redis-py), project = repaired and handed straight to fakeredis's command execution; "
        f"this process's CPU time (a fresh server each turn), best of {REPEAT}, taking turns"
    )
    out(
        f"{'algorithm':<20} {'stock/s':>9} {'repaired/s':>11} {'project/s':>10} "
        f"{'vs stock':>9}  same replies"
    )
    rows: list[dict[str, object]] = []
    for algorithm, cls in ALGORITHMS.items():
        calls = _calls(cls, decisions)
        ways = ("stock", "repaired", "project")
        timed = best_of(
            {way: partial(_run, calls, way) for way in ways}, REPEAT, clock=time.process_time
        )
        rate = {way: decisions / timed[way][0] for way in ways}
        same = timed["stock"][1] == timed["repaired"][1] == timed["project"][1]
        speedup = rate["project"] / rate["stock"]
        rows.append(
            {
                "algorithm": algorithm,
                "stock_per_s": rate["stock"],
                "repaired_per_s": rate["repaired"],
                "project_per_s": rate["project"],
                "speedup": speedup,
                "same_replies": same,
            }
        )
        out(
            f"{algorithm:<20} {rate['stock']:>9,.0f} {rate['repaired']:>11,.0f} "
            f"{rate['project']:>10,.0f} {speedup:>8.2f}x  {'yes' if same else 'NO'}"
        )
    return rows
