"""Charts of the accuracy study and the adversaries.

Figures take the frames made by :mod:`simulator.studies.accuracy` and
:mod:`simulator.studies.adversary` and lay them out; :func:`simulator.cli.jobs.accuracy` runs both
studies (reduced by default, full size with ``--full``) and writes the figures and tables.
"""

from __future__ import annotations

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
    ("mean_rel_diff_pct", "mean |estimate - exact| / exact (%)"),
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
    """Cloudflare's figures and ours, family by family, one panel per figure."""
    table = with_cloudflare(summary)
    fig, axes = subplots(1, len(_PANELS), figsize=(10, 0.5 * len(table) + 2.4), sharey=True)
    y = np.arange(len(table))[::-1]
    colours = [PALETTE["exact"]] + [PALETTE["sliding_counter"]] * (len(table) - 1)
    for ax, (column, title) in zip(axes, _PANELS, strict=True):
        values = table[column].astype(float).to_numpy()
        ax.barh(y, np.maximum(values, 1e-4), color=colours)
        ax.set_xscale("log")
        ax.set_xlim(1e-4, 300)
        for yi, v in zip(y, values, strict=True):
            ax.text(max(v, 1e-4) * 1.3, yi, f"{v:.3g}", va="center", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("% (log scale; 0 drawn at 1e-4)")
    axes[0].set_yticks(
        y, [f"{f}\n{int(n):,} req" for f, n in zip(table["family"], table["requests"], strict=True)]
    )
    fig.suptitle(
        "Sliding window counter vs the exact log: Cloudflare's mostly-quiet traffic hides the error; "
        "traffic that leans on the limit shows it",
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
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(
        "The estimate is mostly within a few requests; on/off bursts and heavy hitters have long tails",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def load_sweep_figure(sweep: pd.DataFrame) -> Figure:
    """Error figures as offered load grows, one line style per figure and kind."""
    fig, ax = subplots(figsize=(8, 4.6))
    styles = {"poisson": "-", "on_off": "--"}
    for kind, part in sweep.groupby("kind", sort=False):
        for column, marker, label in (
            ("decided_differently_pct", "o", "decided differently from the log"),
            ("over_admits_pct", "^", "admitted over the limit (own window)"),
            ("false_refusals_pct", "v", "refused under the limit (own window)"),
        ):
            ax.plot(
                part["load"],
                np.maximum(part[column], 1e-4),
                styles.get(str(kind), ":"),
                marker=marker,
                color=PALETTE["sliding_counter"],
                label=f"{kind}: {label}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 100)
    ax.axvline(1.0, color="black", lw=0.8, ls=":")
    ax.set_xlabel("offered load per client (x the limit)")
    ax.set_ylabel("% of requests (0 drawn at 1e-4)")
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(
        "Steady traffic under ~0.5x the limit never errs, bursts err sooner; at the limit and above, errors are common",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def schedule_figure(frames: dict[str, pd.DataFrame], limit: int, window_ms: int) -> Figure:
    """The winning schedule per algorithm (as replayed on the Lua path): requests and window count."""
    algorithms = [a for a in ALGORITHMS if a in frames]
    fig, axes = subplots(2, len(algorithms), figsize=(10, 6.6), squeeze=False)
    for col, algorithm in enumerate(algorithms):
        frame = frames[algorithm]
        top, bottom = axes[0, col], axes[1, col]
        per_ms = frame.groupby(["t_ms", "allowed"]).size().unstack(fill_value=0)
        t_s = per_ms.index.to_numpy() / 1000
        admitted = per_ms.get(True, pd.Series(0, index=per_ms.index)).to_numpy()
        refused = per_ms.get(False, pd.Series(0, index=per_ms.index)).to_numpy()
        width = window_ms / 1000 / 40
        top.bar(t_s, admitted, width=width, color=PALETTE[algorithm], label="admitted")
        top.bar(t_s, refused, width=width, bottom=admitted, color="#cccccc", label="refused")
        for t, a, r in zip(t_s, admitted, refused, strict=True):
            top.text(t, a + r, f"{a + r} @\n{t:.3f}s", ha="center", va="bottom", fontsize=7)
        top.set_ylim(0, 1.45 * max(int((admitted + refused).max()), 1))
        top.set_title(LABELS[algorithm], fontsize=10)
        top.set_xlabel("time (s)")
        lo = max(int(frame["t_ms"].min()) - window_ms // 4, 0)
        hi = int(frame["t_ms"].max()) + window_ms + window_ms // 4
        # the trailing count peaks at an admission and drops W later: sample there, not only on a grid
        adm = frame.loc[frame["allowed"], "t_ms"].to_numpy(dtype="int64")
        grid = np.unique(
            np.concatenate([np.arange(lo, hi, max(window_ms // 600, 1)), adm, adm + window_ms])
        )
        curve = metrics.rolling_curve(frame, window_ms, grid)
        peak = int(metrics.max_in_window(frame, window_ms).iloc[0])
        at = int(grid[int(np.argmax(curve["in_window"].to_numpy()))])
        bottom.step(grid / 1000, curve["in_window"], where="post", color=PALETTE[algorithm], lw=2)
        bottom.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit})")
        bottom.set_ylim(0, 2.2 * limit)
        bottom.set_title(
            f"most in any {window_ms / 1000:g} s: {peak} = {peak / limit:.2f}x\n"
            f"in ({(at - window_ms) / 1000:.3f} s, {at / 1000:.3f} s]",
            fontsize=9,
        )
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.set_xlim(grid[0] / 1000, grid[-1] / 1000)
            for seam in range(int(grid[0] // window_ms) + 1, int(grid[-1] // window_ms) + 1):
                ax.axvline(seam * window_ms / 1000, color="#999999", lw=0.6, ls=":")
    axes[0, 0].set_ylabel("requests sent at that ms")
    axes[1, 0].set_ylabel(f"admitted in trailing {window_ms / 1000:g} s")
    axes[0, 0].legend(fontsize=8, frameon=False, loc="upper left")
    axes[1, 0].legend(fontsize=8, frameon=False, loc="upper left")
    fig.suptitle(
        "Schedules found by search (replayed on the Lua scripts): only the exact log holds the limit "
        "in every trailing window; dotted lines are grid seams",
        fontsize=11,
    )
    fig.tight_layout()
    return fig
