"""The one timer of the benchmark: the best of a few runs, the runs taking turns.

The machine's other work can only slow a run down, so the fastest of a few runs is the figure;
several things measured in one benchmark take turns (a, b, a, b, ...), so that a spell of load
falls on all of them alike. Figures are printed, never asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

__all__ = ["best_of"]


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
