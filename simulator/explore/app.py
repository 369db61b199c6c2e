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

import os
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import make_backend, resolve_spec
from simulator.explore.controls import Controls
from simulator.explore.export import page_html
from simulator.explore.front import timeline_payload
from simulator.explore.page import Page
from simulator.explore.pool import default_workers
from simulator.explore.predict import Guesses
from simulator.explore.presets import PRESETS, REFUSED, card_html
from simulator.explore.runs import Cancelled, Outcome, Runner
from simulator.explore.settings import Settings, expected_requests, with_limit
from simulator.explore.steps import Step
from simulator.explore.timebar import TimeBar, index_of, moment_of
from simulator.explore.url import View, address_html, query_of, read_query
from simulator.explore.whypanel import why_html
from simulator.explore.words import (
    busy_html,
    client_note,
    default_client,
    download_html,
    error_html,
    hidden_html,
    pair_html,
    state_html,
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
        address: str | None = None,
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
        self.timeline, self.question, self.instant = page.timeline, page.question, page.instant
        self.state_of, self.state, self.scrub = page.state_of, page.state, page.scrub
        self.view = page.view
        self.timebar = TimeBar(page, self._hush, self._render, self._moved)
        self.guesses = Guesses()
        self._visited: set[str] = set()
        self._preset = ""
        self._wanted: View | None = None  # what the page's address asked for, until drawn
        self._addresses = 0
        self._whys: dict[tuple[int, str, str, int], str] = {}
        self._added: tuple[tuple[str, float, int], ...] = ()
        self._told = -1  # the timeline's index as the kernel last set it
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
        page.beside.observe(self._state_changed, names="value")
        for toggle in (page.predict, page.why_open):
            toggle.observe(lambda _: self._pool.submit(self._render), names="value")
        page.admit.on_click(lambda _: self._pool.submit(self._answer, True))
        page.refuse.on_click(lambda _: self._pool.submit(self._answer, False))
        self.timeline.observe(self._large, names="large")
        self.timeline.observe(self._picked, names="index")
        self.timeline.observe(self._dragged, names="limit")
        self.timeline.observe(self._painted, names="added")
        page.export.on_click(lambda _: self._pool.submit(self._export))
        self._restore(os.environ.get("QUERY_STRING", "") if address is None else address)

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
            view = read_query(query, {n: p.settings for n, p in PRESETS.items()}, Settings())
        except Exception as exc:  # a link typed wrong: say so, show the page as it is
            self.status.value = error_html(exc)
            return
        if view is None:
            return
        with self._hush():
            self.controls.apply(view.settings)
        if view.preset:
            self._card(view.preset)
            self._client = PRESETS[view.preset].client
        self._client = view.client or self._client
        self._wanted = view

    def address(self) -> str:
        """The query of the address that shows what is shown now."""
        o, tb = self.outcome, self.timebar
        if o is None:
            return ""
        base = PRESETS[self._preset].settings if self._preset else Settings()
        step = tb.step
        view = View(
            self._preset, o.settings, tb.client or "", self.state_of.value or "",
            self.page.beside.value or "", step.index + 1 if step is not None else 0,
        )  # fmt: skip
        return query_of(view, base)

    def _write_address(self) -> None:
        self._addresses += 1
        self.page.address.value = address_html(self.address(), self._addresses)

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
                    wanted[now] = self._settings()
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
        """Run ``settings``; anything past a second shows its progress bar (reading a trace,
        then the decisions made of all)."""
        bar = self.progress
        bar.value, bar.max, bar.description = 0, 1, "reading"
        later = threading.Timer(1.0, lambda: setattr(bar.layout, "visibility", "visible"))
        later.daemon = True
        later.start()
        try:
            if settings.trace is not None:
                self.status.value = "<b>reading the trace file…</b>"
                requests = len(self.runner.trace(settings.trace, settings.trace_format))
                self.status.value = busy_html(self.drawn)
            else:
                requests = round(expected_requests(settings))
            total = len(settings.algorithms) * requests
            bar.value, bar.max, bar.description = 0, max(total, 1), "deciding"
            if total >= self.progress_from:
                bar.layout.visibility = "visible"
            return self._decide_all(settings, generation)
        finally:
            later.cancel()

    def _decide_all(self, settings: Settings, generation: int) -> tuple[Outcome, list[str]]:
        bar, last = self.progress, [0.0]

        def progress(done: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.2:
                last[0] = now
                bar.value = min(done, bar.max)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = self.runner.run(settings, lambda: self._stale(generation), progress)
        return outcome, [str(c.message) for c in caught]

    def _show(self, outcome: Outcome, said: list[str]) -> None:
        client = self._choose_client(outcome)
        payload = timeline_payload(outcome, client, notes=False)
        payload["index"] = self._told = self.timeline.index
        for row in payload["rows"]:
            row["note"] = client_note(client, row)
        with self._hush():
            self.timeline.show(payload)
        self.summary.value = summary_html(outcome)
        self.progress.layout.visibility = "hidden"
        self.timebar.shown(outcome, client)
        wanted, self._wanted = self._wanted, None
        if wanted is not None and wanted.request:
            self.timebar.wanted_index = wanted.request - 1
        with self._lock:
            self.outcome = outcome
            self.drawn += 1
            self.status.value = status_html(outcome, self.drawn, said)
        self.timebar.retime()
        self.page.stale(False)
        with self._lock:
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
            self._servers(list(outcome.frames))
        self._client = client
        return client

    def _servers(self, algorithms: list[str]) -> None:
        """The two servers' dropdowns offer the run's algorithms, keeping the ones chosen (or
        those the address asks for)."""
        wanted = self._wanted
        page = self.page
        keep = wanted.server if wanted is not None and wanted.server else self.state_of.value
        beside = wanted.beside if wanted is not None else page.beside.value
        if list(self.state_of.options) != algorithms:
            self.state_of.options = algorithms
        first = algorithms[0] if algorithms else None
        self.state_of.value = keep if keep in algorithms else first
        options = [("none", ""), *((a, a) for a in algorithms)]
        if list(page.beside.options) != options:
            page.beside.options = options
        page.beside.value = beside if beside in algorithms else ""
        page.pair(bool(page.beside.value))

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

    # -- what the right column says ---------------------------------------------------------
    def _render(self) -> None:
        """The steps shown into the right column: one server or two side by side; with
        *predict*, the first one's outcome hidden until answered; *why*, if open."""
        tb, page = self.timebar, self.page
        o, steps = tb.outcome, tb.steps
        if o is None or not steps:
            self.state.value, page.why.value = "", ""
            page.answer.layout.display = "none"
            return
        first, step = next(iter(steps.items()))
        limit, origin = o.settings.limit, o.origin_ms
        hide = page.predict.value and self.guesses.hidden((first, tb.client or "", step.index))
        if hide:
            self.state.value = hidden_html(first, step, origin)
        elif len(steps) > 1:
            self.state.value = pair_html(steps, limit, origin)
        else:
            self.state.value = state_html(first, step, limit, origin)
        page.answer.layout.display = "" if page.predict.value else "none"
        if hide:
            page.score.value = self.guesses.score()
        page.why.value = self._why() if page.why_open.value and not hide else ""
        self._write_address()

    def _why(self) -> str:
        """The why of the chosen request on each server shown (worked out once each)."""
        tb = self.timebar
        o, client = tb.outcome, tb.client
        assert o is not None and client is not None
        parts = []
        for algorithm, step in tb.steps.items():
            key = (id(o), algorithm, client, step.index)
            if key not in self._whys:
                stepper = tb.stepper(algorithm)
                assert stepper is not None
                try:
                    said = why_html(
                        o.settings.policies[algorithm], stepper.times, stepper.costs,
                        step.index, client, o.settings.backend,
                    )  # fmt: skip
                except Exception as exc:  # the panel says it; the page goes on
                    said = error_html(exc)
                self._whys[key] = said
            parts.append(f"<div><b>why: {algorithm}</b>{self._whys[key]}</div>")
        return "".join(parts)

    def _answer(self, admit: bool) -> None:
        """The reader's guess of the chosen request: revealed, scored."""
        tb, page = self.timebar, self.page
        step, shown = tb.step, tb.algorithms()
        if step is None or not shown or tb.outcome is None:
            return
        mine = tb.outcome.frames[shown[0]]
        mine = mine[mine["client"] == tb.client]
        remaining = int(mine["remaining"].iloc[step.index])
        key = (shown[0], tb.client or "", step.index)
        try:
            said = self.guesses.answer(key, admit, page.remaining.value, step.allowed, remaining)
        except Exception as exc:  # a remaining that is not a number: said, nothing revealed
            page.score.value = error_html(exc)
            return
        page.remaining.value = ""
        page.score.value = f"{said.line}; {self.guesses.score()}"
        self._render()

    # -- the timeline: a request picked, the limit dragged, requests painted -----------------
    def _first_row(self) -> str | None:
        o = self.timebar.outcome
        return next(iter(o.frames), None) if o is not None else None

    def _moved(self, i: int) -> None:
        """The time bar chose request ``i`` of the first server shown: the timeline follows
        (its index counts its first row's requests)."""
        tb, first = self.timebar, self._first_row()
        if tb.moment is None or first is None:
            return
        self._told = index_of(tb.times(first), tb.moment)
        self.timeline.index = self._told

    def _picked(self, change: Any) -> None:
        """The reader chose a request in the timeline: the time bar shows it (a value the
        kernel set itself is not a choice; compared by value, not by a flag, as the page's
        message may arrive on another thread while the bar moves)."""
        tb, first = self.timebar, self._first_row()
        if change["new"] == self._told or first is None or tb.outcome is None:
            return
        times = tb.times(first)
        if len(times):
            at = moment_of(times, int(np.clip(change["new"], 0, len(times) - 1)))
            self.scrub.value = index_of(tb.times(), at)

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
        self._changed({"owner": None})

    def _export(self) -> None:
        """The run shown, at the request chosen, as one HTML file offered as a download."""
        o, tb = self.outcome, self.timebar
        if o is None:
            return
        payload = timeline_payload(o, tb.client, index=self.timeline.index, notes=False)
        for row in payload["rows"]:
            row["note"] = client_note(tb.client, row)
        self.page.download.value = download_html(page_html(payload))

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
