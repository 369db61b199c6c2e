"""The explorer: controls at the side, and beside them what the real scripts decided.

:class:`Explorer` ties the page (:mod:`simulator.explore.page`: every widget, laid out), the
runs (:class:`~simulator.explore.runs.Runner`) and the time bar
(:mod:`simulator.explore.timebar`) together, and owns when things run. It composes the parts
that do the rest: how one run goes, its progress bar and its neighbours run ahead
(:mod:`simulator.explore.running`); the right column, the servers shown, why and predict
(:mod:`simulator.explore.column`); the timeline and the time bar keeping one request chosen
(:mod:`simulator.explore.follow`); the page's address and export (:mod:`simulator.explore.share`).

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

import gc
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import make_backend, resolve_spec
from simulator.explore.column import Column
from simulator.explore.controls import Controls
from simulator.explore.follow import Follow
from simulator.explore.page import Page
from simulator.explore.pool import default_workers
from simulator.explore.presets import PRESETS, REFUSED, card_html
from simulator.explore.running import Running, Wanted
from simulator.explore.runs import Cancelled, Outcome, Runner
from simulator.explore.settings import Settings
from simulator.explore.share import Share, noted_payload, read_address
from simulator.explore.steps import Step
from simulator.explore.timebar import TimeBar
from simulator.explore.url import View
from simulator.explore.words import (
    busy_html,
    default_client,
    error_html,
    status_html,
    summary_html,
)

__all__ = ["Explorer", "VOILA_PREHEAT"]

#: Set to "True" by Voilà in a kernel it starts ahead of any page (``--preheat_kernel``).
VOILA_PREHEAT = "VOILA_PREHEAT"


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
        address: str | None = None,
    ) -> None:
        self.debounce_s = debounce_s
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
        self.timeline, self.question, self.instant = page.timeline, page.question, page.instant
        self.state_of, self.state, self.scrub = page.state_of, page.state, page.scrub
        self.view = page.view
        self.running = Running(self.runner, page, progress_from)
        self.timebar = TimeBar(
            page, self._hush, lambda: self.column.render(), lambda i: self.follow.moved(i)
        )
        self.follow = Follow(page, self.timebar)
        self.column = Column(
            page, self.timebar, lambda: self.share.write(self.outcome, self._preset)
        )
        self.share = Share(page, self.timebar)
        self.guesses = self.column.guesses
        self._visited: set[str] = set()
        self._preset = ""
        self._wanted: View | None = None  # what the page's address asked for, until drawn
        self._added: tuple[tuple[str, float, int], ...] = ()
        self.outcome: Outcome | None = None
        self.drawn = 0
        self._lock = threading.Condition()
        self._generation = 0
        self._scrub_generation = 0
        self._timer: threading.Timer | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer")
        self._hushed = threading.local()  # per thread: see _hush
        self._valkey: Backend | None = None
        self._client: str | None = None
        self.controls.observe(self._changed)
        self.scrub.observe(self._scrubbed, names="value")
        self.state_of.observe(self._state_changed, names="value")
        page.beside.observe(self._state_changed, names="value")
        for toggle in (page.predict, page.why_open):
            toggle.observe(lambda _: self._pool.submit(self.column.render), names="value")
        page.admit.on_click(lambda _: self._pool.submit(self.column.answer, True))
        page.refuse.on_click(lambda _: self._pool.submit(self.column.answer, False))
        self.timeline.observe(self._large, names="large")
        self.timeline.observe(self.follow.picked, names="index")
        self.timeline.observe(self._dragged, names="limit")
        self.timeline.observe(self._painted, names="added")
        page.export.on_click(lambda _: self._pool.submit(self._export))
        #: A kernel Voilà started ahead of any page (a preheated one) learns its page's
        #: address only when a page takes it (see :meth:`refresh`).
        self._ahead_of_page = address is None and os.environ.get(VOILA_PREHEAT) == "True"
        self._restore(os.environ.get("QUERY_STRING", "") if address is None else address)

    def _ipython_display_(self) -> None:
        from IPython.display import display  # only where there is a notebook to show it in

        display(self.view)

    @property
    def progress_from(self) -> float:
        """Runs of this many decisions or more show their progress bar at once."""
        return self.running.progress_from

    @property
    def step(self) -> Step | None:
        """The request shown on the time bar, if any."""
        return self.timebar.step

    @property
    def _quiet(self) -> bool:
        """True while this thread sets widgets itself (inside :meth:`_hush`)."""
        return bool(getattr(self._hushed, "on", False))

    @contextmanager
    def _hush(self) -> Iterator[None]:
        """Widgets set by the explorer itself: their change handlers do nothing meanwhile.

        Per thread: a handler runs in the thread that set the widget, so what the explorer sets
        (often in its worker thread) is hushed, while what the page sends meanwhile (handled in
        the kernel's own thread) is not lost -- a request painted while a run was being drawn.
        """
        was = self._quiet
        self._hushed.on = True
        try:
            yield
        finally:
            self._hushed.on = was

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
        """Show the preset ``name``'s settings (one run follows) and its card."""
        p = PRESETS[name]
        with self._hush():
            self.controls.apply(p.settings)
            self._client = p.client
        self.timebar.moment = None  # a new case: it starts at its first refusal
        self._added = ()
        with self._hush():
            self.timeline.added = []
        self._card(name)
        self._changed({"owner": None})

    def _card(self, name: str) -> None:
        """The preset ``name`` is the one shown: its card, and the presets seen ticked."""
        self._preset = name
        self.question.value = card_html(PRESETS[name], self._visited)
        self._visited.add(name)
        self.page.visited(self._visited, name)

    # -- the address ------------------------------------------------------------------------
    def _restore(self, query: str) -> None:
        """Show what the page's address asks for (a preset, settings, the moment)."""
        try:
            view = read_address(query)
        except Exception as exc:  # a link typed wrong: say so, show the page as it is
            self.status.value = error_html(exc)
            return
        if view is None:
            return
        with self._hush():
            self.controls.apply(view.settings)
            self._added = view.settings.traffic.added  # the requests painted by hand
            self.timeline.added = [{"t_ms": at_s * 1000, "n": n} for _, at_s, n in self._added]
        if view.preset:
            self._card(view.preset)
            self._client = PRESETS[view.preset].client
        self._client = view.client or self._client
        self._wanted = view

    def _prerun(self) -> None:
        """The settings shown now, run into the cache (a bad value: its own run says so)."""
        try:
            self.runner.run(self._settings())
        except Exception:  # said by the run that draws it
            pass

    def _await_page(self) -> None:
        """Wait for the page whose request Voilà hands this kernel, and show what its
        address asks for."""
        from voila.utils import wait_for_request  # only in a kernel Voilà preheated

        with warnings.catch_warnings():
            # Its event loop is left unclosed: collected here, not said in a run's status.
            warnings.simplefilter("ignore", ResourceWarning)
            wait_for_request()
            gc.collect()
        self._restore(os.environ.get("QUERY_STRING", ""))

    def address(self) -> str:
        """The query of the address that shows what is shown now."""
        return self.share.address(self.outcome, self._preset)

    # -- runs -------------------------------------------------------------------------------
    def refresh(self) -> Outcome | None:
        """Run what the controls show now and draw it (in this thread).

        In a kernel Voilà preheated (started, and its notebook run, before any page asked for
        it) the run is made first, into the cache, and then the kernel waits for the page that
        takes it: its address may ask for other settings; if not, the run is drawn at once."""
        if self._ahead_of_page:
            self._ahead_of_page = False
            self._pool.submit(self._prerun).result()
            self._await_page()
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

    def _changed(self, change: Any, *, at_once: bool = False) -> None:
        """A control changed: a run follows, after the debounce (a slider sends a value per
        notch it passes) or, ``at_once``, without it (a click sends one change)."""
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
                self._timer = None
            if at_once:
                self._submit(generation)
                return
            self._timer = threading.Timer(self.debounce_s, self._submit, (generation,))
            self._timer.daemon = True
            self._timer.start()

    def _submit(self, generation: int) -> None:
        if generation == self._generation:
            self._pool.submit(self._work, generation)

    def _settings(self) -> Settings:
        """What the controls show, with the requests painted onto the timeline."""
        settings = self.controls.settings()
        if not self._added:
            return settings
        return replace(settings, traffic=replace(settings.traffic, added=self._added))

    def _stale(self, generation: int) -> bool:
        return generation != self._generation

    def _work(self, generation: int) -> Outcome | None:
        if self._stale(generation):
            return None
        try:
            settings = self._settings()
            outcome, said = self.running.run(settings, lambda: self._stale(generation), self.drawn)
            if self._stale(generation):
                return None
            self._show(outcome, said, lambda: self._stale(generation))
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
        wanted = Wanted(self._settings)

        def stop(ahead: Settings) -> bool:
            if scrub_generation != self._scrub_generation:
                return True
            return self._stale(generation) and wanted.at(self._generation) != ahead

        self.running.ahead(settings, stop)

    def _show(self, outcome: Outcome, said: list[str], stale: Callable[[], bool]) -> None:
        """Draw ``outcome``: the rows at the moment chosen and the status first, then the
        steps of the servers shown (the right column follows; a newer run, ``stale()``,
        stops them). :meth:`wait` returns once both are done."""
        client = self._choose_client(outcome)
        payload = noted_payload(outcome, client)
        self.timebar.shown(outcome, client)
        wanted, self._wanted = self._wanted, None
        if wanted is not None and wanted.request:
            self.timebar.wanted_index = wanted.request - 1
        at = self.timebar.aim()
        payload["index"] = self.follow.told = self.follow.index_for(self.timeline.index)
        with self._hush():
            self.timeline.show(payload)
        self.summary.value = summary_html(outcome)
        self.progress.layout.visibility = "hidden"
        with self._lock:
            self.outcome = outcome
            self.status.value = status_html(outcome, self.drawn + 1, said)
        self.page.stale(False)
        try:
            self.timebar.step_now(at, keep=True, stale=stale)
        except Cancelled:
            pass  # the newer run steps its own
        finally:
            with self._lock:
                self.drawn += 1
                self._lock.notify_all()

    def _choose_client(self, outcome: Outcome) -> str | None:
        """The client shown (the one shown before, if the run has it; a preset's most refused
        one) and the dropdowns' choices for ``outcome``."""
        clients = outcome.clients()
        if self._client == REFUSED:
            self._client = most_refused(outcome)
        client = self._client if self._client in clients else default_client(clients)
        shown = clients[:200] if client in clients[:200] else [*clients[:199], client]
        with self._hush():
            if list(self.controls.client.options) != shown:
                self.controls.client.options = shown
            self.controls.client.value = client
            self.column.offer(list(outcome.frames), self._wanted)
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
        self.page.pair(bool(self.page.beside.value))
        self._pool.submit(self.timebar.retime)

    # -- the timeline: the limit dragged, requests painted, the rows enlarged -----------------
    def _dragged(self, change: Any) -> None:
        """The dashed limit was dragged: the limit control takes it (and a run follows)."""
        if not self._quiet:
            self.controls.limit.value = max(1, round(change["new"]))

    def _painted(self, change: Any) -> None:
        """Requests painted onto the timeline: every algorithm decides again with them."""
        if self._quiet:
            return
        client = self.timebar.client
        if client is None:
            return
        self._added = tuple(
            (client, float(a["t_ms"]) / 1000, int(a.get("n", 1))) for a in change["new"]
        )
        self._changed({"owner": None}, at_once=True)

    def _export(self) -> None:
        """The run shown, at the request chosen, offered as one HTML file (in the worker
        thread: the run drawn last, the timeline's index as it is then)."""
        self.share.export(self.outcome, self.timeline.index)

    def _large(self, change: Any) -> None:
        """Bigger text and rows, for a projector (or back)."""
        large = bool(change["new"])
        if large:
            self.view.add_class("explorer-large")
        else:
            self.view.remove_class("explorer-large")

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


def most_refused(outcome: Outcome) -> str | None:
    """The client the run refused most, over its algorithms (None: nobody was refused)."""
    counts: dict[str, int] = {}
    for frame in outcome.frames.values():
        refused = frame.loc[~frame["allowed"].astype(bool), "client"].value_counts()
        for client, n in refused.items():
            counts[str(client)] = counts.get(str(client), 0) + int(n)
    return max(sorted(counts), key=lambda c: counts[c]) if counts else None
