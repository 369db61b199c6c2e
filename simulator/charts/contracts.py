"""The contracts chart: every algorithm against the exact log on the same offered traffic.

Takes the frame of :func:`simulator.studies.contracts.contracts_study`; one colour per algorithm,
its small-burst variant hatched in the same colour.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator.charts import LABELS, PALETTE, subplots

__all__ = ["contracts_figure"]

_PANELS = (
    ("admitted_vs_log_pct", "admitted, as % of what the exact log admitted"),
    ("max_in_window_ratio", "most admitted to one client in any window (x limit)"),
)


def contracts_figure(table: pd.DataFrame) -> Figure:
    """Per traffic family: how much each algorithm admits beside the log, and its worst window.

    A bar decided on a sample of the family's requests (a user's script on the Lua path) is
    hatched and says so beside it, with the sample's size."""
    families = list(dict.fromkeys(table["family"]))
    variants = list(dict.fromkeys(table["variant"]))
    kinds = dict(zip(table["variant"], table["algorithm"], strict=False))
    fig, axes = subplots(1, 2, figsize=(10.5, 0.9 * len(families) + 2.4), sharey=True)
    height = 0.8 / len(variants)
    y0 = np.arange(len(families))[::-1].astype(float)
    for ax, (column, title) in zip(axes, _PANELS, strict=True):
        for k, variant in enumerate(variants):
            part = table[table["variant"] == variant].set_index("family").reindex(families)
            _bars(ax, part, column, variant, kinds[variant], y0 + 0.4 - (k + 0.5) * height, height)
        ax.set_title(title, fontsize=10)
        if "sampled" in table and table["sampled"].fillna(False).astype(bool).any():
            ax.set_xlim(0, 1.6 * float(table[column].max()))  # room for the sample's note
        ax.axvline(100 if column == "admitted_vs_log_pct" else 1, color="black", lw=0.8, ls=":")
    axes[0].set_xlabel("% of the exact log's admissions (dotted: the log)")
    axes[1].set_xlabel("x the limit (dotted: the limit)")
    axes[0].set_yticks(y0, [f.replace("_", " ") for f in families])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(
        "Different contracts, not approximations: fixed windows and buckets admit more than the "
        "exact log,\nand buckets with burst = limit let one client have up to 2x the limit in a window",
        fontsize=11,
    )
    rows = -(-len(labels) // 3)  # the legend's rows under the axes, about 0.2 in each
    fig.tight_layout(rect=(0, min(0.4, (0.2 * rows + 0.02) / fig.get_figheight()), 1, 1))
    return fig


def _bars(
    ax: Any,
    part: pd.DataFrame,
    column: str,
    variant: str,
    algorithm: str,
    y: np.ndarray,
    height: float,
) -> None:
    """One variant's bars, a family each: the small-burst variant hatched, a sampled one dotted
    and its sample's size beside it."""
    small = variant != algorithm
    sampled = (
        part["sampled"].fillna(False).astype(bool).to_numpy()
        if ("sampled" in part)
        else np.zeros(len(part), dtype=bool)
    )
    label = LABELS[algorithm] + (" (small burst: limit / 10)" if small else "")
    if sampled.any():
        label += " (sampled)"
    values = part[column].to_numpy(dtype=float)
    ax.barh(
        y,
        values,
        height=height * 0.9,
        color="white" if small or sampled.any() else PALETTE[algorithm],
        edgecolor=PALETTE[algorithm],
        hatch="////" if small else ("...." if sampled.any() else None),
        label=label,
    )
    if not sampled.any():
        return
    for yi, v, n, of in zip(
        y[sampled],
        values[sampled],
        part["requests"][sampled],
        part["offered_requests"][sampled],
        strict=True,
    ):
        ax.text(v, yi, f" sampled: {int(n):,} of {int(of):,}", va="center", fontsize=9)
