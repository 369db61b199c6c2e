"""The explorer's page: every widget it shows, laid out in three columns, and nothing that runs.

The page is three columns sized for a 1280×800 screen (in a narrower notebook column the
right one wraps under the others). Left: the presets (one click each, the boundary burst of the
card first, with a "try this first"), and the controls in three tabs. Middle: a status line, the
time bar (play, step back, step forward, a slider over the requests of the client shown), one
row per algorithm with each of that client's requests a mark
(:class:`simulator.charts.explorer.Rows`), and a summary line per algorithm with what its
numbers mean. Right: at the chosen request, what the server held for that client before and
after the script ran, the script's reply, the header fields sent and the exact log's count at
that instant. :class:`Page` only makes and places them; the explorer fills them in.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from simulator.charts.explorer import Rows
from simulator.explore.controls import Controls
from simulator.explore.presets import PRESETS, TRY_FIRST

__all__ = ["Page", "CSS"]

CSS = """<style>
.explorer-stale { opacity: 0.35; transition: opacity 0.2s; }
.explorer-state { font-size: 12px; line-height: 1.35; }
.explorer-state table { border-collapse: collapse; margin: 2px 0 6px 0; }
.explorer-state td, .explorer-state th { padding: 1px 4px; vertical-align: top; text-align: left; }
.explorer-state code { font-size: 11px; word-break: break-all; }
.explorer-summary pre { font-size: 12px; margin: 0.3em 0; white-space: pre-wrap; }
.explorer-presets .widget-button { width: auto; padding: 0 8px; margin: 2px; }
</style>"""

_LEGEND = (
    "<small>Each row: the requests of the client shown, at the number that client had "
    "admitted in the trailing window; ● admitted, ✕ refused (bigger: costs more), "
    "dashed: the limit, shaded: the window the algorithm counts at the chosen instant. "
    "Hover a mark for its decision.</small>"
)


class Page:
    """The widgets (:attr:`view` holds them all): ``on_preset(name)`` on a preset's click,
    ``on_nudge(by)`` on a step button's."""

    def __init__(
        self,
        controls: Controls,
        on_preset: Callable[[str], None],
        on_nudge: Callable[[int], None],
    ) -> None:
        self.controls = controls
        self.status = w.HTML("not run yet").add_class("explorer-status")
        self.progress = w.FloatProgress(
            value=0, min=0, max=1, layout=w.Layout(visibility="hidden", width="12em")
        )
        self.summary = w.HTML().add_class("explorer-summary")
        self.rows = Rows()
        self.question = w.HTML(TRY_FIRST).add_class("explorer-question")
        self.presets = self._presets(on_preset)
        self._time_bar(on_nudge)
        self.instant = w.HTML().add_class("explorer-instant")
        self.state_of = w.Dropdown(description="server of", layout=w.Layout(width="100%"))
        self.state_of.add_class("explorer-state-of")
        self.state = w.HTML("<i>step through the requests with the time bar</i>")
        self.state.add_class("explorer-state")
        self.view = w.VBox([w.HTML(CSS), self._columns()])
        self.view.add_class("explorer")

    def _presets(self, on_preset: Callable[[str], None]) -> w.HBox:
        buttons = []
        for preset in PRESETS.values():
            button = w.Button(description=preset.name, tooltip=preset.question)
            button.on_click(lambda _, name=preset.name: on_preset(name))
            buttons.append(button)
        box = w.HBox(buttons, layout=w.Layout(flex_flow="row wrap"))
        box.add_class("explorer-presets")
        return box

    def _time_bar(self, on_nudge: Callable[[int], None]) -> None:
        """A slider over the requests of the client shown, play and step."""
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
        self.back.on_click(lambda _: on_nudge(-1))
        self.forward.on_click(lambda _: on_nudge(+1))

    def _columns(self) -> w.HBox:
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
                w.HTML(_LEGEND),
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
        return w.HBox([left, middle, right], layout=w.Layout(flex_flow="row wrap"))

    def stale(self, stale: bool) -> None:
        """Dim what is shown (a run or an error follows), or show it as current."""
        for box in (self.rows.box, self.summary):
            if stale:
                box.add_class("explorer-stale")
            else:
                box.remove_class("explorer-stale")
