"""Picking a configuration from a scorecard, by a rule a reader can check.

A switch of limiter is a trade: protection (how far above the limit a client can get in one
window), the clients who would be refused where they were admitted before, and memory on the
server. Keeping what runs now is one of the options, not a fallback: a change that decides
every request as the baseline does and holds more memory per client buys nothing, and the rule
says so. :func:`pick` applies :func:`rule`, the one sentence the command, the notebook, the plan
report and the docs all print.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["pick", "rule", "verdict", "MOST_RATIO"]

#: The protection asked for by default: no client above 1.25x the limit in any window.
MOST_RATIO = 1.25
_ORDER = ["flips_to_refused", "clients_affected", "bytes_per_active_client"]


def rule(most_ratio: float = MOST_RATIO) -> str:
    """The rule, in one sentence."""
    return (
        f"Of keeping the baseline and each candidate, those that hold every client within "
        f"{most_ratio:g}x the limit in any window qualify (if none does, the closest), and of "
        "them the one that refuses the fewest requests the baseline admitted wins, then the "
        "fewest clients affected, then the least memory per active client, with keeping the "
        "baseline winning every tie."
    )


def pick(scorecard: pd.DataFrame, most_ratio: float = MOST_RATIO) -> tuple[pd.Series, str]:
    """The row :func:`rule` picks (the baseline's row when it is kept), and why, in one
    sentence."""
    rows = scorecard[scorecard["role"].isin(["baseline", "candidate"])]
    rows = rows.iloc[(rows["role"] != "baseline").to_numpy().argsort(kind="stable")]
    keep = rows[rows["most_in_window_ratio"] <= most_ratio]
    others = len(rows) - len(keep)
    if len(keep):
        best = keep.sort_values(_ORDER, kind="stable").iloc[0]
        held = (
            f"it holds every client within {most_ratio:g}x the limit in any window "
            f"({best['most_in_window_ratio']:.2f}x)"
            + (
                f", which {others} of the {len(rows)} options "
                f"{'does' if others == 1 else 'do'} not,"
                if others
                else ","
            )
        )
    else:
        best = rows.sort_values(["most_in_window_ratio", *_ORDER], kind="stable").iloc[0]
        held = (
            f"no option holds every client within {most_ratio:g}x the limit; it comes "
            f"closest ({best['most_in_window_ratio']:.2f}x)"
        )
    if best["role"] == "baseline":
        return best, f"{held} and no candidate that does refuses fewer or costs less"
    return best, (
        f"{held} and refuses {best['flips_to_refused']:,} requests the baseline admitted "
        f"({best['clients_affected']:,} clients affected either way)"
    )


def verdict(scorecard: pd.DataFrame, most_ratio: float = MOST_RATIO) -> str:
    """The pick as one line: ``Pick: keep the baseline X`` or ``Pick: switch to Y``, and why."""
    best, why = pick(scorecard, most_ratio)
    if best["role"] == "baseline":
        return f"Pick: keep the baseline {best['candidate']}: {why}."
    base = scorecard[scorecard["role"] == "baseline"].iloc[0]
    return (
        f"Pick: switch to {best['candidate']}: {why}; it refuses {best['refused']:,} requests "
        f"in all (the baseline {base['refused']:,}) and holds "
        f"{best['bytes_per_active_client']:,.0f} bytes per active client "
        f"(the baseline {base['bytes_per_active_client']:,.0f})."
    )
