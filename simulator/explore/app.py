"""The explorer: controls at the side, and beside them what the real scripts decided.

The page is three columns sized for a 1280×800 screen (in a narrower notebook column the
right one wraps under the others). Left: the presets (one click each, the
boundary burst of the card first, with a "try this first"), and the controls in three tabs.
Middle: a status line, the time bar (play, step back, step forward, a slider over the requests
of the client shown), one row per algorithm with each of that client's requests a mark
(:class:`simulator.charts.explorer.Rows`), and a summary line per algorithm with what its
numbers mean. Right: at the chosen request, what the server held for that client before and
after the script ran (:mod:`simulator.explore.steps`), the script's reply, the header fields sent
and the exact log's count at that instant.

While the reader looks at a run, the same settings with the limit one step up and one step down
run into the cache (stopped by any change or step), so a slider moved by one notch is drawn at
once. The runs themselves go to a few worker processes (one per core, see
:mod:`simulator.explore.pool`), an algorithm each, and end with the explorer. A change of a control marks the figure as stale at once (dimmed, "running") and, after a moment
(``debounce_s``) for the next change - a slider being dragged sends many - one run starts in a
worker thread, so the page stays responsive. A run that a newer change overtakes stops at its
next decision (:class:`~simulator.explore.runs.Cancelled`) and draws nothing. A bad value names
its control in the status and leaves the figure dimmed, marked as the previous run's. Steps of
the time bar run in the same worker, one at a time (the fake servers share one clock switch).

On the embedded Valkey the explorer starts one server the first time it is chosen, empties it
before each run and stops it in :meth:`Explorer.close`, when Python exits, or when the kernel
that started it ends.
"""

from __future__ import annotations

import html
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as w
import numpy as np

from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import resolve_spec
from simulator.charts.explorer import Rows
from simulator.explore.controls import Controls
from simulator.explore.pool import default_workers
from simulator.explore.presets import PRESETS, TRY_FIRST
from simulator.explore.runs import EXACT, Cancelled, Outcome, Runner, Summary, summary_line
from simulator.explore.settings import BACKENDS, Settings, expected_requests, with_limit
from simulator.explore.steps import KeyState, Step, Stepper

__all__ = ["Explorer"]

_CSS = """<style>
.explorer-stale { opacity: 0.35; transition: opacity 0.2s; }
.explorer-state { font-size: 12px; line-height: 1.35; }
.explorer-state table { border-collapse: collapse; margin: 2px 0 6px 0; }
.explorer-state td, .explorer-state th { padding: 1px 4px; vertical-align: top; text-align: left; }
.explorer-state code { font-size: 11px; word-break: break-all; }
.explorer-summary pre { font-size: 12px; margin: 0.3em 0; white-space: pre-wrap; }
.explorer-presets .widget-button { width: auto; padding: 0 8px; margin: 2px; }
</style>"""


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
        )
        self.status = w.HTML("not run yet").add_class("explorer-status")
        self.progress = w.FloatProgress(
            value=0, min=0, max=1, layout=w.Layout(visibility="hidden", width="12em")
        )
        self.summary = w.HTML().add_class("explorer-summary")
        self.rows = Rows()
        self.question = w.HTML(TRY_FIRST).add_class("explorer-question")
        buttons = []
        for preset in PRESETS.values():
            button = w.Button(description=preset.name, tooltip=preset.question)
            button.on_click(lambda _, name=preset.name: self.preset(name))
            buttons.append(button)
        self.presets = w.HBox(buttons, layout=w.Layout(flex_flow="row wrap"))
        self.presets.add_class("explorer-presets")
        # The time bar: a slider over the requests of the client shown, play and step.
        self.scrub = w.IntSlider(
            value=0, min=0, max=0, readout=False, layout=w.Layout(width="100%")
        )
        self.scrub.add_class("explorer-scrub")
        self.play = w.Play(value=0, min=0, max=0, interval=600, show_repeat=False)
        w.jslink((self.play, "value"), (self.scrub, "value"))
        self.back = w.Button(description="◀ step", tooltip="one request back")
        self.forward = w.Button(description="step ▶", tooltip="one request on")
        for b in (self.back, self.forward):
            b.layout = w.Layout(width="68px", min_width="68px")
        self.back.add_class("explorer-back")
        self.forward.add_class("explorer-forward")
        self.back.on_click(lambda _: self._nudge(-1))
        self.forward.on_click(lambda _: self._nudge(+1))
        self.instant = w.HTML().add_class("explorer-instant")
        self.state_of = w.Dropdown(description="server of", layout=w.Layout(width="100%"))
        self.state_of.add_class("explorer-state-of")
        self.state = w.HTML("<i>step through the requests with the time bar</i>")
        self.state.add_class("explorer-state")
        legend = w.HTML(
            "<small>Each row: the requests of the client shown, at the number that client had "
            "admitted in the trailing window; ● admitted, ✕ refused (bigger: costs more), "
            "dashed: the limit, shaded: the window the algorithm counts at the chosen instant. "
            "Hover a mark for its decision.</small>"
        )
        left = w.VBox(
            [w.HTML("<b>Presets</b>"), self.presets, self.question, self.controls.box],
            layout=w.Layout(width="340px", min_width="340px"),
        )
        bar = w.HBox(
            [self.play, self.back, self.forward, self.scrub],
            layout=w.Layout(width="100%", align_items="center"),
        )
        middle = w.VBox(
            [
                w.HBox([self.status, self.progress], layout=w.Layout(align_items="center")),
                w.HBox([self.controls.client, self.instant]),
                bar,
                self.rows.box,
                legend,
                self.summary,
            ],
            layout=w.Layout(flex="1 1 420px", min_width="420px"),
        )
        right = w.VBox(
            [w.HTML("<b>What the server holds</b>"), self.state_of, self.state],
            layout=w.Layout(width="300px", min_width="300px"),
        )
        # Three columns on a wide page; in a narrower notebook column the server's state wraps
        # under the rows (and the rows under the controls), never squeezed.
        columns = w.HBox([left, middle, right], layout=w.Layout(flex_flow="row wrap"))
        self.view = w.VBox([w.HTML(_CSS), columns])
        self.view.add_class("explorer")
        self.outcome: Outcome | None = None
        self.drawn = 0
        self.step: Step | None = None
        self._lock = threading.Condition()
        self._generation = 0
        self._scrub_generation = 0
        self._timer: threading.Timer | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer")
        self._quiet = False
        self._valkey: Backend | None = None
        self._steppers: dict[tuple[int, str, str], Stepper] = {}
        self._client: str | None = None
        self.controls.observe(self._changed)
        self.scrub.observe(self._scrubbed, names="value")
        self.state_of.observe(self._state_changed, names="value")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.view)

    # -- backends ---------------------------------------------------------------------------
    def _backend_for(self, name: str) -> Backend:
        if resolve_spec(name).virtual_time:
            return DirectFakeBackend()
        if self._valkey is None:  # started in the worker thread, which lives as long as we do
            from simulator.backends.specs import make_backend

            self._valkey = make_backend(name)
        return self._valkey

    def _empty(self, backend: Backend) -> None:
        if backend is self._valkey:
            backend.client.flushdb()  # type: ignore[attr-defined]  # our own server, no one else's

    def close(self) -> None:
        """Stop the worker and the embedded server, if one was started."""
        with self._lock:
            self._generation += 1
            if self._timer is not None:
                self._timer.cancel()
        self._pool.shutdown(wait=True)
        self.runner.close()
        for stepper in self._steppers.values():
            stepper.close()
        self._steppers.clear()
        if self._valkey is not None:
            self._valkey.close()
            self._valkey = None

    # -- presets ----------------------------------------------------------------------------
    def preset(self, name: str) -> None:
        """Show the preset ``name``'s settings (one run follows) and its question."""
        p = PRESETS[name]
        self._quiet = True
        try:
            self.controls.apply(p.settings)
            self._client = p.client
        finally:
            self._quiet = False
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
        was = f" (below: run {self.drawn})" if self.drawn else ""
        self.status.value = f"<b>running…</b>{was}"
        for box in (self.rows.box, self.summary):
            box.add_class("explorer-stale")

    def _changed(self, change: Any) -> None:
        if self._quiet:
            return
        if change.get("owner") is self.controls.client:
            self._client = self.controls.client.value
        if change.get("owner") in (self.controls.limit, self.controls.window_s):
            self._quiet = True
            try:
                self.controls.follow_defaults()
            finally:
                self._quiet = False
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
                was = f"the figure below is still run {self.drawn}'s" if self.drawn else ""
                self.status.value = (
                    f'<span style="color:#b00">{html.escape(str(exc))}</span>'
                    f"<br><small>{was}</small>"
                )
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
        clients = outcome.clients()
        client = self._client if self._client in clients else _default_client(clients)
        shown = clients[:200] if client in clients[:200] else [*clients[:199], client]
        self._quiet = True
        try:
            if list(self.controls.client.options) != shown:
                self.controls.client.options = shown
            self.controls.client.value = client
            algorithms = list(outcome.frames)
            if list(self.state_of.options) != algorithms:
                keep = self.state_of.value
                self.state_of.options = algorithms
                first = algorithms[0] if algorithms else None
                self.state_of.value = keep if keep in algorithms else first
        finally:
            self._quiet = False
        self._client = client
        span_ms = None if s.trace is not None else round(s.duration_s * 1000)
        notes = {a: _row_note(x) for a, x in outcome.summaries.items()}
        self.rows.show(
            outcome.frames, s.limit, s.window_ms, client, outcome.origin_ms, span_ms, notes
        )
        self.summary.value = _summary_html(outcome)
        self.progress.layout.visibility = "hidden"
        for stepper in self._steppers.values():
            stepper.close()
        self._steppers.clear()
        with self._lock:
            self.outcome = outcome
            self.drawn += 1
            n = len(s.traffic.clients())
            source = f"trace {s.trace}" if s.trace is not None else f"{n} client{'s' * (n != 1)}"
            note = "".join(f"<br>{html.escape(m)}" for m in said)
            self.status.value = (
                f"run {self.drawn}: {outcome.decisions:,} decisions by the Lua scripts on "
                f"{BACKENDS[s.backend]}, {source}, limit {s.limit:,} per {s.window_s:g} s "
                f"({outcome.seconds:.2f} s){note}"
            )
        self._retime()
        for box in (self.rows.box, self.summary):
            box.remove_class("explorer-stale")
        with self._lock:
            self._lock.notify_all()

    # -- the time bar -----------------------------------------------------------------------
    def _times(self) -> np.ndarray:
        """The instants (ms) of the client shown under the algorithm whose server is shown."""
        o, algorithm = self.outcome, self.state_of.value
        if o is None or algorithm not in o.frames or self._client is None:
            return np.array([], dtype="int64")
        frame = o.frames[algorithm]
        return frame.loc[frame["client"] == self._client, "t_ms"].to_numpy(dtype="int64")

    def _retime(self, to_refusal: bool = False) -> None:
        """After a run or a change of algorithm: the time bar over the new requests, at the
        request nearest the instant shown before (the first refusal on a first run, or when
        another algorithm's server is chosen)."""
        times = self._times()
        was = self.step.t_ms if self.step is not None else None
        if was is None or self.outcome is None or to_refusal:
            i = self._first_refusal()
        else:
            i = int(np.clip(np.searchsorted(times, was), 0, max(len(times) - 1, 0)))
        self._quiet = True
        try:
            self.scrub.max = self.play.max = max(len(times) - 1, 0)
            self.scrub.value = i
        finally:
            self._quiet = False
        self._step_now(i)

    def _first_refusal(self) -> int:
        o, algorithm = self.outcome, self.state_of.value
        if o is None or algorithm not in o.frames:
            return 0
        frame = o.frames[algorithm]
        mine = frame[frame["client"] == self._client]
        refused = np.flatnonzero(~mine["allowed"].to_numpy(dtype=bool))
        return int(refused[0]) if len(refused) else 0

    def _nudge(self, by: int) -> None:
        self.scrub.value = int(np.clip(self.scrub.value + by, 0, self.scrub.max))

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
        self._pool.submit(self._retime, True)

    def _step_work(self, generation: int, i: int) -> None:
        if generation != self._scrub_generation:  # a newer position was asked for: skip this
            return
        try:
            self._step_now(i)
        except Exception as exc:  # shown where the state would be
            self.state.value = f'<span style="color:#b00">{html.escape(str(exc))}</span>'

    def step_to(self, i: int) -> Step | None:
        """Show request ``i`` of the client shown (waiting for it), and return its step."""
        self.scrub.value = i
        self._pool.submit(lambda: None).result()
        return self.step

    def _stepper(self) -> Stepper | None:
        o, algorithm, client = self.outcome, self.state_of.value, self._client
        if o is None or algorithm not in o.frames or client is None:
            return None
        key = (id(o), algorithm, client)
        if key not in self._steppers:
            frame = o.frames[algorithm]
            mine = frame[frame["client"] == client]
            s = o.settings
            self._steppers[key] = Stepper(
                algorithm,
                s.limit,
                s.window_ms,
                s.params_of(algorithm),
                client,
                mine["t_ms"].to_numpy(dtype="int64").tolist(),
                mine["cost"].to_numpy(dtype="int64").tolist(),
                mine["allowed"].to_numpy(dtype=bool).tolist(),
            )
        return self._steppers[key]

    def _step_now(self, i: int) -> None:
        stepper = self._stepper()
        o = self.outcome
        if stepper is None or o is None or not len(stepper):
            self.step = None
            self.instant.value = "<i>no request of this client</i>"
            self.state.value = ""
            return
        i = int(np.clip(i, 0, len(stepper) - 1))
        step = stepper[i]
        self.step = step
        t_rel = step.t_ms - o.origin_ms
        self.rows.at(t_rel)  # a first-hit window ends at the reset of the row's last mark by then
        self.instant.value = (
            f"&nbsp;request {i + 1:,} of {len(stepper):,} at <b>{t_rel / 1000:.3f} s</b>"
        )
        self.state.value = _state_html(stepper.algorithm, step, o.settings.limit)


def _default_client(clients: list[str]) -> str | None:
    """The client shown first: a bursting one if there is one (the seam shows), else the busiest."""
    bursting = [c for c in clients if c.startswith("bursts-")]
    return sorted(bursting)[0] if bursting else (clients[0] if clients else None)


def _row_note(s: Summary) -> str:
    """A row's numbers, beside its marks (all clients; the summary lines say the same)."""
    return f"admitted {s.admitted:,} of {s.requests:,}, most in a window {s.most_in_window:,} ({s.ratio:.2f}×)"


def _summary_html(outcome: Outcome) -> str:
    """The summary lines, and under them what their numbers mean."""
    lines = [summary_line(x) for x in outcome.summaries.values()]
    lines += list(outcome.skipped.values())
    s = outcome.settings
    notes = [
        "<b>most one client got in any window</b>: the most requests one client had admitted in "
        f"any trailing {s.window_s:g} s, against the limit of {s.limit:,};",
        "<b>wrongly admitted / refused</b>: decisions the exact sliding log, given the same "
        "requests, makes the other way (admitted where it refuses, refused where it admits).",
    ]
    counts = {x.requests for x in outcome.summaries.values()}
    if len(counts) > 1:
        notes.append(
            "<b>Why N differs</b>: polite clients wait the Retry-After each algorithm sends them "
            "before they ask again, so every algorithm gets its own retries; the other clients "
            "send the same requests to all."
        )
    if EXACT in outcome.summaries:
        notes.append("The sliding log is the exact log itself: it never differs from it.")
    text = html.escape("\n".join(lines) or "no algorithm chosen")
    return f"<pre>{text}</pre><small>{' '.join(notes)}</small>"


def _key_html(states: tuple[KeyState, ...]) -> str:
    if not states:
        return "<div><i>no keys</i></div>"
    rows = []
    for k in states:
        if k.type == "zset":
            shown = ", ".join(f"{html.escape(m)} @ {s}" for m, s in k.value)
            more = f" … {k.size - len(k.value)} more" if k.size > len(k.value) else ""
            value = f"{k.size} members: {shown}{more}"
        elif k.type == "hash":
            value = ", ".join(f"{html.escape(f)} = {html.escape(v)}" for f, v in k.value.items())
        elif isinstance(k.value, list):
            value = f"{k.size} items: " + ", ".join(html.escape(x) for x in k.value)
        else:
            value = html.escape(str(k.value))
        ttl = "no TTL" if k.pttl_ms < 0 else f"PTTL {k.pttl_ms:,} ms"
        rows.append(
            f"<div><code>{html.escape(k.key)}</code> <small>({k.type}, {ttl})</small><br>"
            f"&nbsp;&nbsp;<code>{value}</code></div>"
        )
    return "".join(rows)


def _state_html(algorithm: str, step: Step, limit: int) -> str:
    """One step as the right column shows it (class names a test can find)."""
    decided = "admitted" if step.allowed else "refused"
    exact = "admits" if step.exact_allowed else "refuses"
    reply = ", ".join(html.escape(str(x)) for x in step.reply)
    headers = "".join(
        f"<div>{html.escape(k)}: <code>{html.escape(v)}</code></div>"
        for k, v in step.headers.items()
    )
    after = (
        "<div><i>unchanged: the script wrote nothing</i></div>"
        if step.after == step.before
        else _key_html(step.after)
    )
    return (
        f'<div class="explorer-decision"><b>{html.escape(algorithm)}</b> at '
        f"{step.t_ms:,} ms (cost {step.cost}): <b>{decided}</b></div>"
        f'<div class="explorer-headers"><b>header fields</b>{headers}</div>'
        f'<div class="explorer-exact">exact log: {step.exact_in_window:,} of {limit:,} '
        f"admitted in the trailing window before this request; it {exact} it</div>"
        f'<div class="explorer-reply"><b>reply</b> <code>[{reply}]</code></div>'
        f'<div class="explorer-before"><b>keys before</b>{_key_html(step.before)}</div>'
        f'<div class="explorer-after"><b>keys after</b>{after}</div>'
    )
