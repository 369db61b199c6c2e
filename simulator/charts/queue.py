"""Charts of the EchoMQ queue budget: frames from :mod:`simulator.studies.queue_studies` in, Figures out.

Colours come from :data:`simulator.charts.PALETTE`: the server counter is EchoMQ's orange; the
in-process counters, the split commands and the two queue designs have colours of their own that
no algorithm uses.
The ``charts`` job that runs the studies and writes the files is :func:`simulator.cli.jobs.queue`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simulator.charts import PALETTE, subplots
from simulator.studies import queue_studies as qs
from simulator.studies.queue_budget import QueueRun

__all__ = [
    "LIMITER_COLOURS",
    "DESIGN_COLOURS",
    "basic_figure",
    "global_vs_local_figure",
    "fairness_figure",
    "crash_figure",
]

LIMITER_COLOURS = {
    "server": PALETTE["echomq"],
    "local": PALETTE["local"],
    "split": PALETTE["split"],
}
LIMITER_LABELS = {
    "server": "shared server counter (echomq_admit)",
    "local": "one in-process counter per worker",
    "split": "INCR, then PEXPIRE (two commands)",
}
DESIGN_COLOURS = {"shared": PALETTE["shared_queue"], "per_room": PALETTE["per_room"]}
DESIGN_LABELS = {"shared": "one shared queue + budget", "per_room": "one queue + budget per room"}


def _step(ax: Axes, part: pd.DataFrame, window_s: float, **style: object) -> None:
    """Admitted per window as a step line that covers the last window too."""
    x = np.append(part["start_s"].to_numpy(dtype="float64"), part["start_s"].max() + window_s)
    y = np.append(part["admitted"].to_numpy(dtype="float64"), part["admitted"].iloc[-1])
    ax.step(x, y, where="post", **style)  # type: ignore[arg-type]


def basic_figure(pad: QueueRun) -> Figure:
    """Admitted per window, latency of done jobs, and wasted dequeues with and without the pad."""
    s = pad.scenario
    exact = pad.dequeues[pad.dequeues["label"].str.endswith("defer_pad_ms=0")]
    per = qs.admitted_per_window(exact, s.window_ms, s.duration_ms)
    jobs = pad.jobs[pad.jobs["label"].str.endswith("defer_pad_ms=0")]
    waste = qs.dequeue_summary(pad.dequeues)
    fig, (a, b, c) = subplots(1, 3, figsize=(10, 4.4))
    colour = PALETTE["echomq"]
    a.bar(per["start_s"], per["admitted"], width=0.8 * s.window_ms / 1000, color=colour)
    a.axhline(s.max_per_window, color="black", ls="--", lw=1, label=f"max ({s.max_per_window})")
    a.set_xlabel("window start (s)")
    a.set_ylabel(f"jobs admitted per {s.window_ms / 1000:g} s window")
    a.set_title(f"never above max: most {int(per['admitted'].max())}", fontsize=10)
    a.set_ylim(0, s.max_per_window * 1.35)  # room above the bars for the legend
    a.legend(frameon=False, fontsize=9, loc="upper right")
    lat = jobs.loc[jobs["outcome"] == "done", "latency_ms"].to_numpy(dtype="float64") / 1000
    b.hist(lat, bins=30, color=colour)
    b.set_xlabel("latency, enqueue to done (s)")
    b.set_ylabel("jobs")
    dropped = int((jobs["outcome"] == "dropped").sum())
    b.set_title(
        f"p50 {np.percentile(lat, 50):.2f} s, p99 {np.percentile(lat, 99):.2f} s;\n"
        f"{dropped} of {len(jobs)} dropped as stale",
        fontsize=10,
    )
    names = ["exactly the PTTL", "PTTL + 1 ms"]
    values = waste["wasted_per_admit"].to_numpy(dtype="float64")
    bars = c.bar(names, values, color=[colour, PALETTE["variant"]])
    c.bar_label(bars, fmt="%.1f")
    c.set_ylabel("wasted dequeues per admitted job")
    c.set_title("a deferred job wakes\nwhile the key still exists", fontsize=10)
    fig.suptitle(
        f"Budget {s.max_per_window} per {s.window_ms / 1000:g} s at the dequeue point, "
        f"{s.workers} workers, demand {s.rooms[0].rate_per_s:g} jobs/s: the budget holds;\n"
        "the backlog pays in latency and in dequeues that put the job back"
    )
    fig.tight_layout()
    return fig


def global_vs_local_figure(result: QueueRun) -> Figure:
    """Admitted per window for each K, shared server counter vs one local counter per worker."""
    s = result.scenario
    per = qs.admitted_per_window(result.dequeues, s.window_ms, s.duration_ms)
    ks = sorted(per["workers"].unique())
    fig, axes = subplots(1, len(ks), figsize=(10, 3.8), sharey=True, squeeze=False)
    top = per["admitted"].max() * 1.15
    for ax, k in zip(axes[0], ks, strict=True):
        for limiter, lw in (("local", 2), ("server", 3)):
            part = per[(per["workers"] == k) & (per["limiter"] == limiter)]
            _step(
                ax,
                part,
                s.window_ms / 1000,
                color=LIMITER_COLOURS[limiter],
                lw=lw,
                zorder=3,
                label=LIMITER_LABELS[limiter],
            )
        ax.axhline(
            s.max_per_window,
            color="black",
            ls=":",
            lw=1,
            zorder=4,
            label=f"max ({s.max_per_window})",
        )
        local = per[(per["workers"] == k) & (per["limiter"] == "local")]["admitted"].max()
        ax.set_title(
            f"K = {k} workers:\nlocal lets {local / s.max_per_window:.1f}x through", fontsize=10
        )
        ax.set_xlabel("window start (s)")
        ax.set_ylim(0, top)
    axes[0, 0].set_ylabel(f"jobs admitted per {s.window_ms / 1000:g} s window")
    handles, labels = axes[0, 0].get_legend_handles_labels()  # below the panels: none is cut
    fig.legend(handles, labels, frameon=False, fontsize=9, loc="lower center", ncol=3)
    fig.suptitle(
        f"Budget {s.max_per_window} per {s.window_ms / 1000:g} s, demand "
        f"{s.rooms[0].rate_per_s:g} jobs/s: a counter in the server is one budget for every "
        "worker;\na counter in each worker is K budgets"
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def fairness_figure(table: pd.DataFrame) -> Figure:
    """p50 and p99 latency of quiet rooms and the flood room, in both designs.

    Latencies span three decades, so they are dots on a log axis with their values written
    beside them (bars on a log axis would start at an arbitrary baseline); the dropped share is
    a bar from zero."""
    # 8.4 in: shown at its own size in an 848-px notebook column, so 9 pt stays 12 px
    fig, axes = subplots(1, 3, figsize=(8.4, 4.4))
    kinds = ["quiet", "flood"]
    x = np.arange(len(kinds))
    width = 0.38
    for ax, column, label in (
        (axes[0], "p50_ms", "p50 latency (ms)"),
        (axes[1], "p99_ms", "p99 latency (ms)"),
        (axes[2], "dropped_share", "share dropped as stale"),
    ):
        for i, design in enumerate(("shared", "per_room")):
            values = [float(table.loc[(design, kind), column]) for kind in kinds]
            at = x + (i - 0.5) * width
            if column == "dropped_share":
                bars = ax.bar(
                    at, values, width, color=DESIGN_COLOURS[design], label=DESIGN_LABELS[design]
                )
                ax.bar_label(bars, fmt="%.2f", fontsize=9)
                continue
            ax.scatter(at, values, s=60, color=DESIGN_COLOURS[design], label=DESIGN_LABELS[design])
            # the two designs' dots of one kind sit side by side and may share a value (p99
            # near the staleness limit in both): the left one's label goes on its left
            side = -1 if i == 0 else 1
            for xi, v in zip(at, values, strict=True):
                ax.annotate(
                    f"{v:,.0f}",
                    (xi, v),
                    xytext=(7 * side, 0),
                    textcoords="offset points",
                    fontsize=9,
                    va="center",
                    ha="right" if side < 0 else "left",
                )
        ax.set_xticks(x, ["quiet\nrooms", "flood\nroom"])
        ax.set_xlim(-1.0, len(kinds) - 0.2)  # room for the left dots' labels inside the axes
        ax.set_ylabel(label)
        ax.set_xlabel("rooms")
        if column != "dropped_share":
            ax.set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=9, loc="lower center", ncol=2)
    fig.suptitle(
        "One room floods at 50x the others: behind one shared queue the quiet rooms\n"
        "wait seconds and are dropped; with a queue and a budget per room they are untouched",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def crash_figure(result: QueueRun) -> Figure:
    """Admitted per window when a worker dies inside the admit step, atomic vs split."""
    s = result.scenario
    per = qs.admitted_per_window(result.dequeues, s.window_ms, s.duration_ms)
    fig, ax = subplots(figsize=(10, 4))
    for limiter, ls in (("server", "-"), ("split", "--")):
        part = per[per["limiter"] == limiter]
        _step(
            ax,
            part,
            s.window_ms / 1000,
            ls=ls,
            lw=2,
            color=LIMITER_COLOURS[limiter],
            label=LIMITER_LABELS[limiter],
        )
    if s.crash_at_ms is not None:
        ax.axvline(s.crash_at_ms / 1000, color="black", lw=1, ls=":", label="a worker dies")
    ax.axhline(s.max_per_window, color="grey", lw=1, ls="--", label=f"max ({s.max_per_window})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"jobs admitted per {s.window_ms / 1000:g} s window")
    ax.set_ylim(0, s.max_per_window * 1.3)
    ax.legend(frameon=False, fontsize=9, loc="center right")
    ax.set_title(
        "A worker dies between INCR and PEXPIRE: the counter never expires and the budget never "
        "comes back.\nThe atomic script has no such moment.",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
