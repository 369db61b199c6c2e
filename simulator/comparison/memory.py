"""Bytes a server holds per active client, from the memory study's measurements.

The memory study (:mod:`simulator.studies.memory`) weighed each algorithm's keys on a real Valkey
at 5 million users (``data/memory_per_user_*.csv``) and a sliding log filled to 8 ... 10,000
entries (``data/memory_encoding.csv``). A client that is active holds its keys in their steady
state; for the counters and buckets that costs the same whatever the limit, for the sliding log
one sorted-set entry per request in the window, so a client at its limit holds ``limit`` entries
(interpolated between the measured sizes, past 10,000 entries at the last measured bytes per
entry). Where the study has no figure (a user's script) the answer is NaN.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["bytes_per_active_client", "MEMORY_SOURCE"]

DATA = Path(__file__).resolve().parents[2] / "data"
MEMORY_SOURCE = "measured on Valkey 9.1.2 (data/memory_per_user_*.csv, data/memory_encoding.csv)"


@functools.cache
def _tables() -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    from simulator.studies.memory_tables import read_tables

    try:
        tables = read_tables(DATA)
    except (FileNotFoundError, OSError):
        return None, None
    return tables["per_user"], tables["encoding"]


def bytes_per_active_client(algorithm: str, limit: int) -> float:
    """What one client at its limit holds on the server, in bytes (``used_memory`` growth per
    user; the sliding log's by entries), or NaN where nothing was measured."""
    per_user, encoding = _tables()
    if per_user is None:
        return float("nan")
    if algorithm == "sliding_log" and encoding is not None:
        log = encoding[encoding["algorithm"] == "sliding_log"].sort_values("entries")
        entries = log["entries"].to_numpy(dtype=float)
        size = log["user_bytes"].to_numpy(dtype=float)
        if limit > entries[-1]:
            per_entry = float(log["bytes_per_entry"].iloc[-1])
            return float(size[-1] + (limit - entries[-1]) * per_entry)
        return float(np.interp(limit, entries, size))
    rows = per_user[(per_user["algorithm"] == algorithm) & (per_user["state"] == "steady")]
    rows = rows[rows["id_format"].isin(["", "now_ms-seq"])]
    if rows.empty:
        return float("nan")
    return float(rows.sort_values("limit")["bytes_per_user_used_memory"].iloc[0])
