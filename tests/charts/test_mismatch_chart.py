"""The grading chart: zoomed to the requests in ms, no two marks on each other, the seam drawn and
labelled, nothing overprinted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from test_charts import text_problems

from simulator.algorithms import ALGORITHMS
from simulator.charts.check import mismatch_figure
from simulator.records import Decision
from simulator.userscripts import register_script
from simulator.userscripts.check import Mismatch, check
from simulator.userscripts.fields import Difference

ROOT = Path(__file__).resolve().parents[2]


def rearmed() -> Mismatch:
    register_script(ROOT / "notebooks/exercises/mistakes/first_hit_rearmed.lua", "chart_rearmed")
    try:
        return check("chart_rearmed", "echomq").mismatch
    finally:
        ALGORITHMS.pop("chart_rearmed")


def crowded() -> Mismatch:
    """Thirty requests in one millisecond 1 ms before a seam, then three on it."""
    t = [59_999] * 30 + [60_000] * 3
    history = tuple((ms, "c", k < 20 or k >= 30, k < 20 or k >= 31) for k, ms in enumerate(t))
    said = Decision(True, 1.0, 20, 19, 60_000, 0)
    expected = Decision(False, 0.0, 20, 0, 60_000, 60_000)
    return Mismatch(
        "crowded",
        len(t),
        60_000,
        "c",
        20,
        60_000,
        said,
        expected,
        32,
        history,
        Difference("allowed", "0 (refused)", "1 (admitted)"),
    )


def zeros_at_the_start() -> Mismatch:
    d = Decision(True, 1.0, 100, 99, 1000, 0)
    return Mismatch(
        "practice",
        1,
        59_000,
        "c",
        100,
        60_000,
        d._replace(count=0.0),
        d,
        0,
        ((59_000, "c", True, True),),
        Difference("count", "1", "0"),
    )


@pytest.mark.parametrize("make", [rearmed, crowded, zeros_at_the_start])
def test_the_mismatch_chart_keeps_every_mark_apart_and_names_the_seam(make):
    m = make()
    fig = mismatch_figure(m, "a script")
    assert text_problems(fig) == []
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    (ax,) = fig.axes
    marks = np.vstack([ax.transData.transform(c.get_offsets()) for c in ax.collections])
    assert len(marks) == 2 * len(m.history[-30:])
    gaps = [np.hypot(*(marks[i] - marks[j])) for i in range(len(marks)) for j in range(i)]
    assert min(gaps) >= 6  # px at the figure's dpi: more than a mark's width apart
    t = np.array([r[0] for r in m.history[-30:]])
    lo, hi = ax.get_xlim()
    assert lo <= t.min() and t.max() <= hi  # every request in view, on an axis of ms
    assert hi - lo <= 1.3 * max(t.max() - t.min(), 1000) + 20  # zoomed to them
    seam = min(
        (m.t_ms // m.window_ms * m.window_ms, (m.t_ms // m.window_ms + 1) * m.window_ms),
        key=lambda s: abs(s - m.t_ms),
    )
    assert any(list(line.get_xdata()) == [seam, seam] for line in ax.lines)
    assert any(text.get_text() == f"seam at {seam:,} ms" for text in ax.texts)
    assert m.field in ax.get_title() and f"request {m.index} at t = {m.t_ms:,} ms" in ax.get_title()
