"""The explorer: controls at the side, and beside them what the real scripts decided.

:class:`Explorer` ties the page (:mod:`simulator.explore.page`: every widget, laid out), the
runs (:class:`~simulator.explore.runs.Runner`), the time bar
(:mod:`simulator.explore.timebar`) and what the page says (:mod:`simulator.explore.words`)
together, and owns when things run.

A change of a control marks the figure as stale at once (dimmed, "running") and, after a moment
(``debounce_s``) for the next change - a slider being dragged sends many - one run starts in a
worker thread, so the page stays responsive. A run that a newer change overtakes stops at its
next decision (:class:`~simulator.explore.runs.Cancelled`) and draws nothing. A bad value names
its control in the status and leaves the figure dimmed, marked as the previous run's. Steps of
the time bar run in the same worker thread, one at a time (the fake servers share one clock
switch). While the reader looks at a run, the same settings with the limit one step up and one
step down run into the cache (stopped by any change or step), so a slider moved by one notch is
drawn at once.

The runs go to a few worker processes (one per core, see :mod:`simulator.explore.pool`), an
algorithm each, started by the first change a page sends (a page that never connects - a plain
GET of the served page - starts none: its first run, drawn as the page is made, goes in the
kernel itself) and ended with the explorer. On the embedded Valkey the explorer starts one
server the first time it is chosen, empties it before each run and stops it in
:meth:`Explorer.close`, when Python exits, or when the kernel that started it ends.
"""

from __future__ import annotations

import html
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import make_backend, resolve_spec
from simulator.explore.controls import Controls
from simulator.explore.page import Page
from simulator.explore.pool import default_workers
from simulator.explore.presets import PRESETS
from simulator.explore.runs import Cancelled, Outcome, Runner
from simulator.explore.settings import Settings, expected_requests, with_limit
from simulator.explore.steps import Step
from simulator.explore.timebar import TimeBar
from simulator.explore.words import (
    busy_html,
    default_client,
    error_html,
    row_note,
    status_html,
    summary_html,
)

__all__ = ["Explorer"]


class Explorer:
    """Presets, controls, time bar, rows and server state in one widget (:attr:`view`).

    ``refresh()`` runs the current settings at once and draws them (the first draw); afterwards
    every change runs by itself. ``wait(n)`` blocks until ``n`` runs have been drawn;
    ``step_to(i)`` shows request ``i`` of the client shown and returns its :class:`Step`.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        debounce_s: float = 0.02,
        progress_from: float = 20_000,
        look_ahead: bool = True,
        workers: int | None = None,
    ) -> None:
        self.debounce_s, self.progress_from = debounce_s, progress_from
        self.look_ahead = look_ahead
        self.controls = Controls(settings or Settings())
        self.runner = Runner(
            self._backend_for,
            self._empty,
            workers=default_workers() if workers is None else workers,
            autostart=False,  # started by the first change a page sends
        )
        page = self.page = Page(self.controls, self.preset, lambda by: self.timebar.nudge(by))
        self.status, self.progress, self.summary = page.status, page.progress, page.summary
        self.rows, self.question, self.instant = page.rows, page.question, page.instant
        self.state_of, self.state, self.scrub = page.state_of, page.state, page.scrub
        self.view = page.view
        self.timebar = TimeBar(page, self._hush)
        self.outcome: Outcome | None = None
        self.drawn = 0
        self._lock = threading.Condition()
        self._generation = 0
        self._scrub_generation = 0
        self._timer: threading.Timer | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer")
        self._quiet = False
        self._valkey: Backend | None = None
        self._client: str | None = None
        self.controls.observe(self._changed)
        self.scrub.observe(self._scrubbed, names="value")
        self.state_of.observe(self._state_changed, names="value")

    def _ipython_display_(self) -> None:
        from IPython.display import display  # only where there is a notebook to show it in

        display(self.view)

    @property
    def step(self) -> Step | None:
        """The request shown on the time bar, if any."""
        return self.timebar.step

    @contextmanager
    def _hush(self) -> Iterator[None]:
        """Widgets set by the explorer itself: their change handlers do nothing meanwhile."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    # -- backends ---------------------------------------------------------------------------
    def _backend_for(self, name: str) -> Backend:
        if resolve_spec(name).virtual_time:
            return DirectFakeBackend()
        if self._valkey is None:  # started in the worker thread, which lives as long as we do
            self._valkey = make_backend(name)
        return self._valkey

    def _empty(self, backend: Backend) -> None:
        if backend is self._valkey:
            backend.client.flushdb()  # type: ignore[attr-defined]  # our own server, no one else's

    def close(self) -> None:
        """Stop the worker thread and processes, and the embedded server, if one was started."""
        with self._lock:
            self._generation += 1
            if self._timer is not None:
                self._timer.cancel()
        self._pool.shutdown(wait=True)
        self.runner.close()
        self.timebar.close()
        if self._valkey is not None:
            self._valkey.close()
            self._valkey = None

    # -- presets ----------------------------------------------------------------------------
    def preset(self, name: str) -> None:
        """Show the preset ``name``'s settings (one run follows) and its question."""
        p = PRESETS[name]
        with self._hush():
            self.controls.apply(p.settings)
            self._client = p.client
        self.question.value = f"<b>{html.escape(p.name)}</b>: {html.escape(p.question)}"
        self._changed({"owner": None})

    # -- runs -------------------------------------------------------------------------------
    def refresh(self) -> Outcome | None:
        """Run what the controls show now and draw it (in this thread)."""
        with self._lock:
            self._generation += 1
            generation = self._generation
        self._busy()
        return self._pool.submit(self._work, generation).result()

    def wait(self, drawn: int, timeout: float = 60.0) -> bool:
        """Block until ``drawn`` runs have been drawn in all; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self.drawn >= drawn, timeout)

    def _busy(self) -> None:
        """Mark what is shown as stale at once: a run (or an error) follows."""
        self.status.value = busy_html(self.drawn)
        self.page.stale(True)

    def _changed(self, change: Any) -> None:
        if self._quiet:
            return
        self.runner.start_workers()  # a page (or a caller) is changing things: runs will follow
        if change.get("owner") is self.controls.client:
            self._client = self.controls.client.value
        if change.get("owner") in (self.controls.limit, self.controls.window_s):
            with self._hush():
                self.controls.follow_defaults()
        self._busy()
        with self._lock:
            self._generation += 1
            generation = self._generation
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._submit, (generation,))
            self._timer.daemon = True
            self._timer.start()

    def _submit(self, generation: int) -> None:
        if generation == self._generation:
            self._pool.submit(self._work, generation)

    def _stale(self, generation: int) -> bool:
        return generation != self._generation

    def _work(self, generation: int) -> Outcome | None:
        if self._stale(generation):
            return None
        try:
            settings = self.controls.settings()
            outcome, said = self._run(settings, generation)
            if self._stale(generation):
                return None
            self._show(outcome, said)
            if self.look_ahead:
                self._pool.submit(self._ahead, settings, generation, self._scrub_generation)
        except Cancelled:
            return None
        except Exception as exc:  # a bad value or an unreadable file: say so, keep the page
            if not self._stale(generation):
                self.progress.layout.visibility = "hidden"
                self.status.value = error_html(exc, self.drawn)
            return None
        return outcome

    def _ahead(self, settings: Settings, generation: int, scrub_generation: int) -> None:
        """While the reader looks, run the limit one step up and down into the cache (a slider
        moved by one notch is then drawn at once). A step of the time bar, or a change to
        anything but the settings being run ahead, stops it at its next decision; what it
        finished stays cached. A change to exactly those settings lets it finish: the run the
        change asks for then finds them all in the cache."""
        if not resolve_spec(settings.backend).virtual_time or settings.trace is not None:
            return
        wanted: dict[int, Settings | None] = {}

        def asked_for(ahead: Settings) -> bool:
            now = self._generation
            if now not in wanted:  # read the controls once per change
                wanted.clear()
                try:
                    wanted[now] = self.controls.settings()
                except Exception:  # a bad value: its own run will say so
                    wanted[now] = None
            return wanted[now] == ahead

        for limit in (settings.limit + 1, settings.limit - 1):
            if limit < 1:
                continue
            ahead = with_limit(settings, limit)

            def stop(ahead: Settings = ahead) -> bool:
                if scrub_generation != self._scrub_generation:
                    return True
                return self._stale(generation) and not asked_for(ahead)

            if stop():
                return
            try:
                self.runner.run(ahead, stop)
            except Cancelled:
                return
            except Exception:  # a neighbour that cannot run is simply not cached
                continue

    def _run(self, settings: Settings, generation: int) -> tuple[Outcome, list[str]]:
        if settings.trace is not None:
            total = len(settings.algorithms) * len(
                self.runner.trace(settings.trace, settings.trace_format)
            )
        else:
            total = len(settings.algorithms) * round(expected_requests(settings))
        bar = self.progress
        bar.value, bar.max = 0, max(total, 1)
        bar.layout.visibility = "visible" if total >= self.progress_from else "hidden"
        last = [0.0]

        def progress(done: int) -> None:
            now = time.monotonic()
            if bar.layout.visibility == "visible" and now - last[0] > 0.2:
                last[0] = now
                bar.value = min(done, bar.max)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = self.runner.run(settings, lambda: self._stale(generation), progress)
        return outcome, [str(c.message) for c in caught]

    def _show(self, outcome: Outcome, said: list[str]) -> None:
        s = outcome.settings
        client = self._choose_client(outcome)
        span_ms = None if s.trace is not None else round(s.duration_s * 1000)
        notes = {a: row_note(x) for a, x in outcome.summaries.items()}
        self.rows.show(
            outcome.frames, s.limit, s.window_ms, client, outcome.origin_ms, span_ms, notes
        )
        self.summary.value = summary_html(outcome)
        self.progress.layout.visibility = "hidden"
        self.timebar.shown(outcome, client)
        with self._lock:
            self.outcome = outcome
            self.drawn += 1
            self.status.value = status_html(outcome, self.drawn, said)
        self.timebar.retime()
        self.page.stale(False)
        with self._lock:
            self._lock.notify_all()

    def _choose_client(self, outcome: Outcome) -> str | None:
        """The client shown (the one shown before, if the run has it) and the two dropdowns'
        choices for ``outcome``."""
        clients = outcome.clients()
        client = self._client if self._client in clients else default_client(clients)
        shown = clients[:200] if client in clients[:200] else [*clients[:199], client]
        with self._hush():
            if list(self.controls.client.options) != shown:
                self.controls.client.options = shown
            self.controls.client.value = client
            algorithms = list(outcome.frames)
            if list(self.state_of.options) != algorithms:
                keep = self.state_of.value
                self.state_of.options = algorithms
                first = algorithms[0] if algorithms else None
                self.state_of.value = keep if keep in algorithms else first
        self._client = client
        return client

    # -- the time bar -----------------------------------------------------------------------
    def _scrubbed(self, change: Any) -> None:
        if self._quiet:
            return
        with self._lock:
            self._scrub_generation += 1
            mine = self._scrub_generation
        self._pool.submit(self._step_work, mine, int(change["new"]))

    def _state_changed(self, change: Any) -> None:
        if self._quiet:
            return
        self._pool.submit(self.timebar.retime, True)

    def _step_work(self, generation: int, i: int) -> None:
        if generation != self._scrub_generation:  # a newer position was asked for: skip this
            return
        try:
            self.timebar.step_now(i)
        except Exception as exc:  # shown where the state would be
            self.state.value = error_html(exc)

    def step_to(self, i: int) -> Step | None:
        """Show request ``i`` of the client shown (waiting for it), and return its step."""
        self.scrub.value = i
        self._pool.submit(lambda: None).result()
        return self.step
