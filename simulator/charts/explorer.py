"""The explorer's figure: what each algorithm did with the same traffic, and one client's view.

Top: admitted and refused requests per second (or per bin of seconds for a long trace), a line per
algorithm. Middle: for the chosen client, the requests admitted in the trailing window against
the limit, with the clock grid's window seams dotted (where the fixed window lets twice the limit
through). Bottom: the header values that client received, request by request: RateLimit-Remaining,
RateLimit-Reset and, on a refusal, Retry-After. Sized for a notebook column (1,000 px wide).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator import metrics
from simulator.charts import LABELS, PALETTE

__all__ = ["explorer_figure", "bin_seconds"]

#: Width of the figure in inches at 100 dpi: a JupyterLab notebook column.
WIDTH_IN = 10.0


def bin_seconds(span_s: float, most_bins: int = 300) -> int:
    """Seconds per bin of the per-second panels: 1, or a round number keeping the bins few."""
    for step in (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400):
        if span_s / step <= most_bins:
            return step
    return 86400


def explorer_figure(
    frames: dict[str, pd.DataFrame],
    limit: int,
    window_ms: int,
    client: str | None,
    origin_ms: int = 0,
    seams_ms: np.ndarray | None = None,
) -> Figure:
    """Per-second counts per algorithm, then ``client``'s trailing count and headers."""
    fig = Figure(figsize=(WIDTH_IN, 8.6))
    # Fixed margins instead of tight_layout: the figure is redrawn on every control change.
    gs = fig.add_gridspec(
        3,
        3,
        height_ratios=[1, 1.1, 0.9],
        left=0.07,
        right=0.985,
        top=0.96,
        bottom=0.06,
        hspace=0.42,
        wspace=0.28,
    )
    admitted_ax, refused_ax = fig.add_subplot(gs[0, 0:2]), fig.add_subplot(gs[0, 2])
    trailing_ax = fig.add_subplot(gs[1, :])
    remaining_ax, reset_ax, retry_ax = (fig.add_subplot(gs[2, i]) for i in range(3))

    span_ms = max((int(f["t_ms"].max()) - origin_ms for f in frames.values() if len(f)), default=0)
    step = bin_seconds(span_ms / 1000)
    per = "second" if step == 1 else f"{step:,} s"
    unit = "time (s from the first request)" if origin_ms else "second of the run (s)"
    peak = limit
    for i, (algorithm, frame) in enumerate(frames.items()):
        colour, label = PALETTE[algorithm], LABELS[algorithm]
        lw = 1.2 + 0.7 * (len(frames) - 1 - i)  # the first drawn widest: equal lines stay visible
        shifted = frame.assign(t_ms=frame["t_ms"] - origin_ms)
        ps = metrics.admitted_per_second(shifted)
        ps = ps.groupby(ps["second"] // step * step)[["admitted", "refused"]].sum()
        admitted_ax.step(ps.index, ps["admitted"], where="post", color=colour, lw=lw, label=label)
        refused_ax.step(ps.index, ps["refused"], where="post", color=colour, lw=lw)
        if client is None:
            continue
        mine = shifted[shifted["client"] == client]
        if mine.empty:
            continue
        t_s = mine["t_ms"].to_numpy(dtype="int64")
        grid = np.unique(np.r_[np.linspace(0, span_ms, 800).astype("int64"), t_s, t_s + window_ms])
        curve = metrics.rolling_curve(mine, window_ms, grid)
        trailing_ax.step(
            curve["t_ms"] / 1000,
            curve["in_window"],
            where="post",
            color=colour,
            lw=1.6,
            label=label,
        )
        peak = max(peak, int(curve["in_window"].max()))
        x = mine["t_ms"] / 1000
        remaining_ax.step(x, mine["remaining"], where="post", color=colour, lw=lw)
        reset = mine["reset_ms"].where(mine["reset_ms"] >= 0) / 1000
        reset_ax.plot(x, reset, ".", color=colour, ms=3)
        refused = mine[~mine["allowed"]]
        retry_ax.plot(
            refused["t_ms"] / 1000,
            refused["retry_after_ms"].astype("float64") / 1000,
            ".",
            color=colour,
            ms=4,
        )
    admitted_ax.set_title(f"Admitted per {per}: the same traffic, each algorithm", fontsize=10)
    admitted_ax.set_ylabel(f"admitted per {per}")
    refused_ax.set_title(f"Refused per {per}", fontsize=10)
    refused_ax.set_ylabel(f"refused per {per}")
    for ax in (admitted_ax, refused_ax):
        ax.set_xlabel(unit)
        ax.set_ylim(bottom=0)
    if frames:
        admitted_ax.legend(loc="upper right", fontsize=8, frameon=False, ncol=2)
    w_s = window_ms / 1000
    trailing_ax.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit:,})")
    if seams_ms is not None and len(seams_ms) <= 200:
        for seam in seams_ms:
            trailing_ax.axvline(seam / 1000, color="#999999", lw=0.6, ls=":")
    trailing_ax.set_title(
        f"{client or 'no client'}: admitted in the trailing {w_s:g} s against the limit "
        "(dotted: the clock grid's window seams)",
        fontsize=10,
    )
    trailing_ax.set_ylabel(f"admitted in trailing {w_s:g} s")
    trailing_ax.set_xlabel(unit)
    trailing_ax.set_ylim(0, peak * 1.35)  # room for the legend above the lines
    trailing_ax.legend(loc="upper right", fontsize=8, frameon=False, ncol=3)
    for ax in (admitted_ax, refused_ax, trailing_ax):
        ax.set_xlim(0, max(span_ms / 1000, 1))
    for ax, title, ylabel in (
        (remaining_ax, "RateLimit-Remaining", "remaining (requests)"),
        (reset_ax, "RateLimit-Reset", "reset in (s)"),
        (retry_ax, "Retry-After (refusals)", "retry after (s)"),
    ):
        ax.set_title(f"{client or 'no client'}: {title}", fontsize=9)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(unit)
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, max(span_ms / 1000, 1))
    return fig
