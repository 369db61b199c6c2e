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

import time
from collections.abc import Callable
from typing import Any

from simulator.bench.timing import load_average, spread, verdict

__all__ = ["bench_explorer", "REDRAW_GOAL_S", "STEP_GOAL_S", "WHOLE_LOG_GOAL_S"]

#: The explorer's goals (seconds): a redraw's median, a step of the time bar, the whole sample
#: access log.
REDRAW_GOAL_S, STEP_GOAL_S, WHOLE_LOG_GOAL_S = 0.25, 0.1, 3.0

CHANGES = 15
STEPS = 20
PACED = 8
#: Seconds a reader looks at a figure before the next change, in the paced measurement.
READ_S = 1.5


def _workers(explorer: Any) -> str:
    n = explorer.runner.workers
    if n == 0:
        return "the explorer's own process"
    return (
        f"{n} worker process{'es' * (n != 1)} (an algorithm each; started by the first change, "
        "the runs in the explorer's own process until they are up)"
    )


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
        median, _, said = spread(seconds)
        out(
            f"redraw after a new value, nothing run ahead ({CHANGES} changes, every algorithm "
            f"decides every request again): {said}; {load_average()}"
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
            f"debounce {explorer.debounce_s} s included; {load_average()}"
        )

        def change(limit: int) -> float:
            drawn = explorer.drawn
            start = time.perf_counter()
            explorer.controls.limit.value = limit
            if not explorer.wait(drawn + 1, timeout=300):
                raise RuntimeError(f"explorer: no redraw after a change; {explorer.status.value}")
            return time.perf_counter() - start

        fresh = [change(settings.limit + 1 + i) for i in range(CHANGES)]
        median, _, said = spread(fresh)
        out(
            f"redraw after a new value, as the explorer runs (the limit's neighbours run ahead "
            f"while the figure is read; {CHANGES} changes, each right after the last redraw): "
            f"{said}; {verdict(median, REDRAW_GOAL_S)}"
        )
        paced = []
        for i in range(PACED):
            time.sleep(READ_S)  # the reader looks at the figure before the next change
            paced.append(change(settings.limit + CHANGES + 1 + i))
        median, _, said = spread(paced)
        out(
            f"redraw after a new value at a reader's pace (each change {READ_S:g} s after the "
            f"last redraw; {PACED} changes): {said}; {verdict(median, REDRAW_GOAL_S)}"
        )
        seen = [change(settings.limit + CHANGES - 1 - i) for i in range(CHANGES)]
        out(f"redraw of a value seen before ({CHANGES} changes): {spread(seen)[2]}")

        steps = []
        explorer.step_to(0)
        for i in range(1, STEPS + 1):
            start = time.perf_counter()
            explorer.step_to(i)
            steps.append(time.perf_counter() - start)
        median, _, said = spread(steps)
        out(f"a step of the time bar ({STEPS} steps): {said}; {verdict(median, STEP_GOAL_S)}")

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
            goal = f"; {verdict(took, WHOLE_LOG_GOAL_S)}" if span_s == 0 else ""
            out(
                f"the sample access log, {label}: {outcome.decisions:,} decisions drawn in "
                f"{took:.2f} s{goal}"
            )
        out(f"after: {load_average()}")
    finally:
        explorer.close()
