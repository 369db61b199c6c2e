"""What each column of the printed scorecard means, in one place.

The terminal table is narrow, so its headings are short; the legend printed under it gives each
heading's full column name (the name in the ``--out`` CSV and in the frame) and what it counts.
The plan report and the docs print the same lines.
"""

from __future__ import annotations

__all__ = ["SHOWN", "legend_lines"]

#: (column, heading in the table, what it means), in the table's order.
SHOWN = (
    ("candidate", "candidate", "the configuration (the baseline first)"),
    ("admitted", "admitted", "requests it admits"),
    ("refused", "refused", "requests it refuses"),
    ("clients_refused", "clients ref", "clients it refuses at least once"),
    (
        "flips_to_refused",
        "→refused",
        "requests the baseline admitted and this one refuses (clients who would notice)",
    ),
    ("flips_to_admitted", "→admitted", "requests the baseline refused and this one admits"),
    ("clients_affected", "clients", "clients with at least one flip either way"),
    (
        "wrongly_admitted",
        "wrong adm",
        "admitted where the exact sliding log of its own limit and window refuses",
    ),
    (
        "wrongly_refused",
        "wrong ref",
        "refused where the exact sliding log of its own limit and window admits",
    ),
    (
        "most_in_window_ratio",
        "most/limit",
        "the most one client got admitted in any window of its length, over the limit",
    ),
    ("retry_after_p50_s", "RA p50 s", "Retry-After of the refusals, median, seconds"),
    ("retry_after_p99_s", "RA p99 s", "Retry-After of the refusals, 99th percentile, seconds"),
    (
        "bytes_per_active_client",
        "B/client",
        "bytes one client at its limit holds on the server (measured on Valkey)",
    ),
    ("peak_active_clients", "peak clients", "the most clients holding keys at once"),
)


def legend_lines() -> list[str]:
    """One line per heading after the first: ``heading  column: meaning``."""
    rows = SHOWN[1:]
    width = max(len(h) for _, h, _ in rows)
    return [f"  {h.ljust(width)}  {c}: {m}" for c, h, m in rows]
