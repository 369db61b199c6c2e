"""Benchmarks that print figures and ratios measured in one run on this machine.

``core``: how much the simulator costs on top of the scripts. For each algorithm the same number
of decisions is made twice on the embedded fakeredis: once as a bare loop of ``EVALSHA`` calls
(keys and arguments prepared in advance, each handed to the server as the limiter hands it: the
backend's direct path), once through the whole model (SimPy clients, limiter,
decision log, DataFrame). The ratio is simulator rate / raw rate; the goal is >= 0.9.

``clock``: a simulated hour of TTL-driven echomq, in wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import FakeRedisBackend
from simulator.bench.timing import best_of
from simulator.engine.run import simulate
from simulator.engine.scenario import ConstantRate, Scenario

__all__ = ["bench_core", "bench_clock"]

CLIENTS = 50
LIMIT, WINDOW_MS = 100, 60_000


def _scenario(algorithm: type[Limiter], decisions: int) -> Scenario:
    # CLIENTS clients at 10 req/s each: `decisions` requests take decisions / (10 * CLIENTS) s.
    duration_ms = decisions / (10 * CLIENTS) * 1000
    clients = tuple(ConstantRate(f"user{i}", rate_per_s=10, start_ms=i) for i in range(CLIENTS))
    return Scenario(algorithm, LIMIT, WINDOW_MS, duration_ms, clients)  # type: ignore[arg-type]


def _raw_rate(algorithm: type[Limiter], decisions: int) -> float:
    """EVALSHA in a bare loop (or the server's own command, for INCREX), same keys and times as
    the simulated run would use."""
    t_ms = [0]
    backend = FakeRedisBackend(lambda: t_ms[0])
    limiter = algorithm(backend, LIMIT, WINDOW_MS)
    calls = []
    for k in range(decisions):
        now = (k // CLIENTS) * 100 + k % CLIENTS
        calls.append((now, limiter.call(f"user{k % CLIENTS}", now)))
    backend.preload({script for _, (script, _, _) in calls if not script.command})
    call = backend.call
    start = time.perf_counter()
    for now, (script, keys, args) in calls:
        t_ms[0] = now
        call(script, keys, args)
    return decisions / (time.perf_counter() - start)


def _sim_rate(algorithm: type[Limiter], decisions: int) -> tuple[float, int]:
    scenario = _scenario(algorithm, decisions)
    start = time.perf_counter()
    frame = simulate(scenario)
    return len(frame) / (time.perf_counter() - start), len(frame)


def bench_core(
    decisions: int = 10_000, out: Callable[[str], None] = print, repeats: int = 3
) -> list[dict[str, object]]:
    out(
        f"core: {decisions} decisions per algorithm, {CLIENTS} clients, embedded fakeredis; "
        f"best of {repeats} interleaved runs"
    )
    out(f"{'algorithm':<20} {'raw EVALSHA/s':>14} {'simulator/s':>12} {'ratio':>6}")
    rows = []
    for algorithm, cls in ALGORITHMS.items():
        runs: dict[str, Callable[[], object]] = {
            "raw": partial(_raw_rate, cls, decisions),
            "sim": partial(_sim_rate, cls, decisions),
        }
        timed = best_of(runs, repeats)
        # the fastest turn of each, and the rate it measured (the raw loop times the calls alone)
        raw = float(timed["raw"][1])  # type: ignore[arg-type]
        sim = float(timed["sim"][1][0])  # type: ignore[index]
        rows.append(
            {"algorithm": algorithm, "raw_per_s": raw, "sim_per_s": sim, "ratio": sim / raw}
        )
        out(f"{algorithm:<20} {raw:>14,.0f} {sim:>12,.0f} {sim / raw:>6.2f}")
    return rows


def bench_clock(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    """A simulated hour of a few clients: how much wall time it takes."""
    scenario = Scenario(
        "echomq", 100, 60_000, 3_600_000, tuple(ConstantRate(f"c{i}", 0.1) for i in range(5))
    )
    start = time.perf_counter()
    frame = simulate(scenario)
    wall_s = time.perf_counter() - start
    out(
        f"clock: 1 simulated hour, 5 clients, {len(frame)} decisions on echomq (TTL-driven) "
        f"in {wall_s:.3f} s wall time ({3600 / wall_s:,.0f}x faster than real time)"
    )
