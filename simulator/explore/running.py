"""How one run of the explorer goes: its progress shown, what it warned, and its neighbours.

The explorer (:mod:`simulator.explore.app`) decides *when* to run; :class:`Running` makes the
run. Anything past a second shows the progress bar beside the status line: *reading* while a
trace file is read, then *deciding*, the decisions made of all (a run big enough that it will
take a while shows the bar at once). The warnings a run raises are kept and said in the status
line rather than lost in a log nobody reads.

While the reader looks at a run, the same settings with the limit one step up and one step down
run *ahead* into the runner's cache, so a slider moved by one notch is drawn at once. Only on
the fake server, where a run is cheap and repeatable, and not for a trace (its neighbours would
read it all again); the caller says when to stop (:meth:`Running.ahead`).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable

from simulator.backends.specs import resolve_spec
from simulator.explore.page import Page
from simulator.explore.runs import Cancelled, Outcome, Runner
from simulator.explore.settings import Settings, expected_requests, with_limit
from simulator.explore.words import busy_html

__all__ = ["Running", "Wanted"]


class Wanted:
    """What the controls ask for (``read()``), read once per change: ``at(generation)`` reads
    them again only when ``generation`` is new (a bad value: None; its own run says so)."""

    def __init__(self, read: Callable[[], Settings]) -> None:
        self._read = read
        self._generation: int | None = None
        self._settings: Settings | None = None

    def at(self, generation: int) -> Settings | None:
        if generation != self._generation:
            self._generation = generation
            try:
                self._settings = self._read()
            except Exception:  # a bad value: its own run will say so
                self._settings = None
        return self._settings


class Running:
    """Runs of ``runner`` whose progress ``page`` shows; runs of ``progress_from`` decisions
    or more show their bar at once."""

    def __init__(self, runner: Runner, page: Page, progress_from: float) -> None:
        self.runner, self.page, self.progress_from = runner, page, progress_from

    def run(
        self, settings: Settings, stale: Callable[[], bool], drawn: int
    ) -> tuple[Outcome, list[str]]:
        """Run ``settings`` until ``stale()`` (:class:`Cancelled`); the outcome and what the run
        warned. ``drawn``: the runs drawn so far, as the status line counts them."""
        bar, status = self.page.progress, self.page.status
        bar.value, bar.max, bar.description = 0, 1, "reading"
        later = threading.Timer(1.0, lambda: setattr(bar.layout, "visibility", "visible"))
        later.daemon = True
        later.start()
        try:
            if settings.trace is not None:
                status.value = "<b>reading the trace file…</b>"
                requests = len(self.runner.trace(settings.trace, settings.trace_format))
                status.value = busy_html(drawn)
            else:
                requests = round(expected_requests(settings))
            total = len(settings.algorithms) * requests
            bar.value, bar.max, bar.description = 0, max(total, 1), "deciding"
            if total >= self.progress_from:
                bar.layout.visibility = "visible"
            return self._decide_all(settings, stale)
        finally:
            later.cancel()

    def _decide_all(
        self, settings: Settings, stale: Callable[[], bool]
    ) -> tuple[Outcome, list[str]]:
        bar, last = self.page.progress, [0.0]

        def progress(done: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.2:  # the bar is a widget message: a few a second will do
                last[0] = now
                bar.value = min(done, bar.max)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = self.runner.run(settings, stale, progress)
        return outcome, [str(c.message) for c in caught]

    def ahead(self, settings: Settings, stop: Callable[[Settings], bool]) -> None:
        """Run the limit one step up, then one down, into the cache; ``stop(ahead)`` says, at
        each decision, whether the run of ``ahead`` is still wanted. What finished stays
        cached; a neighbour that cannot run is simply not cached."""
        if not resolve_spec(settings.backend).virtual_time or settings.trace is not None:
            return
        for limit in (settings.limit + 1, settings.limit - 1):
            if limit < 1:
                continue
            ahead = with_limit(settings, limit)

            def stale(ahead: Settings = ahead) -> bool:
                return stop(ahead)

            if stale():
                return
            try:
                self.runner.run(ahead, stale)
            except Cancelled:
                return
            except Exception:  # a neighbour that cannot run is simply not cached
                continue
