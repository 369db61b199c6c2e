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
re-rendering an image; hovering over a mark shows its decision row. A redraw costs what changed:
each row keeps its figure and marks for good and is handed data only; a client's marks in one
algorithm's log are worked out once (with numpy, no row-by-row pandas) and kept while that log
is (a value seen before is drawn from them); a value that would not change is not assigned, so the
page is sent only what differs (one message per widget, its arrays as float32 and int32). The
shaded window and the rule span their row on a scale of their own, so a new limit leaves them as
they are and a step of the time bar moves two x's per row.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
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

#: Height of one algorithm's row in pixels (six rows and the controls fit a 1280×800 screen),
#: and with *large* on (a projector).
ROW_PX, LARGE_ROW_PX = 96, 136
#: The rows' titles (px): legible from the back of a room, on their own line above the plot.
TITLE_PX, LARGE_TITLE_PX = 12.5, 16
_REFUSED = "#222222"
_MARGIN = {"top": 24, "bottom": 20, "left": 46, "right": 12}
#: Marks kept for logs seen before (their hover texts are most of it: some 60 MB at most).
CACHED_MARKS = 200_000


@dataclass(frozen=True)
class Marks:
    """One algorithm's requests of the client shown, in log order, as the row draws them
    (seconds from the origin, the trailing admitted count, admitted or not, cost, the hover
    text) and what the shaded window needs (each decision's instant and reset, in ms)."""

    t_s: np.ndarray
    in_window: np.ndarray
    allowed: np.ndarray
    cost: np.ndarray
    text: list[str]
    t_ms: np.ndarray
    reset_ms: np.ndarray

    def reset_at(self, t_ms: int) -> int | None:
        """The reset (ms to go) at ``t_ms`` by the client's last decision then, if any."""
        before = np.flatnonzero(self.t_ms <= t_ms)
        if not len(before):
            return None
        last = before[-1]
        return int(self.reset_ms[last]) - (t_ms - int(self.t_ms[last]))


def _in_window(
    frame: pd.DataFrame, rows: np.ndarray, t_ms: np.ndarray, allowed: np.ndarray, window_ms: int
) -> np.ndarray:
    """:func:`metrics.rolling_admitted` of one client's ``rows``: one sort of its instants when
    they are one run of one algorithm (as every log the explorer draws), else the grouped count."""
    for column in ("run_id", "algorithm"):
        if column in frame.columns and frame[column].iloc[rows].nunique(dropna=False) > 1:
            mine = frame.iloc[rows]
            return metrics.rolling_admitted(mine, window_ms).to_numpy(dtype="int64")
    n = len(rows)
    order = np.lexsort((np.arange(n), t_ms))
    return metrics.trailing_admitted(np.zeros(n, dtype="int64"), t_ms, allowed, window_ms, order)


def _hovers(
    frame: pd.DataFrame, rows: np.ndarray, t_s: np.ndarray, in_window: np.ndarray
) -> list[str]:
    """Each mark's decision row, as hovering over it shows it."""

    def values(column: str) -> list[Any]:
        # Python's own numbers (as a row of the frame holds them), NA where the log has none.
        return frame[column].iloc[rows].tolist() if column in frame else [None] * len(rows)

    texts = []
    for t, n, allowed, cost, count, remaining, reset, retry in zip(
        t_s.tolist(), in_window.tolist(), values("allowed"), values("cost"), values("count"),
        values("remaining"), values("reset_ms"), values("retry_after_ms"), strict=True,
    ):  # fmt: skip
        decided = "admitted" if allowed else "refused"
        retry_s = "" if allowed or pd.isna(retry) else f", Retry-After {int(retry) / 1000:g} s"
        texts.append(
            f"t {t:.3f} s: {decided} (cost {int(cost)}), script's count {count:g}, "
            f"remaining {int(remaining)}, reset in {int(reset) / 1000:g} s"
            f"{retry_s}; admitted in the trailing window {n}"
        )
    return texts


def marks_of(frame: pd.DataFrame, client: str | None, window_ms: int, origin_ms: int) -> Marks:
    """The marks of ``client``'s requests in one algorithm's log."""
    if client is None:
        rows = np.empty(0, dtype="int64")
    else:
        rows = np.flatnonzero((frame["client"] == client).to_numpy(dtype=bool, na_value=False))
    t_ms = frame["t_ms"].to_numpy(dtype="int64")[rows]
    allowed = frame["allowed"].to_numpy(dtype=bool)[rows]
    in_window = _in_window(frame, rows, t_ms, allowed, window_ms)
    t_s = (t_ms - origin_ms) / 1000
    return Marks(
        t_s,
        in_window,
        allowed,
        frame["cost"].to_numpy(dtype="int64")[rows],
        _hovers(frame, rows, t_s, in_window),
        t_ms,
        frame["reset_ms"].to_numpy(dtype="int64")[rows],
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


def _same(now: Any, new: Any) -> bool:
    """Whether a trait holding ``now`` would hold the same after ``new`` is assigned."""
    if isinstance(now, np.ndarray) or isinstance(new, (np.ndarray, list, tuple)):
        a, b = np.asarray(now), np.asarray(new)
        return a.shape == b.shape and np.array_equal(a, b)
    return bool(now == new)


def _update(widget: Any, **values: Any) -> None:
    """Assign only the traits of ``widget`` whose value differs, all in one message: each
    message carries its arrays serialised, and the page redraws the mark on each."""
    changed = {k: v for k, v in values.items() if not _same(getattr(widget, k), v)}
    if changed:
        with widget.hold_sync():
            for k, v in changed.items():
                setattr(widget, k, v)


@dataclass
class _Row:
    """One algorithm's figure and the marks in it (bqplot objects: untyped), and the marks it
    shows in the time unit they were drawn in."""

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
    unit_ms: int = 0


class Rows:
    """The rows (:attr:`box`), one bqplot figure each, sharing one time scale.

    :meth:`show` puts a run's marks in; :meth:`at` moves the instant and the windows.
    """

    def __init__(self, row_px: int = ROW_PX) -> None:
        self.row_px = row_px
        self.x = bq.LinearScale(min=0.0, max=1.0, allow_padding=False)
        # The shaded windows and the rule span their row whatever its counts, and the limit
        # sits at its share of the row's height: a scale of their own, so that a new limit
        # moves none of them (the limit only when a count passes it).
        self.full = bq.LinearScale(min=0.0, max=1.0, allow_padding=False)
        self.box = w.VBox(layout=w.Layout(width="100%"))
        self.box.add_class("explorer-rows")
        self._rows: dict[str, _Row] = {}
        self._order: tuple[str, ...] = ()
        self._cache: OrderedDict[tuple[Any, ...], tuple[Any, Marks]] = OrderedDict()
        self._cached = 0
        self.window_ms = 1
        self.origin_ms = 0
        self.unit_ms, self.unit = 1000, "s"
        self.title_px = TITLE_PX
        self.client: str | None = None

    def resize(self, large: bool) -> None:
        """Rows and titles for a projector (``large``) or a screen."""
        self.row_px, self.title_px = (LARGE_ROW_PX, LARGE_TITLE_PX) if large else (ROW_PX, TITLE_PX)
        margin_top = round(2 * self.title_px)
        for i, algorithm in enumerate(self._order):
            row = self._rows[algorithm]
            last = i == len(self._order) - 1
            _update(row.figure.layout, height=f"{self.row_px + (18 if last else 0)}px")
            _update(
                row.figure,
                title_style={**row.figure.title_style, "font-size": f"{self.title_px}px"},
                fig_margin={**row.figure.fig_margin, "top": margin_top},
            )

    def _row(self, algorithm: str) -> _Row:
        if algorithm in self._rows:
            return self._rows[algorithm]
        colour = PALETTE[algorithm]
        y = bq.LinearScale(min=0.0, max=1.0, allow_padding=False)
        scales = {"x": self.x, "y": y}
        full = {"x": self.x, "y": self.full}
        tooltip = bq.Tooltip(fields=["name"], show_labels=False)
        band = bq.Lines(
            x=[0.0, 0.0],
            y=[1.0, 1.0],
            scales=full,
            colors=[colour, colour],
            fill="bottom",
            fill_colors=[colour, colour],
            fill_opacities=[0.18],
            stroke_width=0.5,
        )
        limit = bq.Lines(
            x=[0.0, 1.0], y=[1.0, 1.0], scales=full, colors=["#555555"], line_style="dashed"
        )
        rule = bq.Lines(x=[0.0, 0.0], y=[0.0, 1.0], scales=full, colors=["#888888"])
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
            title_style={"font-size": f"{self.title_px}px", "fill": colour, "font-weight": "bold"},
            fig_margin=dict(_MARGIN),
            animation_duration=0,
            layout=w.Layout(height=f"{self.row_px}px", width="100%"),
        )
        figure.add_class("explorer-row")
        figure.add_class(f"explorer-row-{algorithm}")
        row = _Row(figure, y, band, limit, rule, admitted, refused, x_axis, y_axis)
        self._rows[algorithm] = row
        return row

    def marks(
        self, frame: pd.DataFrame, client: str | None, window_ms: int, origin_ms: int
    ) -> Marks:
        """:func:`marks_of`, kept while ``frame`` lives (the runs' cache hands the same log back
        for a value seen before), the least recently drawn given up past :data:`CACHED_MARKS`."""
        key = (id(frame), client, window_ms, origin_ms)
        hit = self._cache.pop(key, None)
        if hit is not None:
            self._cached -= len(hit[1].t_s)
            if hit[0]() is not frame:  # that log is gone, and another took its id
                hit = None
        m = hit[1] if hit is not None else marks_of(frame, client, window_ms, origin_ms)
        self._cache[key] = (weakref.ref(frame), m)
        self._cached += len(m.t_s)
        while self._cached > CACHED_MARKS and len(self._cache) > 1:
            _, (_, old) = self._cache.popitem(last=False)
            self._cached -= len(old.t_s)
        return m

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
        title is the algorithm's label and whose marks they are with their numbers (or its
        ``notes``, if given)."""
        self.window_ms, self.origin_ms, self.client = window_ms, origin_ms, client
        if span_ms is None:
            span_ms = max(
                (int(f["t_ms"].max()) - origin_ms for f in frames.values() if len(f)), default=0
            )
        drawn: dict[str, Marks] = {}
        self.unit_ms, self.unit = _unit(span_ms)
        end_s, step_s = _nice(span_ms / self.unit_ms)
        _update(self.x, min=0.0, max=end_s)
        ticks = np.arange(0.0, end_s + step_s / 2, step_s)
        label = f"time ({self.unit} from the first request)" if origin_ms else f"time ({self.unit})"
        for i, (algorithm, frame) in enumerate(frames.items()):
            m = drawn[algorithm] = self.marks(frame, client, window_ms, origin_ms)
            row = self._row(algorithm)
            # Only the bottom row carries the axis label: it gets the room for it.
            last = i == len(frames) - 1
            note = (notes or {}).get(algorithm) or _client_note(client, m)
            self._frame_row(row, algorithm, note, ticks, label, last)
            self._scale_row(row, m, limit, end_s)
            if row.marks is not m or row.unit_ms != self.unit_ms:
                self._draw(row, m)
        names = tuple(frames)
        if names != self._order:
            self._order = names
            self.box.children = [self._rows[a].figure for a in names]
        return drawn

    def _frame_row(
        self, row: _Row, algorithm: str, note: str | None, ticks: np.ndarray, label: str, last: bool
    ) -> None:
        """A row's title (its label and numbers) and time axis; the bottom row's with its label."""
        _update(
            row.figure,
            title=f"{LABELS[algorithm]} · {note}" if note else LABELS[algorithm],
            fig_margin={
                **_MARGIN,
                "top": round(2 * self.title_px),
                "bottom": 38 if last else _MARGIN["bottom"],
            },
        )
        _update(row.figure.layout, height=f"{self.row_px + (18 if last else 0)}px")
        _update(row.x_axis, tick_values=ticks, label=label if last else "")

    @staticmethod
    def _scale_row(row: _Row, m: Marks, limit: int, end_s: float) -> None:
        """A row's count axis up to the limit or the peak, and its dashed limit."""
        peak = int(m.in_window.max()) if len(m.in_window) else 0
        # The ticks before their scale: the page fades ticks a new domain drops or adds, and
        # ticks set after that are left half faded.
        _update(row.y_axis, tick_values=[0, limit, *([peak] if peak > 1.25 * limit else [])])
        _update(row.y, min=0.0, max=float(max(limit, peak)) * 1.15)
        # At its share of the row's height: where no count passes it, the same for any limit.
        _update(row.limit, x=[0.0, end_s], y=[limit / max(limit, peak) / 1.15] * 2)

    def _draw(self, row: _Row, m: Marks) -> None:
        """Hand ``m`` to the row's two marks: the client's instants in the axis unit (float32)
        and counts (int32), the sizes and hover texts, each mark's changes in one message."""
        x = (m.t_s * (1000 / self.unit_ms)).astype("float32")
        y = m.in_window.astype("int32")
        sizes = (30 * np.sqrt(np.maximum(m.cost, 1))).astype("float32")
        text = np.asarray(m.text, dtype=str)
        for mark, chosen in ((row.admitted, m.allowed), (row.refused, ~m.allowed)):
            _update(mark, x=x[chosen], y=y[chosen], size=sizes[chosen], names=text[chosen])
        row.marks, row.unit_ms = m, self.unit_ms

    def at(self, t_ms: int, resets_ms: Mapping[str, int] | None = None) -> None:
        """The instant ``t_ms`` (from the origin): the rule and each row's counted windows (a
        first-hit window ends at ``resets_ms``, by default the reset of the client's last
        decision by then)."""
        u, origin = self.unit_ms, self.origin_ms
        for algorithm in self._order:
            row = self._rows[algorithm]
            if resets_ms is not None:
                reset = resets_ms.get(algorithm)
            else:
                reset = row.marks.reset_at(t_ms + origin) if row.marks is not None else None
            spans = windows_at(algorithm, t_ms + origin, self.window_ms, reset)
            xs = [[(a - origin) / u, (b - origin) / u] for a, b in spans]
            _update(
                row.band,
                x=xs,
                y=[[1.0, 1.0] for _ in xs],
                fill_opacities=[0.08, 0.2] if len(xs) == 2 else [0.18],
            )
            _update(row.rule, x=[t_ms / u] * 2)

    def figures(self) -> list[bq.Figure]:
        """The figures shown, top to bottom."""
        return [self._rows[a].figure for a in self._order]


def _client_note(client: str | None, m: Marks) -> str:
    """Whose marks a row shows, and their numbers: ``client 10.0.0.1: 37 requests, 30
    admitted, most in a window 12``."""
    if client is None:
        return ""
    n, admitted = len(m.allowed), int(m.allowed.sum())
    peak = int(m.in_window.max()) if n else 0
    return (
        f"client {client}: {n:,} request{'s' * (n != 1)}, {admitted:,} admitted, "
        f"most in a window {peak:,}"
    )


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
