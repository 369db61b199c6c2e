"""``bench explorer``: how long the explorer takes to redraw after a control change.

The explorer of ``notebooks/00_explorer.ipynb`` on its default scenario (every registered
algorithm, 6 clients of five kinds, 60 simulated seconds, limit 10 per 10 s, fakeredis): the limit
is moved one step at a time, and each change is timed from the new value to the new figure and
summary being in their widgets - the debounce wait, every algorithm's run by its Lua script, the
summaries and the PNG - which is what a reader waits for. The median and the 90th percentile are
printed; the goal is a median of at most 1 s on a 2-core machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["bench_explorer"]

CHANGES = 21


def bench_explorer(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    from simulator.explore.app import Explorer

    explorer = Explorer()
    try:
        first = explorer.refresh()
        assert first is not None
        settings = first.settings
        out(
            f"explorer: default scenario, {len(settings.algorithms)} algorithms, "
            f"{len(settings.traffic.clients())} clients, {settings.duration_s:g} s simulated, "
            f"{first.decisions:,} decisions a run; {CHANGES} changes of the limit, each timed "
            f"from the slider's new value to the redrawn figure (debounce {explorer.debounce_s} s "
            "included)"
        )
        seconds: list[float] = []
        for i in range(CHANGES):
            drawn = explorer.drawn
            start = time.perf_counter()
            explorer.controls.limit.value = settings.limit + 1 + i
            if not explorer.wait(drawn + 1, timeout=120):
                raise RuntimeError(f"explorer: no redraw after a change; {explorer.status.value}")
            seconds.append(time.perf_counter() - start)
        ordered = sorted(seconds)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        out(
            f"redraw after a control change: median {statistics.median(seconds):.2f} s, "
            f"p90 {p90:.2f} s, best {ordered[0]:.2f} s, worst {ordered[-1]:.2f} s "
            "(goal: median <= 1 s)"
        )
    finally:
        explorer.close()
