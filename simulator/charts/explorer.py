"""The explorer's figure: one row per algorithm on a shared time axis, each request a mark.

Small multiples rather than one axis of overlapping lines: algorithms that agree would hide each
other there. In each row every request of the client shown is a mark at its instant, placed at
the number of that client's requests the algorithm had admitted in the trailing window
(t - W, t] - the exact truth of what it let through - against the limit (dashed): a filled dot
in the algorithm's colour when admitted, a black cross when refused, bigger for a request that
costs more. At the instant chosen on the time bar a rule crosses every row, and each row shades
the window its algorithm counts at that instant: the clock grid's window (fixed window), the
previous and the current grid window (the sliding counter weighs the previous one by what is
left of it), the key's own window from its first request (EchoMQ: its TTL) or the trailing
window (the log and the buckets).

Drawn with bqplot, so a change of run or instant updates the marks' data in the page instead of
re-rendering an image; hovering over a mark shows its decision row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bqplot as bq
import ipywidgets as w
import numpy as np
import pandas as pd

from simulator import metrics
from simulator.algorithms import ALGORITHMS
from simulator.charts import LABELS, PALETTE

__all__ = ["Rows", "Marks", "marks_of", "windows_at", "ROW_PX"]

#: Height of one algorithm's row in pixels (six rows and the controls fit a 1280×800 screen).
ROW_PX = 92
_REFUSED = "#222222"
_MARGIN = {"top": 16, "bottom": 20, "left": 46, "right": 12}


@dataclass(frozen=True)
class Marks:
    """One algorithm's requests of the client shown, as the row draws them (seconds from the
    origin, the trailing admitted count, admitted or not, cost, and the hover text)."""

    t_s: np.ndarray
    in_window: np.ndarray
    allowed: np.ndarray
    cost: np.ndarray
    text: list[str]


def _hover(row: pd.Series, t_s: float, in_window: int) -> str:
    decided = "admitted" if row.allowed else "refused"
    retry = row.retry_after_ms
    retry_s = "" if row.allowed or pd.isna(retry) else f", Retry-After {int(retry) / 1000:g} s"
    return (
        f"t {t_s:.3f} s: {decided} (cost {int(row['cost'])}), script's count {row['count']:g}, "
        f"remaining {int(row['remaining'])}, reset in {int(row['reset_ms']) / 1000:g} s"
        f"{retry_s}; admitted in the trailing window {in_window}"
    )


def marks_of(frame: pd.DataFrame, client: str | None, window_ms: int, origin_ms: int) -> Marks:
    """The marks of ``client``'s requests in one algorithm's log."""
    mine = frame[frame["client"] == client] if client is not None else frame.iloc[:0]
    in_window = metrics.rolling_admitted(mine, window_ms).to_numpy(dtype="int64")
    t_s = (mine["t_ms"].to_numpy(dtype="int64") - origin_ms) / 1000
    texts = [
        _hover(row, t, int(n))
        for (_, row), t, n in zip(mine.iterrows(), t_s, in_window, strict=True)
    ]
    return Marks(
        t_s,
        in_window,
        mine["allowed"].to_numpy(dtype=bool),
        mine["cost"].to_numpy(dtype="int64"),
        texts,
    )


def windows_at(
    algorithm: str, t_ms: int, window_ms: int, reset_ms: int | None = None
) -> list[tuple[int, int]]:
    """The windows (start, end) in ms that ``algorithm`` counts at ``t_ms``, as its registry
    entry says (``Limiter.counted_window``): the first of two is the previous grid window a
    sliding counter weighs; a first-hit window needs the decision's ``reset_ms``."""
    w_ms = window_ms
    grid = t_ms // w_ms * w_ms
    cls = ALGORITHMS.get(algorithm)
    kind = cls.counted_window if cls is not None else "trailing"
    if kind == "grid":
        return [(grid, grid + w_ms)]
    if kind == "two_grids":
        return [(grid - w_ms, grid), (grid, grid + w_ms)]
    if kind == "first_hit" and reset_ms is not None and reset_ms >= 0:
        return [(t_ms + reset_ms - w_ms, t_ms + reset_ms)]
    return [(t_ms - w_ms, t_ms)]


@dataclass
class _Row:
    """One algorithm's figure and the marks in it (bqplot objects: untyped)."""

    figure: Any
    y: Any
    band: Any
    limit: Any
    rule: Any
    admitted: Any
    refused: Any
    x_axis: Any
    y_axis: Any
    marks: Marks | None = None


class Rows:
    """The rows (:attr:`box`), one bqplot figure each, sharing one time scale.

    :meth:`show` puts a run's marks in; :meth:`at` moves the instant and the windows.
    """

    def __init__(self, row_px: int = ROW_PX) -> None:
        self.row_px = row_px
        self.x = bq.LinearScale(min=0.0, max=1.0, allow_padding=False)
        self.box = w.VBox(layout=w.Layout(width="100%"))
        self.box.add_class("explorer-rows")
        self._rows: dict[str, _Row] = {}
        self._order: tuple[str, ...] = ()
        self.window_ms = 1
        self.origin_ms = 0
        self.unit_ms, self.unit = 1000, "s"

    def _row(self, algorithm: str) -> _Row:
        if algorithm in self._rows:
            return self._rows[algorithm]
        colour = PALETTE[algorithm]
        y = bq.LinearScale(min=0.0, max=1.0, allow_padding=False)
        scales = {"x": self.x, "y": y}
        tooltip = bq.Tooltip(fields=["name"], show_labels=False)
        band = bq.Lines(
            x=[0.0, 0.0],
            y=[0.0, 0.0],
            scales=scales,
            colors=[colour, colour],
            fill="bottom",
            fill_colors=[colour, colour],
            fill_opacities=[0.18],
            stroke_width=0.5,
        )
        limit = bq.Lines(
            x=[0.0, 1.0], y=[1.0, 1.0], scales=scales, colors=["#555555"], line_style="dashed"
        )
        rule = bq.Lines(x=[0.0, 0.0], y=[0.0, 1.0], scales=scales, colors=["#888888"])
        admitted = bq.Scatter(
            x=[], y=[], scales=scales, colors=[colour], marker="circle",
            default_size=30, stroke="white", names=[], display_names=False, tooltip=tooltip,
        )  # fmt: skip
        refused = bq.Scatter(
            x=[], y=[], scales=scales, colors=[_REFUSED], marker="cross",
            default_size=30, names=[], display_names=False, tooltip=tooltip,
        )  # fmt: skip
        x_axis = bq.Axis(scale=self.x, grid_lines="none")
        y_axis = bq.Axis(scale=y, side="left", grid_lines="none", tick_format="d")
        figure = bq.Figure(
            marks=[band, limit, rule, admitted, refused],
            axes=[x_axis, y_axis],
            title=LABELS[algorithm],
            title_style={"font-size": "10.5px", "fill": colour, "font-weight": "bold"},
            fig_margin=dict(_MARGIN),
            animation_duration=0,
            layout=w.Layout(height=f"{self.row_px}px", width="100%"),
        )
        figure.add_class("explorer-row")
        figure.add_class(f"explorer-row-{algorithm}")
        row = _Row(figure, y, band, limit, rule, admitted, refused, x_axis, y_axis)
        self._rows[algorithm] = row
        return row

    def show(
        self,
        frames: Mapping[str, pd.DataFrame],
        limit: int,
        window_ms: int,
        client: str | None,
        origin_ms: int = 0,
        span_ms: int | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> dict[str, Marks]:
        """One row per algorithm of ``frames`` with ``client``'s requests as marks; a row's
        title is the algorithm's label and its ``notes`` (its numbers), if any."""
        self.window_ms, self.origin_ms = window_ms, origin_ms
        if span_ms is None:
            span_ms = max(
                (int(f["t_ms"].max()) - origin_ms for f in frames.values() if len(f)), default=0
            )
        drawn: dict[str, Marks] = {}
        self.unit_ms, self.unit = _unit(span_ms)
        end_s, step_s = _nice(span_ms / self.unit_ms)
        scale = 1000 / self.unit_ms  # seconds -> the axis unit
        self.x.min, self.x.max = 0.0, end_s
        ticks = np.arange(0.0, end_s + step_s / 2, step_s)
        names = tuple(frames)
        for i, (algorithm, frame) in enumerate(frames.items()):
            row = self._row(algorithm)
            note = (notes or {}).get(algorithm)
            row.figure.title = f"{LABELS[algorithm]}: {note}" if note else LABELS[algorithm]
            m = marks_of(frame, client, window_ms, origin_ms)
            drawn[algorithm] = m
            row.marks = m
            top = float(max(limit, int(m.in_window.max()) if len(m.in_window) else 0)) * 1.15
            y = row.y
            admitted, refused = row.admitted, row.refused
            ok, no = m.allowed, ~m.allowed
            sizes = 30 * np.sqrt(np.maximum(m.cost, 1))
            with admitted.hold_sync(), refused.hold_sync(), y.hold_sync():
                y.min, y.max = 0.0, top
                peak = int(m.in_window.max()) if len(m.in_window) else 0
                row.y_axis.tick_values = [0, limit, *([peak] if peak > 1.25 * limit else [])]
                admitted.x, admitted.y = m.t_s[ok] * scale, m.in_window[ok]
                admitted.names = [t for t, k in zip(m.text, ok, strict=True) if k]
                admitted.size = sizes[ok]
                refused.x, refused.y = m.t_s[no] * scale, m.in_window[no]
                refused.names = [t for t, k in zip(m.text, no, strict=True) if k]
                refused.size = sizes[no]
            row.limit.x, row.limit.y = [0.0, self.x.max], [limit, limit]
            last = i == len(frames) - 1
            # Only the bottom row carries the axis label: it gets the room for it.
            row.figure.fig_margin = {**_MARGIN, "bottom": 38 if last else _MARGIN["bottom"]}
            row.figure.layout.height = f"{self.row_px + (18 if last else 0)}px"
            axis = row.x_axis
            axis.tick_values = ticks
            axis.label = (
                (
                    f"time ({self.unit} from the first request)"
                    if origin_ms
                    else f"time ({self.unit})"
                )
                if last
                else ""
            )
        if names != self._order:
            self._order = names
            self.box.children = [self._rows[a].figure for a in names]
        return drawn

    def at(self, t_ms: int, resets_ms: Mapping[str, int] | None = None) -> None:
        """The instant ``t_ms`` (from the origin): the rule and each row's counted windows."""
        for algorithm in self._order:
            row = self._rows[algorithm]
            top = row.y.max
            reset = (resets_ms or {}).get(algorithm)
            spans = windows_at(algorithm, t_ms + self.origin_ms, self.window_ms, reset)
            u = self.unit_ms
            xs = [[(a - self.origin_ms) / u, (b - self.origin_ms) / u] for a, b in spans]
            band = row.band
            with band.hold_sync():
                band.x, band.y = xs, [[top, top] for _ in xs]
                band.fill_opacities = [0.08, 0.2] if len(xs) == 2 else [0.18]
            rule = row.rule
            with rule.hold_sync():
                rule.x, rule.y = [t_ms / self.unit_ms] * 2, [0, top]

    def figures(self) -> list[bq.Figure]:
        """The figures shown, top to bottom."""
        return [self._rows[a].figure for a in self._order]


def _unit(span_ms: int) -> tuple[int, str]:
    """The time axis' unit: seconds, or minutes past two hours, or hours past two days (so that
    a long trace's ticks read as times, not as six-digit numbers)."""
    if span_ms > 2 * 86_400_000:
        return 3_600_000, "h"
    if span_ms > 2 * 3_600_000:
        return 60_000, "min"
    return 1000, "s"


def _nice(span: float) -> tuple[float, float]:
    """The axis end and tick step: ``span`` (in the axis unit) rounded up to a round number,
    at most about ten ticks (so their labels never collide)."""
    for step in (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400):
        if span / step <= 10:
            return float(max(step, step * np.ceil(span / step))), float(step)
    return float(86400 * np.ceil(span / 86400)), 86400.0 * np.ceil(span / 864000)


def instants(marks: Sequence[Marks]) -> np.ndarray:
    """Every instant (s) at which a request of the client shown was decided, in order."""
    if not marks:
        return np.array([], dtype="float64")
    return np.unique(np.concatenate([m.t_s for m in marks]))
