"""Benchmark ``libraries``: the limiters people run, unchanged, beside the built-in of the
same algorithm, on the fake server and on the embedded Valkey.

Each library strategy (``limits.moving_window`` ...) and its built-in twin (``sliding_log``)
decide the same traffic (50 clients at 10 requests/s each, 100 per 60 s), each on a fresh fake
server, taking turns; the figure is decisions per second of ``decide()``, the library's own
calls (its redis-py client, its scripts, the clock moved by time-machine) against one direct
script call. Then the same on a ``valkey-server`` started for the run (emptied before each
decision run: it is the run's own), for every strategy whose decisions do not follow the server's
clock (one line says why for the others). Printed, never asserted. Without the ``libraries``
extra it says what to install.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from simulator.algorithms.base import Limiter
from simulator.backends import FakeRedisBackend
from simulator.bench.timing import best_of
from simulator.checks import ConfigError
from simulator.policy import lookup

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

#: A library strategy and its built-in twin.
Pair = tuple[type[Limiter], type[Limiter]]


def _pairs(names: list[str]) -> list[Pair]:
    """Each library strategy registered (by its name) with its built-in twin, both looked up
    once, here, where their names come in."""
    return [(lookup(n), lookup(TWINS.get(n.split(".", 1)[1], "sliding_log"))) for n in names]


def _decide_all(cls: type[Limiter], decisions: int, backend: Any = None) -> int:
    """Admitted of ``decisions`` requests decided by ``cls`` on a fresh fake server, or on
    ``backend`` (a server of the run's own, emptied first)."""
    now = [0]
    if backend is None:
        backend = FakeRedisBackend(lambda: now[0])
    else:
        backend.client.flushdb()
    limiter = cls(backend, LIMIT, WINDOW_MS)
    decide, admitted = limiter.decide, 0
    for k in range(decisions):
        t = now[0] = (k // CLIENTS) * 100 + k % CLIENTS
        admitted += decide(f"user{k % CLIENTS}", t).allowed
    return admitted


def _table(where: str, pairs: list[Pair], decisions: int, backend: Any = None) -> None:
    """One table: each strategy beside its built-in twin, decisions per second on ``where``."""
    print(
        f"libraries: decisions/s on {where}, {decisions:,} decisions, {CLIENTS} clients, "
        f"{LIMIT} per {WINDOW_MS // 1000} s (best of 3)"
    )
    print(f"{'library strategy':<32} {'dec/s':>9}  {'built-in':<16} {'dec/s':>9}  ratio  admitted")
    for pair in pairs:
        name, twin = pair[0].name, pair[1].name
        best = best_of({c.name: partial(_decide_all, c, decisions, backend) for c in pair})
        (lib_s, lib_ok), (twin_s, twin_ok) = best[name], best[twin]
        print(
            f"{name:<32} {decisions / lib_s:>9,.0f}  {twin:<16} {decisions / twin_s:>9,.0f}"
            f"  {twin_s / lib_s:>5.2f}  {lib_ok:,} / {twin_ok:,}"
        )


def _on_valkey(pairs: list[Pair], decisions: int) -> None:
    """The table on a valkey-server started (and stopped) here, for the strategies whose
    decisions do not follow the server's clock; one line for each of the others."""
    from simulator.backends import make_backend
    from simulator.backends.choice import reads_server_clock

    kept = []
    for pair in pairs:
        why = reads_server_clock(pair[0])
        if why:
            print(f"{pair[0].name}: not on Valkey: {why}")
        else:
            kept.append(pair)
    backend = make_backend("valkey")
    try:
        _table(f"the embedded Valkey ({backend.describe()})", kept, decisions, backend)
    finally:
        backend.close()  # and the server it started stopped


def bench_libraries(decisions: int = 10_000, valkey: bool = True) -> None:
    from simulator.libraries import register

    try:
        names = register()
    except ConfigError as exc:
        print(f"libraries: {exc}")
        return
    pairs = _pairs(names)
    _table("the fake server", pairs, decisions)
    if valkey:
        print()
        _on_valkey(pairs, decisions)
