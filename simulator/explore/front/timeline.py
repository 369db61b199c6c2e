"""The explorer's timeline as a widget: the rows and the stepping, drawn in the browser.

The kernel hands the widget a run's rows once (:func:`~simulator.explore.front.payload.
timeline_payload`); the page then steps, scrubs, zooms, jumps and plays on its own
(``timeline.js``, drawn on canvases) and sends back only what a reader chose: the request
(``index``), the view (``view_ms``, and its ``unit``), a dragged ``limit`` and the requests
painted onto a row's time axis (``added``). Every value is a trait both sides may set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["Timeline", "ESM", "CSS"]

HERE = Path(__file__).resolve().parent
#: The browser's half: one ES module and its style sheet (package data).
ESM = HERE / "timeline.js"
CSS = HERE / "timeline.css"


class Timeline(anywidget.AnyWidget):  # type: ignore[misc]
    """One row per algorithm, each request of the shown client a mark; a bar steps through
    the first row's requests (``index``), the same instant chosen in every row.

    ``rows``: one dict per algorithm (see :mod:`simulator.explore.front.payload`);
    ``seams_ms``: where the clock-aligned windows start (ms from the run's origin);
    ``limit``: the dashed line a reader may drag (sent back when let go);
    ``index``: the chosen request of the first row; ``view_ms``: ``[lo, hi]`` of the time axis
    (empty, or ``hi <= lo``: the whole run); ``unit``: ``"s"``, or ``"ms"`` once the view is
    10 s or shorter (the page sets it); ``large``: projector size; ``added``: the requests a
    reader painted, ``{"t_ms": ..., "n": ...}`` each (a shift-click paints ``burst_n``);
    ``play_rate``: requests per second while playing; ``caption``: a line about the run.
    """

    _esm = ESM
    _css = CSS

    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    seams_ms = traitlets.List(traitlets.Float()).tag(sync=True)
    limit = traitlets.Float(10.0).tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)
    view_ms = traitlets.List(traitlets.Float(), default_value=[]).tag(sync=True)
    large = traitlets.Bool(False).tag(sync=True)
    added = traitlets.List(traitlets.Dict()).tag(sync=True)
    burst_n = traitlets.Int(10).tag(sync=True)
    play_rate = traitlets.Float(10.0).tag(sync=True)
    unit = traitlets.Enum(("s", "ms"), default_value="s").tag(sync=True)
    caption = traitlets.Unicode("").tag(sync=True)

    @traitlets.validate("index")
    def _index(self, proposal: dict[str, Any]) -> int:
        n = len(self.rows[0]["t_ms"]) if self.rows else 0
        return int(min(max(int(proposal["value"]), 0), max(n - 1, 0)))

    @traitlets.validate("view_ms")
    def _view(self, proposal: dict[str, Any]) -> list[float]:
        value = [float(v) for v in proposal["value"]]
        if value and len(value) != 2:
            raise traitlets.TraitError(f"view_ms: [lo, hi] in ms, got {value!r}")
        return value

    @traitlets.validate("burst_n")
    def _burst_n(self, proposal: dict[str, Any]) -> int:
        if int(proposal["value"]) < 1:
            raise traitlets.TraitError(f"burst_n: at least 1 request, got {proposal['value']!r}")
        return int(proposal["value"])

    @traitlets.validate("play_rate")
    def _play_rate(self, proposal: dict[str, Any]) -> float:
        if not float(proposal["value"]) > 0:
            raise traitlets.TraitError(
                f"play_rate: requests per second above 0, got {proposal['value']!r}"
            )
        return float(proposal["value"])

    def show(self, payload: dict[str, Any], keep_view: bool = True) -> None:
        """A new run's values (from ``timeline_payload``) in one message. The requests a reader
        added are kept (they are the reader's, not the run's), and so is the view unless
        ``keep_view`` is false (a reader zoomed in on a seam stays there as the limit moves)."""
        with self.hold_sync():
            self.rows = payload["rows"]
            names = ["seams_ms", "limit", "caption"] + ([] if keep_view else ["view_ms", "unit"])
            for name in names:
                if name in payload:
                    setattr(self, name, payload[name])
            self.index = payload.get("index", self.index)
