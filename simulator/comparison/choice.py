"""Picking a candidate from a scorecard, by a rule a reader can check.

A switch of limiter is a trade: protection (how far above the limit a client can get in one
window), the clients who would be refused where they were admitted before, and memory on the
server. :func:`pick` states one such rule: among the candidates that keep every client within
``most_ratio`` times the limit in any window, the one that refuses the fewest requests the
baseline admitted (then the fewest clients affected, then the least memory per client). When no
candidate keeps that protection, the one that comes closest.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["pick"]


def pick(scorecard: pd.DataFrame, most_ratio: float = 1.25) -> tuple[pd.Series, str]:
    """The candidate row the rule picks, and why, in one sentence."""
    rows = scorecard[scorecard["role"] == "candidate"]
    keep = rows[rows["most_in_window_ratio"] <= most_ratio]
    order = ["flips_to_refused", "clients_affected", "bytes_per_active_client"]
    if len(keep):
        best = keep.sort_values(order, kind="stable").iloc[0]
        others = len(rows) - len(keep)
        why = (
            f"it keeps every client within {most_ratio:g}x the limit in any window "
            f"({best['most_in_window_ratio']:.2f}x)"
            + (
                f", which {others} of the {len(rows)} candidates "
                f"{'does' if others == 1 else 'do'} not,"
                if others
                else ","
            )
            + f" and refuses {best['flips_to_refused']:,} requests the baseline admitted "
            f"({best['clients_affected']:,} clients affected either way)"
        )
    else:
        best = rows.sort_values(["most_in_window_ratio", *order], kind="stable").iloc[0]
        why = (
            f"no candidate keeps every client within {most_ratio:g}x the limit; it comes "
            f"closest ({best['most_in_window_ratio']:.2f}x)"
        )
    return best, why
