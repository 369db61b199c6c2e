"""Charts of the accuracy study and the adversaries.

Figures take the frames made by :mod:`simulator.studies.accuracy` and
:mod:`simulator.studies.adversary` and lay them out; :func:`simulator.cli.jobs.accuracy` runs both
studies (reduced by default, full size with ``--full``) and writes the figures and tables.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator import metrics
from simulator.algorithms import ALGORITHMS
from simulator.charts import LABELS, PALETTE, subplots

__all__ = [
    "families_figure",
    "error_figure",
    "load_sweep_figure",
    "schedule_figure",
    "with_cloudflare",
]

_PANELS = (
    ("decided_differently_pct", "requests decided differently\nfrom the exact log (%)"),
    ("mean_rel_diff_pct", "mean |estimate - exact|\n/ exact (%)"),
    ("clients_over_limit_pct", "clients let through above\nthe limit in some window (%)"),
    ("clients_limited_while_under_pct", "clients refused while\nunder the limit (%)"),
)


def with_cloudflare(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with Cloudflare's published row on top and client counts also as shares."""
    from simulator.studies.accuracy import CLOUDFLARE

    table = pd.concat([pd.DataFrame([CLOUDFLARE]), summary], ignore_index=True)
    table["clients_over_limit_pct"] = 100 * table["clients_over_limit"] / table["clients"]
    table["clients_limited_while_under_pct"] = (
        100 * table["clients_limited_while_under"] / table["clients"]
    )
    return table


def families_figure(summary: pd.DataFrame) -> Figure:
    """Cloudflare's figures and ours, family by family, one panel per figure.

    The values span five decades, so each is a dot on a log axis with its value written beside
    it (a bar on a log axis would start at an arbitrary baseline and misstate the ratios); a
    zero is drawn at the floor, just inside the left edge, and labelled 0."""
    table = with_cloudflare(summary)
    fig, axes = subplots(1, len(_PANELS), figsize=(10, 0.5 * len(table) + 2.4), sharey=True)
    y = np.arange(len(table))[::-1]
    colours = [PALETTE["exact"]] + [PALETTE["sliding_counter"]] * (len(table) - 1)
    floor = 1e-4
    for ax, (column, title) in zip(axes, _PANELS, strict=True):
        values = table[column].astype(float).to_numpy()
        shown = np.where(values > 0, values, floor)
        ax.hlines(y, floor, shown, color="#dddddd", lw=1, zorder=1)
        ax.scatter(shown, y, color=colours, s=36, zorder=2)
        ax.set_xscale("log")
        ax.set_xlim(floor / 4, 300)  # a zero's dot (at the floor) whole, not cut by the edge
        for yi, v, x in zip(y, values, shown, strict=True):
            ax.text(x * 1.5, yi, f"{v:.3g}" if v > 0 else "0", va="center", fontsize=9)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("% (log scale)")
    names = [str(f).replace("_", " ") for f in table["family"]]
    axes[0].set_yticks(
        y, [f"{f}\n{int(n):,} req" for f, n in zip(names, table["requests"], strict=True)]
    )
    axes[0].set_ylabel("traffic family")
    fig.suptitle(
        "Sliding window counter vs the exact log: Cloudflare's mostly-quiet traffic hides the "
        "error;\ntraffic that leans on the limit shows it",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def error_figure(decisions: pd.DataFrame) -> Figure:
    """Distribution of estimate - exact per family (requests), all decisions."""
    fams = list(decisions["family"].cat.categories)
    fig, ax = subplots(figsize=(9, 4.8))
    bins = np.arange(-60.5, 61.5, 1.0)
    cmap = matplotlib.colormaps["viridis"].resampled(len(fams))
    for i, fam in enumerate(fams):
        err = decisions.loc[decisions["family"] == fam, "error"].to_numpy()
        share = np.histogram(np.clip(err, -60, 60), bins=bins)[0] / max(len(err), 1)
        ax.step(bins[:-1] + 0.5, np.maximum(share, 1e-7), where="mid", color=cmap(i), label=fam)
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1.5)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("estimate - exact count in the trailing window (requests; clipped at +-60)")
    ax.set_ylabel("share of decisions")
    ax.legend(fontsize=9, frameon=False)
    ax.set_title(
        "The estimate is mostly within a few requests; on/off bursts and heavy hitters have long tails",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


#: The three error figures of the load sweep: column, marker, label, shade of the counter's blue.
_SWEEP_LINES = (
    ("decided_differently_pct", "o", "decided differently from the exact log", "#0b3d66"),
    ("over_admits_pct", "^", "admitted over the limit (in its own window)", "#1f77b4"),
    ("false_refusals_pct", "v", "refused while under the limit", "#7fb3e0"),
)


def load_sweep_figure(sweep: pd.DataFrame) -> Figure:
    """Error figures as offered load grows: one panel per traffic kind, one line per figure."""
    kinds = list(dict.fromkeys(sweep["kind"]))
    fig, axes = subplots(1, len(kinds), figsize=(10, 4.4), sharey=True, squeeze=False)
    floor = 1e-4
    for ax, kind in zip(axes[0], kinds, strict=True):
        part = sweep[sweep["kind"] == kind].sort_values("load")
        for column, marker, label, colour in _SWEEP_LINES:
            ax.plot(
                part["load"],
                np.maximum(part[column].to_numpy(dtype=float), floor),
                marker=marker,
                color=colour,
                label=label,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(floor, 100)
        loads = part["load"].to_numpy(dtype=float)
        ax.set_xticks(loads, [f"{v:g}" for v in loads], fontsize=9)
        ax.minorticks_off()
        ax.axvline(1.0, color="black", lw=0.8, ls=":")
        ax.set_xlabel("offered load per client (x the limit; dotted: the limit)")
        ax.set_title(str(kind).replace("_", "/") + " traffic", fontsize=10)
    axes[0, 0].set_ylabel("% of requests (log scale; 0 drawn at 1e-4)")
    axes[0, -1].legend(fontsize=9, frameon=False, loc="lower right")
    fig.suptitle(
        "The sliding counter's errors as load grows: none under ~0.5x the limit for steady "
        "traffic,\nsooner for bursts; at the limit and above they are common",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def schedule_figure(
    frames: dict[str, pd.DataFrame],
    limit: int,
    window_ms: int,
    found_by: Mapping[str, str] | None = None,
) -> Figure:
    """The worst schedule found per algorithm (as replayed on the Lua path): requests and window
    count.

    Three algorithms to a row, each as two panels (requests sent, and the trailing-window count
    against the limit). Every panel spans the same length of time, so the schedules compare.
    ``found_by``: which adversary found each schedule (``search``, ``end_bunching``, ...). The
    title says which algorithms held the limit, as the replayed frames show it."""
    algorithms = [a for a in ALGORITHMS if a in frames]
    cols = min(3, len(algorithms))
    rows = -(-len(algorithms) // cols)
    fig, axes = subplots(2 * rows, cols, figsize=(10, 3.3 * rows + 0.8), squeeze=False)
    span = max(int(f["t_ms"].max() - f["t_ms"].min()) for f in frames.values()) + window_ms
    span += window_ms // 2
    peaks: dict[str, int] = {}
    for k, algorithm in enumerate(algorithms):
        frame = frames[algorithm]
        top, bottom = axes[2 * (k // cols), k % cols], axes[2 * (k // cols) + 1, k % cols]
        per_ms = frame.groupby(["t_ms", "allowed"]).size().unstack(fill_value=0)
        t_s = per_ms.index.to_numpy() / 1000
        admitted = per_ms.get(True, pd.Series(0, index=per_ms.index)).to_numpy()
        refused = per_ms.get(False, pd.Series(0, index=per_ms.index)).to_numpy()
        width = span / 1000 / 60
        top.bar(t_s, admitted, width=width, color=PALETTE[algorithm], label="admitted")
        top.bar(t_s, refused, width=width, bottom=admitted, color="#cccccc", label="refused")
        tallest = max(int((admitted + refused).max()), 1)
        # Bars closer than a label's width take turns: every other label a line higher.
        gap_s, last_t, raised = span / 1000 * 0.1, None, False
        for t, a, r in zip(t_s, admitted, refused, strict=True):
            raised = last_t is not None and t - last_t < gap_s and not raised
            lift = 0.45 * tallest if raised else 0
            top.text(t, a + r + lift, f"{a + r}", ha="center", va="bottom", fontsize=9)
            last_t = t
        top.set_ylim(0, 2.0 * tallest)
        top.set_title(LABELS[algorithm], fontsize=10)
        lo = max(int(frame["t_ms"].min()) - window_ms // 4, 0)
        hi = lo + span
        adm = frame.loc[frame["allowed"], "t_ms"].to_numpy(dtype="int64")
        grid = np.unique(
            np.concatenate([np.arange(lo, hi, max(span // 1200, 1)), adm, adm + window_ms])
        )
        grid = grid[(grid >= lo) & (grid <= hi)]
        curve = metrics.rolling_curve(frame, window_ms, grid)
        peak = peaks[algorithm] = int(metrics.max_in_window(frame, window_ms).iloc[0])
        bottom.step(grid / 1000, curve["in_window"], where="post", color=PALETTE[algorithm], lw=2)
        bottom.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit})")
        bottom.set_ylim(0, max(2.2 * limit, 1.2 * peak))
        how = (found_by or {}).get(algorithm)
        by = f"\nfound by: {how.replace('_', ' ')}" if how else ""
        bottom.text(
            0.02,
            0.95,
            f"most in any {window_ms / 1000:g} s: {peak} ({peak / limit:.2f}x){by}",
            transform=bottom.transAxes,
            fontsize=9,
            va="top",
        )
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.set_xlim(lo / 1000, hi / 1000)
            for seam in range(lo // window_ms + 1, hi // window_ms + 1):
                ax.axvline(seam * window_ms / 1000, color="#999999", lw=0.6, ls=":")
            ax.tick_params(labelsize=9)
    for extra in range(len(algorithms), rows * cols):
        axes[2 * (extra // cols), extra % cols].set_visible(False)
        axes[2 * (extra // cols) + 1, extra % cols].set_visible(False)
    for r in range(rows):
        axes[2 * r, 0].set_ylabel("requests at that ms", fontsize=9)
        axes[2 * r + 1, 0].set_ylabel(f"admitted in\ntrailing {window_ms / 1000:g} s", fontsize=9)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    more, more_labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(
        handles + more, labels + more_labels, fontsize=9, frameon=False, loc="lower center", ncol=3
    )
    fig.suptitle(
        _held_title(peaks, limit)
        + "\n(the worst schedule any adversary found, on the Lua scripts; "
        "panels span equal time; dotted: grid seams)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _held_title(peaks: Mapping[str, int], limit: int) -> str:
    """What the peaks show: which algorithms held the limit in every trailing window."""
    held = [LABELS[a] for a, peak in peaks.items() if peak <= limit]
    worst = max(peaks, key=lambda a: peaks[a])
    over = f"{LABELS[worst]} let {peaks[worst] / limit:.2f}x the limit through"
    if not held:
        return f"No algorithm held the limit in every trailing window; {over}"
    if len(held) == len(peaks):
        return "Every algorithm held the limit in every trailing window"
    names = held[0] if len(held) == 1 else ", ".join(held[:-1]) + " and " + held[-1]
    return f"Only {names} held the limit in every trailing window; {over}"
