"""The explorer: controls above, and below what the real scripts decided, redrawn on every change.

A change waits a moment (``debounce_s``) for the next one - a slider being dragged sends many -
and then one run starts in a worker thread, so the page stays responsive. A run that a newer
change overtakes stops at its next decision (:class:`~simulator.explore.runs.Cancelled`) and
draws nothing. A scenario larger than ``progress_from`` requests shows a progress bar. What is
shown: a status line, one summary line per algorithm (:func:`~simulator.explore.runs.summary_line`,
plain text a test can read), and the figure of :func:`simulator.charts.explorer.explorer_figure`.

On the embedded Valkey the explorer starts one server the first time it is chosen, empties it
before each run and stops it in :meth:`Explorer.close` (or when Python exits).
"""

from __future__ import annotations

import html
import io
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as w

from simulator.backends import Backend, FakeRedisBackend
from simulator.charts.explorer import explorer_figure
from simulator.explore.controls import Controls
from simulator.explore.runs import Cancelled, Outcome, Runner, seams_ms, summary_line
from simulator.explore.settings import BACKENDS, Settings, expected_requests

__all__ = ["Explorer"]


class Explorer:
    """Controls, status, summary and figure in one widget (:attr:`view`).

    ``refresh()`` runs the current settings at once and draws them (the first draw); afterwards
    every change runs by itself. ``wait(n)`` blocks until ``n`` runs have been drawn.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        debounce_s: float = 0.15,
        progress_from: float = 20_000,
    ) -> None:
        self.debounce_s, self.progress_from = debounce_s, progress_from
        self.controls = Controls(settings or Settings())
        self.runner = Runner(self._backend_for, self._empty)
        self.status = w.HTML("not run yet").add_class("explorer-status")
        self.progress = w.FloatProgress(
            value=0,
            min=0,
            max=1,
            description="running",
            layout=w.Layout(visibility="hidden", width="40em"),
        )
        self.summary = w.HTML().add_class("explorer-summary")
        self.image = w.Image(format="png", layout=w.Layout(max_width="1000px"))
        self.view = w.VBox(
            [
                self.controls.box,
                w.HBox([self.controls.client, self.progress]),
                self.status,
                self.summary,
                self.image,
            ]
        )
        self.outcome: Outcome | None = None
        self.drawn = 0
        self._lock = threading.Condition()
        self._generation = 0
        self._timer: threading.Timer | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer")
        self._quiet = False
        self._valkey: Backend | None = None
        self.controls.observe(self._changed)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.view)

    # -- backends ---------------------------------------------------------------------------
    def _backend_for(self, name: str) -> Backend:
        if name == "fakeredis":
            return FakeRedisBackend()
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
        if self._valkey is not None:
            self._valkey.close()
            self._valkey = None

    # -- runs -------------------------------------------------------------------------------
    def refresh(self) -> Outcome | None:
        """Run what the controls show now and draw it (in this thread)."""
        with self._lock:
            self._generation += 1
            generation = self._generation
        return self._pool.submit(self._work, generation).result()

    def wait(self, drawn: int, timeout: float = 60.0) -> bool:
        """Block until ``drawn`` runs have been drawn in all; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self.drawn >= drawn, timeout)

    def _changed(self, change: Any) -> None:
        if self._quiet:
            return
        if change.get("owner") in (self.controls.limit, self.controls.window_s):
            self._quiet = True
            try:
                self.controls.follow_defaults()
            finally:
                self._quiet = False
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
            drawing = self._draw(outcome)
        except Cancelled:
            return None
        except Exception as exc:  # a bad value or an unreadable file: say so, keep the page
            if not self._stale(generation):
                self.progress.layout.visibility = "hidden"
                self.status.value = f'<span style="color:#b00">{html.escape(str(exc))}</span>'
            return None
        if self._stale(generation):
            return None
        self._show(outcome, drawing, said)
        return outcome

    def _run(self, settings: Settings, generation: int) -> tuple[Outcome, list[str]]:
        total = len(settings.algorithms) * (
            len(self.runner.trace(settings.trace, settings.trace_format))
            if settings.trace
            else expected_requests(settings)
        )
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

    def _draw(self, outcome: Outcome) -> tuple[bytes, list[str], str | None]:
        s = outcome.settings
        clients = outcome.clients()
        wanted = self.controls.client.value
        client = wanted if wanted in clients else _default_client(clients)
        span = max((int(f["t_ms"].max()) for f in outcome.frames.values() if len(f)), default=0)
        fig = explorer_figure(
            outcome.frames,
            s.limit,
            s.window_ms,
            client,
            outcome.origin_ms,
            seams_ms(outcome, span - outcome.origin_ms),
        )
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=100, pil_kwargs={"compress_level": 1})
        return out.getvalue(), clients[:200], client

    def _show(
        self, outcome: Outcome, drawing: tuple[bytes, list[str], str | None], said: list[str]
    ) -> None:
        s = outcome.settings
        png, clients, client = drawing
        self._quiet = True
        try:
            if list(self.controls.client.options) != clients:
                self.controls.client.options = clients
            self.controls.client.value = client
        finally:
            self._quiet = False
        lines = [summary_line(x) for x in outcome.summaries.values()] + list(
            outcome.skipped.values()
        )
        self.summary.value = (
            "<pre>" + html.escape("\n".join(lines) or "no algorithm chosen") + "</pre>"
        )
        self.image.value = png
        self.progress.layout.visibility = "hidden"
        with self._lock:
            self.outcome = outcome
            self.drawn += 1
            source = f"trace {s.trace}" if s.trace else f"{len(s.traffic.clients())} clients"
            note = "".join(f"<br>{html.escape(m)}" for m in said)
            self.status.value = (
                f"run {self.drawn}: {outcome.decisions:,} decisions by the Lua scripts on "
                f"{BACKENDS[s.backend]}, {source}, limit {s.limit:,} per {s.window_s:g} s "
                f"({outcome.seconds:.2f} s){note}"
            )
            self._lock.notify_all()


#: The summary lines as they are, one a line (scrolled sideways in a narrow column, not wrapped).
_PRE = '<pre style="white-space:pre; overflow-x:auto; font-size:12px; margin:0.4em 0">'


def _default_client(clients: list[str]) -> str | None:
    """The client shown first: a bursting one if there is one (the seam shows), else the busiest."""
    bursting = [c for c in clients if c.startswith("bursts-")]
    return sorted(bursting)[0] if bursting else (clients[0] if clients else None)
