"""The explorer's page: every widget it shows, laid out in three columns, and nothing that runs.

The page is three columns sized for a 1280×800 screen. Left: the presets (one click each, the
boundary burst of the card first; the chosen one's card says what to watch for, what it teaches
and what to try, and how far through the presets the reader is), and the controls in three
tabs. Middle: a status line with its progress bar, *predict* and *export*, the timeline - one
row per algorithm with each of the shown client's requests a mark, stepped, zoomed and played
in the browser, where a click adds a request and the dashed limit can be dragged
(:class:`simulator.explore.front.Timeline`) - and a summary line per algorithm with what its
numbers mean. Right: at the chosen request, what
one server - or two side by side - held for that client before and after the script ran, the
script's reply, the header fields sent and the exact log's count at that instant, and under it
*why*: the script's executed lines and its arithmetic, worked out only while that panel is open.
The middle and right columns wrap together, so in a narrower notebook column (JupyterLab's, 848
px at 1280×800) the rows and the server - or two servers - stay side by side under the controls. :class:`Page` only makes and places the widgets;
the explorer fills them in.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from simulator.explain.render import STYLE as WHY_STYLE
from simulator.explore.controls import Controls
from simulator.explore.front.timeline import Timeline
from simulator.explore.presets import PRESETS, TRY_FIRST

__all__ = ["Page", "CSS"]

CSS = """<style>
.explorer-stale { opacity: 0.35; transition: opacity 0.2s; }
.explorer-state { font-size: 12px; line-height: 1.35; }
.explorer-state table { border-collapse: collapse; margin: 2px 0 6px 0; }
.explorer-state td, .explorer-state th { padding: 1px 4px; vertical-align: top; text-align: left; }
.explorer-state code { font-size: 11px; overflow-wrap: break-word; }
.explorer-summary .explorer-lines { font-size: 12px; margin: 0.3em 0; font-family: monospace; }
/* beside two servers in a notebook column: the longest unbroken phrase still fits */
.explorer-summary { container-type: inline-size; }
@container (max-width: 420px) { .explorer-summary .explorer-lines { font-size: 11px; } }
.explorer-presets .widget-button { width: auto; padding: 0 8px; margin: 2px; }
.explorer-card { font-size: 12.5px; line-height: 1.35; margin: 4px 0; }
.explorer-card div { margin-top: 2px; }
.explorer-card-at { color: #555; font-size: 11.5px; }
.explorer-pair { table-layout: fixed; width: 100%; }
.explorer-pair td { width: 50%; border-top: 1px solid #ddd; }
.explorer-why { font-size: 12px; line-height: 1.35; }
.explorer-why pre { font-size: 11.5px; white-space: pre-wrap; margin: 2px 0; }
.explorer-why .why-source { max-height: 300px; overflow: auto; }
.explorer-why .why-calls { display: block; overflow-x: auto; }
.explorer-why .why-arithmetic { font-weight: bold; padding-left: 1.4em; }
/* the tabs' 100% and their 2 px margins would pass the 310 px column */
.explorer .widget-tab { width: calc(100% - 4px) !important; }
/* a long description wraps onto a second line rather than end in "…" */
.explorer .widget-tab .widget-label {
  white-space: normal; text-overflow: clip; line-height: 1.15; height: auto; align-self: center;
}
/* the algorithms' list under its label, wide enough for its longest name */
.explorer .widget-select-multiple { flex-direction: column; align-items: stretch; }
.explorer .widget-select-multiple > .widget-label { width: auto !important; text-align: left; }
.explorer-large .explorer-state, .explorer-large .explorer-card, .explorer-large .explorer-why,
.explorer-large .explorer-summary .explorer-lines, .explorer-large .explorer-instant,
.explorer-large .explorer-status { font-size: 16px; }
.explorer-large .explorer-state code { font-size: 14px; }
.explorer-large .widget-label, .explorer-large .widget-button,
.explorer-large .widget-toggle-button { font-size: 15px; }
/* large, in a notebook's narrow column: a text box keeps room for its value (under its label,
   which is wider now, if the row cannot hold both), and a summary line wraps between words
   rather than pass its box (its phrases stay whole where the column is wide) */
.explorer-large .widget-text { flex-wrap: wrap; }
.explorer-large .widget-text > input { min-width: 8em; }
@container (max-width: 560px) {
  .explorer-large .explorer-summary .explorer-line span { white-space: normal !important; }
}
</style>"""
CSS = CSS.replace("</style>", WHY_STYLE + "</style>")


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
        ).add_class("explorer-progress")
        self.summary = w.HTML().add_class("explorer-summary")
        #: The rows, drawn and stepped in the browser (simulator.explore.front).
        self.timeline = Timeline()
        self.timeline.add_class("explorer-timeline")
        self.question = w.HTML(TRY_FIRST).add_class("explorer-question")
        self.preset_buttons: dict[str, w.Button] = {}
        self.presets = self._presets(on_preset)
        self._time_bar(on_nudge)
        self._toggles()
        self.instant = w.HTML().add_class("explorer-instant")
        narrow = {"description_width": "5.5em"}
        self.state_of = w.Dropdown(
            description="server of", style=narrow, layout=w.Layout(width="98%")
        )
        self.state_of.add_class("explorer-state-of")
        self.beside = w.Dropdown(
            options=[("none", "")], value="", description="beside it", style=narrow,
            layout=w.Layout(width="98%"),
        )  # fmt: skip
        self.beside.add_class("explorer-beside")
        self.state = w.HTML("<i>step through the requests with the time bar</i>")
        self.state.add_class("explorer-state")
        self.answer = self._answer_box()
        self.why_open = w.ToggleButton(
            value=False,
            description="why? (script and arithmetic)",
            layout=w.Layout(width="calc(100% - 4px)"),  # its 2 px margins inside the column
        )
        self.why_open.add_class("explorer-why-open")
        self.why = w.HTML("").add_class("explorer-why")
        #: A hidden piece of the page that writes the page's address (see simulator.explore.url).
        self.address = w.HTML("", layout=w.Layout(height="0px", overflow="hidden"))
        self.address.add_class("explorer-address")
        self.view = w.VBox([w.HTML(CSS), self._columns(), self.address])
        self.view.add_class("explorer")

    def _presets(self, on_preset: Callable[[str], None]) -> w.HBox:
        buttons = []
        for preset in PRESETS.values():
            button = w.Button(description=preset.name, tooltip=preset.question)
            button.on_click(lambda _, name=preset.name: on_preset(name))
            buttons.append(button)
            self.preset_buttons[preset.name] = button
        box = w.HBox(buttons, layout=w.Layout(flex_flow="row wrap"))
        box.add_class("explorer-presets")
        return box

    def visited(self, names: set[str], current: str) -> None:
        """Tick the presets seen, and mark the one shown."""
        for name, button in self.preset_buttons.items():
            button.description = f"✓ {name}" if name in names else name
            button.button_style = "info" if name == current else ""

    def _toggles(self) -> None:
        """Predict (hide the chosen request's outcome until answered), large (for a
        projector), export (the run as one HTML file) and the link to the file."""
        self.predict = w.ToggleButton(value=False, description="predict", tooltip=(
            "hide each request's outcome until you say admit or refuse"
        ), layout=w.Layout(width="auto"))  # fmt: skip
        self.export = w.Button(
            description="export", tooltip="this run as one HTML file that steps without a server",
            layout=w.Layout(width="auto"),
        )  # fmt: skip
        self.download = w.HTML("").add_class("explorer-download")
        for b, name in ((self.predict, "predict"), (self.export, "export")):
            b.add_class(f"explorer-{name}")

    def _answer_box(self) -> w.VBox:
        """The prediction's question: admit or refuse, and (if wished) the remaining."""
        self.admit = w.Button(description="admit", layout=w.Layout(width="auto"))
        self.refuse = w.Button(description="refuse", layout=w.Layout(width="auto"))
        self.admit.add_class("explorer-admit")
        self.refuse.add_class("explorer-refuse")
        self.remaining = w.Text(
            value="", placeholder="remaining (optional)", layout=w.Layout(width="11em")
        )
        self.score = w.HTML("").add_class("explorer-score")
        box = w.VBox(
            [w.HBox([self.admit, self.refuse, self.remaining]), self.score],
            layout=w.Layout(display="none"),
        )
        box.add_class("explorer-answer")
        return box

    def _time_bar(self, on_nudge: Callable[[int], None]) -> None:
        """A slider over the requests of the client shown, play and step."""
        self.scrub = w.IntSlider(
            value=0, min=0, max=0, readout=False, layout=w.Layout(width="100%")
        )
        self.scrub.add_class("explorer-scrub")
        # The timeline plays in the browser; this one is kept for a notebook's code, not linked
        # (a link would set the request back to the Play's 0 as the page loads).
        self.play = w.Play(value=0, min=0, max=0, interval=600, show_repeat=False)
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
            layout=w.Layout(width="310px", min_width="310px"),
        )
        # The timeline steps in the browser; this bar holds the request the kernel shows and is
        # moved by the timeline (kept for a notebook's code, not shown).
        bar = w.HBox(
            [self.play, self.back, self.forward, self.scrub],
            layout=w.Layout(width="100%", align_items="center", display="none"),
        )
        tools = w.HBox(
            [self.predict, self.export, self.download],
            layout=w.Layout(align_items="center", flex_flow="row wrap"),
        )
        middle = w.VBox(
            [
                w.HBox([self.status, self.progress], layout=w.Layout(align_items="center")),
                w.HBox([self.controls.client, self.instant], layout=w.Layout(flex_flow="row wrap")),
                bar,
                tools,
                self.timeline,
                self.summary,
            ],
            layout=w.Layout(flex="1 1 380px", min_width="380px", margin="0 4px 0 8px"),
        )
        self.right = w.VBox(
            [
                w.HTML("<b>What the server holds</b>"),
                self.state_of,
                self.beside,
                self.state,
                self.answer,
                self.why_open,
                self.why,
            ],
            layout=w.Layout(width="300px", min_width="300px"),
        )
        # The rows and the server wrap together: on a narrower page (a notebook column) they
        # stay side by side under the controls instead of a screen apart.
        main = w.HBox([middle, self.right], layout=w.Layout(flex="1 1 740px", flex_flow="row wrap"))
        return w.HBox([left, main], layout=w.Layout(flex_flow="row wrap"))

    def pair(self, two: bool) -> None:
        """Room for two servers side by side, or one."""
        self.right.layout.width = self.right.layout.min_width = "440px" if two else "300px"

    def stale(self, stale: bool) -> None:
        """Dim what is shown (a run or an error follows), or show it as current."""
        for box in (self.timeline, self.summary):
            if stale:
                box.add_class("explorer-stale")
            else:
                box.remove_class("explorer-stale")
