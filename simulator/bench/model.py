"""Benchmark ``model``: what the SimPy model itself costs per decision.

Every decision here is made in pure Python (the algorithm's :class:`Reference`, the script's
twin), so no server is involved and the figure is the model's own: played-ahead Poisson clients
asked for by the feeder, the limiter's ``decide``, the decision log and the frame at the end. The
goal is at least 250,000 decisions a second.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.bench.timing import best_of
from simulator.engine.run import simulate
from simulator.engine.scenario import Poisson, Scenario

__all__ = ["bench_model", "in_python"]

CLIENTS = 1000
RATE_PER_S = 10.0
LIMIT, WINDOW_MS = 100, 60_000
GOAL_PER_S = 250_000
REPEAT = 3
#: Decisions per algorithm at the default ``--decisions 10000`` (scaled in proportion).
SCALE = 20


def in_python(cls: type[Limiter]) -> type[Limiter]:
    """``cls`` deciding with its pure-Python reference instead of its script."""

    class InPython(cls):  # type: ignore[valid-type, misc]
        def __init__(self, backend: Any, limit: int, window_ms: int, **params: Any) -> None:
            super().__init__(backend, limit, window_ms, **params)
            self.decide = self.reference(limit, window_ms, **params).decide  # type: ignore[method-assign]

    return InPython


def _scenario(algorithm: type[Limiter], decisions: int) -> Scenario:
    duration_ms = decisions / (CLIENTS * RATE_PER_S) * 1000
    clients = tuple(Poisson(f"user{i}", rate_per_s=RATE_PER_S) for i in range(CLIENTS))
    return Scenario(algorithm, LIMIT, WINDOW_MS, duration_ms, clients, seed=1)  # type: ignore[arg-type]


def bench_model(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    n = decisions * SCALE
    out(
        f"model: about {n:,} decisions per algorithm, {CLIENTS} Poisson clients at "
        f"{RATE_PER_S:g} req/s, each decision by the algorithm's pure-Python reference (no "
        f"server); simulate() end to end, frame included; the fastest of {REPEAT} turns; "
        f"goal {GOAL_PER_S:,}/s"
    )
    out(f"{'algorithm':<20} {'decisions':>10} {'decisions/s':>12} {'of goal':>8}")
    rows: list[dict[str, object]] = []
    for algorithm, cls in ALGORITHMS.items():
        # the scenario's policy holds the variant itself: nothing is looked up by name again
        run = partial(simulate, _scenario(in_python(cls), n))
        elapsed, frame = best_of({"model": run}, REPEAT)["model"]
        made = len(frame)  # type: ignore[arg-type]
        rate = made / elapsed
        rows.append({"algorithm": algorithm, "decisions": made, "decisions_per_s": rate})
        out(f"{algorithm:<20} {made:>10,} {rate:>12,.0f} {rate / GOAL_PER_S:>7.2f}x")
    return rows
