"""The grading chart: a trace as a script and a reference decided it, up to the first difference.

Two rows on one axis of milliseconds, zoomed to the requests shown: what the reference expected
(below) and what the script said (above), a filled dot for an admitted request and a cross for a
refused one. Requests in the same millisecond (the battery has many) are stacked in arrival
order, so no two marks ever land on each other; the grid seams in view are dotted, and the seam
nearest the differing request is labelled. The title says the request and
its first differing field, whole.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from simulator.charts import ROLE_COLOURS, subplots
from simulator.userscripts.check import Mismatch

__all__ = ["mismatch_figure", "laid_out"]

ADMITTED, REFUSED = "#2ca02c", "#d62728"
#: Marks stacked per column within a row, and how far apart (in rows' units; a row is 1 apart).
STACK, STACK_STEP = 5, 0.14
#: A column of marks is this share of the axis wide: about a mark and a half.
COLUMN_SHARE = 1 / 70
#: The least an axis spans, so that its ticks name distinct milliseconds.
MIN_VIEW_MS = 10


def laid_out(t_ms: np.ndarray, column_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the marks of requests at ``t_ms`` (in order) go: x in ms and a y offset within the
    row. Requests less than a column apart form a cluster, stacked STACK high in arrival order
    (top to bottom, column by column) about their first time; a cluster that would touch the one
    before is moved right just enough, so no two marks ever land on each other."""
    x = np.zeros(len(t_ms))
    dy = np.zeros(len(t_ms))
    edge = -np.inf  # the right edge of the cluster before
    k = 0
    while k < len(t_ms):
        j = k + 1
        while j < len(t_ms) and t_ms[j] - t_ms[j - 1] < column_ms:
            j += 1
        n = j - k
        cols, high = -(-n // STACK), min(n, STACK)
        centre = max(float(t_ms[k]), edge + column_ms * (cols + 1) / 2)
        for i in range(n):
            x[k + i] = centre + (i // STACK - (cols - 1) / 2) * column_ms
            dy[k + i] = ((high - 1) / 2 - i % STACK) * STACK_STEP
        edge = centre + (cols - 1) / 2 * column_ms
        k = j
    return x, dy


def _view(t: np.ndarray, t_ms: int, w: int) -> tuple[int, int, int, bool]:
    """The ms the axis spans (before padding): the requests, and the seam nearest the
    differing request when it is no further than five times their span (or a second); that
    seam, and whether it is in view. At least MIN_VIEW_MS, about the requests."""
    lo, hi = int(t.min()), int(t.max())
    seam = min((t_ms // w * w, t_ms // w * w + w), key=lambda s: abs(s - t_ms))
    near = abs(seam - t_ms) <= max(5 * (hi - lo), 1000)
    if near:
        lo, hi = min(lo, seam), max(hi, seam)
    if hi - lo < MIN_VIEW_MS:
        lo, hi = (lo + hi) // 2 - MIN_VIEW_MS // 2, (lo + hi) // 2 + MIN_VIEW_MS // 2
    return lo, hi, seam, near


def mismatch_figure(m: Mismatch, script: str = "your script", last: int = 30) -> Figure:
    """The last ``last`` requests before (and including) the first differing decision: what the
    script and the reference said to each, the differing one shaded."""
    rows = m.history[-last:]
    t = np.array([r[0] for r in rows], dtype="int64")
    w = m.window_ms
    lo, hi, seam, near = _view(t, m.t_ms, w)
    pad = 0.06 * max(hi - lo, 1)
    column = (hi - lo + 2 * pad) * COLUMN_SHARE
    x, dy = laid_out(t, column)
    right = max(float(x.max()) + column, hi + pad)
    fig, ax = subplots(figsize=(9.5, 3.8))
    for y, k in ((1, 2), (0, 3)):
        ok = np.array([r[k] for r in rows], dtype=bool)
        ax.scatter(
            x[ok],
            y + dy[ok],
            marker="o",
            color=ADMITTED,
            s=20,
            zorder=3,
            label="admitted" if y else None,
        )
        ax.scatter(
            x[~ok],
            y + dy[~ok],
            marker="x",
            color=REFUSED,
            s=26,
            linewidths=1.3,
            zorder=3,
            label="refused" if y else None,
        )
    ax.axvspan(
        x[-1] - column / 2,
        x[-1] + column / 2,
        color=ROLE_COLOURS["exact"],
        alpha=0.2,
        lw=0,
        label=f"request {m.index}: {m.field} differs",
    )
    for k in range(int(lo - pad) // w + 1, int(right) // w + 1):
        ax.axvline(k * w, color="#777777", lw=0.9, ls=":", zorder=1)
    if near:
        ax.annotate(
            f"seam at {seam:,} ms",
            (seam, -0.7),
            xytext=(4 if seam <= (lo + right) / 2 else -4, 0),
            textcoords="offset points",
            fontsize=9,
            va="center",
            ha="left" if seam <= (lo + right) / 2 else "right",
        )
    where = "" if near else f" (the nearest, {seam:,} ms, is out of view)"
    ax.set_xlim(lo - pad, right)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_yticks([0, 1], ["expected\n(reference)", f"got\n({script})"])
    ax.set_ylim(-0.9, 1.9)
    ax.set_xlabel(
        f"t (ms); dotted: grid seams every {w:,} ms{where}; requests close in time stacked "
        "in arrival order",
        fontsize=9,
    )
    ax.legend(fontsize=9, loc="upper left", ncol=3, framealpha=1, edgecolor="none")
    ax.set_title(
        f"First difference in {m.trace!r} (limit {m.limit} per {w:,} ms)\n"
        f"request {m.index} at t = {m.t_ms:,} ms, client {m.client!r}: {m.difference}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig
