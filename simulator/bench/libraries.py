"""Benchmark ``libraries``: the limiters people run, unchanged, beside the built-in of the
same algorithm, on the fake server.

Each library strategy (``limits.moving_window`` ...) and its built-in twin (``sliding_log``)
decide the same traffic (50 clients at 10 requests/s each, 100 per 60 s), each on a fresh fake
server, taking turns; the figure is decisions per second of ``decide()``, the library's own
calls (its redis-py client, its scripts, the clock moved by time-machine) against one direct
script call. Printed, never asserted. Without the ``libraries`` extra it says what to install.
"""

from __future__ import annotations

from functools import partial

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.bench.timing import best_of
from simulator.checks import ConfigError

__all__ = ["bench_libraries", "TWINS"]

CLIENTS = 50
LIMIT, WINDOW_MS = 100, 60_000
#: The built-in each library strategy is an implementation of, by its name.
TWINS = {
    "fixed_window": "fixed_window",
    "moving_window": "sliding_log",
    "sliding_window_counter": "sliding_counter",
    "sliding_window": "sliding_counter",
    "token_bucket": "token_bucket",
    "leaking_bucket": "token_bucket",
    "gcra": "gcra",
}


def _decide_all(name: str, decisions: int) -> int:
    """Admitted of ``decisions`` requests decided by ``name`` on a fresh fake server."""
    now = [0]
    limiter = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), LIMIT, WINDOW_MS)
    decide, admitted = limiter.decide, 0
    for k in range(decisions):
        t = now[0] = (k // CLIENTS) * 100 + k % CLIENTS
        admitted += decide(f"user{k % CLIENTS}", t).allowed
    return admitted


def bench_libraries(decisions: int = 10_000) -> None:
    from simulator.libraries import register

    try:
        names = register()
    except ConfigError as exc:
        print(f"libraries: {exc}")
        return
    print(
        f"libraries: decisions/s on the fake server, {decisions:,} decisions, {CLIENTS} clients, "
        f"{LIMIT} per {WINDOW_MS // 1000} s (best of 3)"
    )
    print(f"{'library strategy':<32} {'dec/s':>9}  {'built-in':<16} {'dec/s':>9}  ratio  admitted")
    for name in names:
        twin = TWINS.get(name.split(".", 1)[1], "sliding_log")
        best = best_of({n: partial(_decide_all, n, decisions) for n in (name, twin)})
        (lib_s, lib_ok), (twin_s, twin_ok) = best[name], best[twin]
        print(
            f"{name:<32} {decisions / lib_s:>9,.0f}  {twin:<16} {decisions / twin_s:>9,.0f}"
            f"  {twin_s / lib_s:>5.2f}  {lib_ok:,} / {twin_ok:,}"
        )
