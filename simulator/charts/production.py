"""Charts of the production studies: frames from :mod:`simulator.studies.production` in,
Figures out. One colour per algorithm from the registry; the naive and two-command ways, which
are not algorithms, take role colours. Sized for a notebook column (10 in wide)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator.charts import LABELS, PALETTE, ROLE_COLOURS, order, subplots

if TYPE_CHECKING:  # the study's setup, for its fields (charts never run a study)
    from simulator.studies.production.outage import OutageSetup

__all__ = [
    "policies_figure",
    "outage_figure",
    "split_figure",
    "caches_figure",
    "skew_figure",
    "native_figure",
    "refusals_figure",
]

REFUSED = "#cccccc"


def _per(frame: pd.DataFrame, by: str, cell_ms: int) -> pd.DataFrame:
    """Admitted and refused per ``cell_ms`` of time and ``by``."""
    f = frame.assign(t_s=(frame["t_ms"] // cell_ms) * cell_ms / 1000)
    g = f.groupby([by, "t_s"], sort=False)["allowed"]
    return pd.DataFrame({"admitted": g.sum(), "requests": g.size()}).reset_index()


def policies_figure(frame: pd.DataFrame, summary: pd.DataFrame, window_ms: int) -> Figure:
    """Admitted per short window, all or nothing above and the naive way below."""
    per = _per(frame, "way", window_ms)
    ways = [("all_or_nothing", "All or nothing (one script)", PALETTE["multi_policy"])]
    ways.append(
        ("naive", "Naive: each policy asked in turn, each consuming", PALETTE["increx_grid"])
    )
    fig, axes = subplots(2, 1, figsize=(10, 5.2), sharex=True, sharey=True)
    totals = summary.set_index("way")
    for ax, (way, title, colour) in zip(axes, ways, strict=True):
        p = per[per["way"] == way]
        width = window_ms / 1000 * 0.9
        ax.bar(p["t_s"], p["admitted"], width=width, align="edge", color=colour, label="admitted")
        ax.bar(
            p["t_s"], p["requests"] - p["admitted"], bottom=p["admitted"], width=width,
            align="edge", color=REFUSED, label="refused",
        )  # fmt: skip
        row = totals.loc[way]
        ax.set_title(
            f"{title}: {int(row['admitted'])} of {int(row['requests'])} admitted, "
            f"{int(row['refused_twice'])} refused twice",
            fontsize=10,
        )
        ax.set_ylabel(f"requests per\n{window_ms / 1000:g} s", fontsize=9)
        ax.legend(loc="upper right", fontsize=9)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Two limits on one request: the naive way spends the long budget on refusals")
    fig.tight_layout()
    return fig


def outage_figure(frames: pd.DataFrame, summary: pd.DataFrame, setup: OutageSetup) -> Figure:
    """Admitted per second, one row per mode (and the server always up), the down and slow
    spans shaded, the limit's rate as a line."""
    algorithm = str(frames["algorithm"].iloc[0])
    colour = PALETTE[algorithm]
    first = frames[frames["mode"] == frames["mode"].iloc[0]]
    runs = [("server always up", first.assign(allowed=first["baseline"]))]
    runs += [(m, f) for m, f in frames.groupby("mode", sort=False)]
    fig, axes = subplots(len(runs), 1, figsize=(10, 1.7 * len(runs) + 1), sharex=True, sharey=True)
    rate = setup.limit / (setup.window_ms / 1000)
    rows = summary.set_index("mode")
    for ax, (mode, f) in zip(axes, runs, strict=True):
        p = _per(f.assign(any=0), "any", 1000)
        ax.bar(p["t_s"], p["admitted"], width=0.9, align="edge", color=colour)
        ax.axvspan(
            setup.down_from_ms / 1000, setup.down_until_ms / 1000, color="#000000", alpha=0.08
        )
        ax.axvspan(
            setup.slow_from_ms / 1000, setup.slow_until_ms / 1000, color="#ff7f0e", alpha=0.08
        )
        ax.axhline(rate, color="#555555", linestyle="--", linewidth=1)
        r = rows.loc[mode]
        ax.set_title(
            f"{mode}: {int(r['beyond_limit'])} admitted beyond the limit, "
            f"{int(r['false_refusals'])} false refusals, most in a window {int(r['most_in_window'])}"
            f" (limit {setup.limit})",
            fontsize=9,
        )
        ax.set_ylabel("admitted\nper s", fontsize=9)
    axes[0].text(setup.down_from_ms / 1000, rate * 1.05, " server down", fontsize=9, va="bottom")
    axes[0].text(setup.slow_from_ms / 1000, rate * 1.05, " slow", fontsize=9, va="bottom")
    axes[-1].set_xlabel("time (s); dashed: the limit's rate")
    fig.suptitle(f"The store goes away ({LABELS[algorithm]}, {setup.servers} app servers)")
    fig.tight_layout()
    return fig


def split_figure(frame: pd.DataFrame) -> Figure:
    """Admitted per second: the script, and INCR + PEXPIRE as two commands whose PEXPIRE is lost."""
    per = _per(frame, "way", 1000)
    ways = [("one script", PALETTE["echomq"]), ("two commands", ROLE_COLOURS["split"])]
    fig, axes = subplots(2, 1, figsize=(10, 4), sharex=True, sharey=True)
    for ax, (way, colour) in zip(axes, ways, strict=True):
        p = per[per["way"] == way]
        ax.bar(p["t_s"], p["admitted"], width=0.9, align="edge", color=colour)
        ax.set_title(f"{way}: {int(p['admitted'].sum())} admitted", fontsize=10)
        ax.set_ylabel("admitted\nper s", fontsize=9)
        ax.axvline(frame.attrs.get("drop_at_ms", 0) / 1000, color="#555555", linestyle=":")
    axes[-1].set_xlabel(
        "time (s); dotted: from here the connection drops after an INCR that made the key"
    )
    pttl = frame.attrs.get("pttl_ms")
    fig.suptitle(
        f"INCR and PEXPIRE as two commands: the counter is left with PTTL {pttl} (never expires)"
    )
    fig.tight_layout()
    return fig


def caches_figure(deny: pd.DataFrame, lease: pd.DataFrame) -> Figure:
    """Left: the deny cache per algorithm (calls saved, decisions changed, in % of requests).
    Right: allowance leases, the most admitted in any window against ``limit + N(B - 1)``, and
    server calls per decision."""
    # 8.4 in, the notebook column's width: shown at its size, so 9-pt labels stay 12 px
    fig, (left, mid, right) = subplots(
        1, 3, figsize=(8.4, 4.6), gridspec_kw={"width_ratios": [1.6, 1, 1]}
    )
    names = [a for a in order() if a in set(deny["algorithm"])]
    d = deny.set_index("algorithm").loc[names]
    y = np.arange(len(names))
    saved = 100 * d["calls_saved"] / d["requests"]
    changed = 100 * d["decisions_changed"] / d["requests"]
    left.barh(
        y - 0.2,
        saved,
        height=0.4,
        color=[PALETTE[a] for a in names],
        label="calls saved (colour of the algorithm)",
    )
    left.barh(y + 0.2, changed, height=0.4, color="#555555", label="decisions changed")
    left.set_yticks(y, [LABELS[a] for a in names], fontsize=9)
    left.invert_yaxis()
    left.set_xlabel("% of requests")
    left.set_title("Deny cache: saved vs changed", fontsize=10)
    b = lease["lease"].to_numpy()
    mid.plot(b, lease["most_in_window"], "o-", color=PALETTE["sliding_log"], label="measured")
    mid.plot(b, lease["bound"], "--", color="#555555", label="limit + N(B-1)")
    mid.set_xscale("log")
    mid.set_xticks(b, [str(x) for x in b])
    mid.minorticks_off()
    mid.set_xlabel("lease B\n(requests per call)")
    mid.set_ylabel("most admitted in any window")
    mid.set_title("Lease: overshoot", fontsize=10)
    # one legend under the whole figure, clear of every x label: the panels are too narrow
    # to hold one without covering a line, and under the left one it sat on its label
    handles, labels = left.get_legend_handles_labels()
    more_handles, more_labels = mid.get_legend_handles_labels()
    fig.legend(
        handles + more_handles, labels + more_labels, fontsize=9, loc="lower center", ncol=2,
        frameon=False,
    )  # fmt: skip
    right.plot(b, lease["calls_per_decision"], "o-", color=PALETTE["sliding_log"])
    right.set_xscale("log")
    right.set_xticks(b, [str(x) for x in b])
    right.minorticks_off()
    right.set_ylim(0, 1.05)
    right.set_xlabel("lease B\n(requests per call)")
    right.set_ylabel("server calls per decision")
    right.set_title("Lease: calls", fontsize=10)
    fig.suptitle("Caches in front of the server: calls saved, and what they cost", fontsize=11)
    for ax in (left, mid, right):
        ax.tick_params(labelsize=9)
        ax.xaxis.label.set_size(9)
        ax.yaxis.label.set_size(9)
    fig.tight_layout(rect=(0, 0.6 / fig.get_figheight(), 1, 1))
    return fig


def skew_figure(summary: pd.DataFrame, limit: int) -> Figure:
    """Per algorithm (small multiples), the most admitted in any true window against the skew."""
    names = [a for a in order() if a in set(summary["algorithm"])]
    cols = 5
    rows = -(-len(names) // cols)
    fig, axes = subplots(rows, cols, figsize=(10, 2.6 * rows + 1), sharey=True, squeeze=False)
    skews = sorted(summary["skew_ms"].unique())
    x = np.arange(len(skews))
    for ax, name in zip(axes.flat, names, strict=False):
        s = summary[summary["algorithm"] == name].set_index("skew_ms").loc[skews]
        ax.plot(x, s["most_in_window"], "o-", color=PALETTE[name])
        ax.axhline(limit, color="#555555", linestyle="--", linewidth=1)
        ax.set_xticks(x, ["TIME" if k == 0 else f"{k / 1000:g}" for k in skews], fontsize=9)
        ax.set_title(textwrap.fill(LABELS[name], 24), fontsize=9)
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("most admitted\nin a window", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("skew S (s)", fontsize=9)
    fig.suptitle(f"Skewed app-server clocks: admitted in a true window (dashed: the limit {limit})")
    fig.tight_layout()
    return fig


def native_figure(frame: pd.DataFrame, ops: pd.DataFrame, window_ms: int = 1_000) -> Figure:
    """Left: server commands per decision, per algorithm. Right: the first window in which the
    clock-grid INCREX and the Lua fixed window differ, one user's requests each a mark (size by
    cost, hollow when refused)."""
    fig, (left, right) = subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 1.4]})
    names = [a for a in order() if a in set(ops["algorithm"])]
    o = ops.set_index("algorithm").loc[names]
    y = np.arange(len(names))
    left.barh(y, o["commands_per_decision"], color=[PALETTE[a] for a in names])
    for i, v in enumerate(o["commands_per_decision"]):
        left.text(v, i, f" {v:.2f}", va="center", fontsize=9)
    left.set_yticks(y, [LABELS[a] for a in names], fontsize=9)
    left.invert_yaxis()
    left.set_xlabel("server commands per decision")
    left.set_title("One command against a script's several", fontsize=10)
    grid = frame[frame["native_algorithm"] == "increx_grid"]
    differ = grid[grid["native"] != grid["lua"]]
    client = differ["client"].iloc[0] if len(differ) else grid["client"].iloc[0]
    t0 = int(differ["t_ms"].iloc[0]) // window_ms * window_ms if len(differ) else 0
    one = grid[(grid["client"] == client) & (grid["t_ms"] >= t0) & (grid["t_ms"] < t0 + window_ms)]
    for row, (column, name) in enumerate((("lua", "fixed_window"), ("native", "increx_grid"))):
        ok = one[column].to_numpy()
        ax_y = np.full(len(one), row)
        sizes = 20 * one["cost"].to_numpy()
        right.scatter(
            one["t_ms"][ok] / 1000,
            ax_y[ok],
            s=sizes[ok],
            color=PALETTE[name],
            label=f"{LABELS[name]}: admitted",
        )
        right.scatter(
            one["t_ms"][~ok] / 1000, ax_y[~ok], s=sizes[~ok], facecolors="none", edgecolors=REFUSED
        )
    for row, count in enumerate(("lua_count", "native_count")):
        last = one.iloc[-1] if len(one) else None
        if last is not None:
            right.annotate(
                f"count {int(last[count])}", (last["t_ms"] / 1000, row), xytext=(8, 0),
                textcoords="offset points", va="center", fontsize=9,
            )  # fmt: skip
    right.set_xlim(t0 / 1000, (t0 + window_ms * 1.2) / 1000)
    right.set_yticks([0, 1], ["Lua fixed window", "INCREX grid"], fontsize=9)
    right.set_ylim(-0.6, 1.6)
    right.set_xlabel(f"time (s), one grid window; user {client}\nsize = cost; hollow = refused")
    right.set_title("Where they differ:\nthe Lua window counts refused hits", fontsize=10)
    right.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=1)
    fig.suptitle("The server's own primitive: INCREX against the Lua windows")
    fig.tight_layout()
    return fig


def refusals_figure(frame: pd.DataFrame, window_ms: int) -> Figure:
    """Admitted per window, one row per rate multiple, both counters side by side."""
    multiples = list(dict.fromkeys(frame["multiple"]))
    names = [a for a in order() if a in set(frame["algorithm"])]
    fig, axes = subplots(
        len(multiples), 1, figsize=(10, 1.9 * len(multiples) + 1), sharex=True, sharey=True
    )
    axes = np.atleast_1d(axes)
    w_s = window_ms / 1000
    for ax, multiple in zip(axes, multiples, strict=True):
        for k, name in enumerate(names):
            f = frame[(frame["multiple"] == multiple) & (frame["algorithm"] == name)]
            p = _per(f, "algorithm", window_ms)
            ax.bar(
                p["t_s"] + k * w_s * 0.45,
                p["admitted"],
                width=w_s * 0.45,
                align="edge",
                color=PALETTE[name],
                label=LABELS[name],
            )
        ax.set_title(f"a user sending at {multiple:g} x the limit's rate", fontsize=10)
        ax.set_ylabel(f"admitted per\n{w_s:g} s", fontsize=9)
    axes[0].legend(fontsize=9, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Refusals that count: above the rate, the user is blocked for as long as it sends")
    fig.tight_layout()
    return fig
