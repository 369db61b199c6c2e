"""The boundary burst: the trailing-window count, one small panel per algorithm, the seams drawn."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simulator import metrics
from simulator.charts import LABELS, PALETTE, order, subplots

__all__ = ["boundary_burst_figure"]

# Panel height in inches: three rows and the title fit one 1280x800 screen (about 600 px).
_ROW_IN = 1.6


def boundary_burst_figure(  # noqa: PLR0913 (the run's four parameters, and which algorithms)
    frame: pd.DataFrame,
    limit: int,
    window_ms: int,
    first_s: float,
    second_s: float,
    algorithms: Sequence[str] | None = None,
) -> Figure:
    """Small multiples, two to a row: per algorithm, the count admitted in the trailing window
    against the limit, each burst's admitted count written where it lands, and the clock grid's
    seams (the instants a clock-aligned window starts again) as dotted lines. Six algorithms fit
    one screen at 8.4 in wide; ``algorithms`` picks and orders them (default: every one in the
    frame, in the registry's order)."""
    names = list(algorithms) if algorithms is not None else list(order())
    names = [a for a in names if a in set(frame["algorithm"])]
    window_s = window_ms / 1000
    lo_s = max(0.0, min(first_s, second_s) - 5)
    hi_s = max(first_s, second_s) + window_s + 5
    grid = np.arange(int(lo_s * 1000), int(hi_s * 1000), 100, dtype="int64")
    curve = metrics.rolling_curve(frame[frame["algorithm"].isin(names)], window_ms, grid)
    per_second = metrics.admitted_per_second(frame)
    cols = 2 if len(names) > 1 else 1
    rows = math.ceil(len(names) / cols)
    fig, axes = subplots(
        rows, cols, figsize=(8.4, _ROW_IN * rows + 1.0), sharex=True, sharey=True, squeeze=False
    )
    ymax = max(2 * limit, int(curve["in_window"].max())) * 1.65  # room for two lines of text
    seams = [s * window_s for s in range(math.ceil(lo_s / window_s), int(hi_s // window_s) + 1)]
    for ax, algorithm in zip(axes.flat, names, strict=False):
        _panel(ax, algorithm, curve, per_second, limit, window_s, (first_s, second_s), seams)
        ax.set_xlim(lo_s, hi_s)
        ax.set_ylim(0, ymax)
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"admitted in\ntrailing {window_s:g} s", fontsize=9)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(_title(frame, curve, limit, window_ms, first_s, second_s), fontsize=11)
    # room under the two-line title (so that its second line clears the first row's panel
    # titles in any font) and over the legend at the foot
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1 - 0.3 / fig.get_figheight()))
    return fig


def _panel(  # noqa: PLR0913 (one panel: its axes, the run's frames and its parameters)
    ax: Axes,
    algorithm: str,
    curve: pd.DataFrame,
    per_second: pd.DataFrame,
    limit: int,
    window_s: float,
    bursts_s: tuple[float, float],
    seams: list[float],
) -> None:
    """One algorithm's curve, the limit, the seams, and what each burst got through."""
    c = curve[curve["algorithm"] == algorithm]
    ps = per_second[per_second["algorithm"] == algorithm]
    ax.plot(c["t_ms"] / 1000, c["in_window"], color=PALETTE[algorithm], lw=2)
    ax.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit})")
    for i, seam in enumerate(seams):
        label = f"clock seam (every {window_s:g} s)" if i == 0 else None
        ax.axvline(seam, color="#777777", lw=1, ls=":", label=label)
    # the bursts are seconds apart on a minute-wide axis: their counts go in words, not on it
    got = ", ".join(
        f"{b:g} s: +{int(ps.loc[ps['second'] == int(b), 'admitted'].sum())}"
        for b in sorted(set(bursts_s))
    )
    peak = int(c["in_window"].max())
    total = int(ps[["admitted", "refused"]].sum().sum())
    ax.text(
        0.02, 0.95, f"admitted {int(ps['admitted'].sum())} of {total} ({got})\n"
        f"most in a window: {peak} ({peak / limit:.2f}× the limit)",
        transform=ax.transAxes, fontsize=9, ha="left", va="top", linespacing=1.3,
    )  # fmt: skip
    ax.set_title(LABELS[algorithm], fontsize=10)
    ax.tick_params(labelsize=9)


def _title(
    frame: pd.DataFrame,
    curve: pd.DataFrame,
    limit: int,
    window_ms: int,
    first_s: float,
    second_s: float,
) -> str:
    """What was sent, and what the run shows: the most any algorithm let through in a window."""
    one = frame[(frame["algorithm"] == frame["algorithm"].iloc[0])]
    one = one[one["client"] == one["client"].iloc[0]]
    first = int((one["t_ms"] == round(first_s * 1000)).sum())
    second = int((one["t_ms"] == round(second_s * 1000)).sum())
    peaks = curve.groupby("algorithm", sort=False)["in_window"].max()
    worst = str(peaks.idxmax())
    held = peaks[peaks <= limit]
    claim = f"{LABELS[worst]} lets {peaks[worst] / limit:.2f}x the limit through in one window"
    if peaks[worst] <= limit:
        claim = "every algorithm holds the limit in every window"
    elif len(held):
        claim += f"; {len(held)} of {len(peaks)} hold the limit"
    return (
        f"Boundary burst: {first} requests at second {first_s:g} and {second} at second "
        f"{second_s:g}, limit {limit} per {window_ms / 1000:g} s\n{claim}"
    )
