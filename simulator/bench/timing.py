"""The one timer of the benchmark: the best of a few runs, the runs taking turns.

The machine's other work can only slow a run down, so the fastest of a few runs is the figure;
several things measured in one benchmark take turns (a, b, a, b, ...), so that a spell of load
falls on all of them alike. Figures are printed, never asserted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["best_of", "load_average", "spread", "verdict"]


def best_of(
    runs: Mapping[str, Callable[[], object]],
    repeats: int = 3,
    before: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, tuple[float, object]]:
    """For each run: the shortest time in seconds of ``repeats`` turns, and that run's result.

    ``before`` (e.g. emptying a server) runs before every turn and is not timed. ``clock`` is
    wall time by default; ``time.process_time`` counts only this process's own CPU seconds, which
    other work on a busy machine disturbs far less (for runs that do not wait on another process).
    """
    best: dict[str, tuple[float, object]] = {name: (float("inf"), None) for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            if before is not None:
                before()
            start = clock()
            result = run()
            elapsed = clock() - start
            if elapsed < best[name][0]:
                best[name] = (elapsed, result)
    return best


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes, as printed beside a figure."""
    try:
        one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return "load average unknown"
    return f"load average {one}, {five}, {fifteen}"


def spread(seconds: list[float]) -> tuple[float, float, str]:
    """The median and the 90th percentile of ``seconds``, and both with the best as printed."""
    ordered = sorted(seconds)
    median = statistics.median(ordered)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return median, p90, f"median {median:.3f} s, p90 {p90:.3f} s, best {ordered[0]:.3f} s"


def verdict(value: float, goal: float) -> str:
    """Whether ``value`` seconds meets a goal of at most ``goal`` seconds, as printed."""
    return f"goal <= {goal:g} s: {'met' if value <= goal else 'NOT met'}"
