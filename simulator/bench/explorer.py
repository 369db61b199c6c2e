"""``bench explorer``: how long a reader of the explorer waits, against its goals.

The explorer of ``notebooks/00_explorer.ipynb`` on its default scenario (every registered
algorithm on its real Lua script, 6 clients of five kinds, 60 simulated seconds, limit 10 per
10 s, fakeredis). Four waits, each timed from the change to the new figure, summary and server
state being in their widgets (what a reader waits for, the debounce included):

- **redraw after a new value**: the limit moved one step at a time to values not run before,
  first with nothing run ahead (every algorithm decides every request again), then as the
  explorer runs (the limit's neighbours run into the cache while a figure is read, stopped by the
  next change: what they finished is kept), right after each redraw and at a reader's pace
  (a change :data:`READ_S` seconds after the last redraw); goal: a median of at most 0.25 s;
- **redraw of a value seen before**: the limit moved back over those values (from the cache);
- **a step of the time bar**: one request on, with the server's keys read before and after it;
  goal: at most 0.1 s;
- **the whole sample access log** (10,000 requests, every algorithm), and the preset's
  ten-minute slice of it; goal: the whole log in at most 3 s.

The explorer runs each algorithm on one of its worker processes (one per core, two at most;
``SIMULATOR_EXPLORER_WORKERS`` sets another number, 0 for none), so the figures depend on how many
cores are free: figures are printed with the machine's load average (``/proc/loadavg``); nothing is asserted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["bench_explorer"]

CHANGES = 15
STEPS = 20
PACED = 8
#: Seconds a reader looks at a figure before the next change, in the paced measurement.
READ_S = 1.5


def _load() -> str:
    try:
        one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return "load average unknown"
    return f"load average {one}, {five}, {fifteen}"


def _figures(seconds: list[float]) -> tuple[float, float, str]:
    ordered = sorted(seconds)
    median = statistics.median(ordered)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return median, p90, f"median {median:.3f} s, p90 {p90:.3f} s, best {ordered[0]:.3f} s"


def _workers(explorer: Any) -> str:
    pool = explorer.runner.pool
    if pool is None:
        return "the explorer's own process"
    return f"{pool.workers} worker process{'es' * (pool.workers != 1)} (an algorithm each)"


def _verdict(value: float, goal: float) -> str:
    return f"goal <= {goal:g} s: {'met' if value <= goal else 'NOT met'}"


def bench_explorer(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    from simulator.explore.app import Explorer
    from simulator.explore.presets import PRESETS, SAMPLE_TRACE
    from simulator.explore.settings import Settings

    cold = Explorer(look_ahead=False)
    try:
        cold.refresh()
        base = cold.controls.limit.value
        seconds = []
        for i in range(CHANGES):
            drawn = cold.drawn
            start = time.perf_counter()
            cold.controls.limit.value = base + 1 + i
            if not cold.wait(drawn + 1, timeout=300):
                raise RuntimeError(f"explorer: no redraw after a change; {cold.status.value}")
            seconds.append(time.perf_counter() - start)
        median, _, said = _figures(seconds)
        out(
            f"redraw after a new value, nothing run ahead ({CHANGES} changes, every algorithm "
            f"decides every request again): {said}; {_load()}"
        )
    finally:
        cold.close()

    explorer = Explorer()
    try:
        first = explorer.refresh()
        assert first is not None
        settings = first.settings
        out(
            f"explorer: default scenario, {len(settings.algorithms)} algorithms on their Lua "
            f"scripts, {len(settings.traffic.clients())} clients, {settings.duration_s:g} s "
            f"simulated, {first.decisions:,} decisions a run; runs on {_workers(explorer)}; "
            f"debounce {explorer.debounce_s} s included; {_load()}"
        )

        def change(limit: int) -> float:
            drawn = explorer.drawn
            start = time.perf_counter()
            explorer.controls.limit.value = limit
            if not explorer.wait(drawn + 1, timeout=300):
                raise RuntimeError(f"explorer: no redraw after a change; {explorer.status.value}")
            return time.perf_counter() - start

        fresh = [change(settings.limit + 1 + i) for i in range(CHANGES)]
        median, _, said = _figures(fresh)
        out(
            f"redraw after a new value, as the explorer runs (the limit's neighbours run ahead "
            f"while the figure is read; {CHANGES} changes, each right after the last redraw): "
            f"{said}; {_verdict(median, 0.25)}"
        )
        paced = []
        for i in range(PACED):
            time.sleep(READ_S)  # the reader looks at the figure before the next change
            paced.append(change(settings.limit + CHANGES + 1 + i))
        median, _, said = _figures(paced)
        out(
            f"redraw after a new value at a reader's pace (each change {READ_S:g} s after the "
            f"last redraw; {PACED} changes): {said}; {_verdict(median, 0.25)}"
        )
        seen = [change(settings.limit + CHANGES - 1 - i) for i in range(CHANGES)]
        out(f"redraw of a value seen before ({CHANGES} changes): {_figures(seen)[2]}")

        steps = []
        explorer.step_to(0)
        for i in range(1, STEPS + 1):
            start = time.perf_counter()
            explorer.step_to(i)
            steps.append(time.perf_counter() - start)
        median, _, said = _figures(steps)
        out(f"a step of the time bar ({STEPS} steps): {said}; {_verdict(median, 0.1)}")

        preset = PRESETS["sample access log"].settings
        for label, span_s in (("its ten-minute slice", preset.trace_span_s), ("whole", 0.0)):
            whole = Settings(
                limit=preset.limit,
                window_s=preset.window_s,
                trace=str(SAMPLE_TRACE),
                trace_format="clf",
                trace_span_s=span_s,
            )
            explorer.controls.apply(whole)
            start = time.perf_counter()
            outcome = explorer.refresh()
            took = time.perf_counter() - start
            assert outcome is not None, explorer.status.value
            goal = f"; {_verdict(took, 3.0)}" if span_s == 0 else ""
            out(
                f"the sample access log, {label}: {outcome.decisions:,} decisions drawn in "
                f"{took:.2f} s{goal}"
            )
        out(f"after: {_load()}")
    finally:
        explorer.close()
