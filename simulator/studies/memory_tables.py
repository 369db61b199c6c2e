"""The memory study's tables read back: what a run wrote, and the whiteboard sum beside it.

:func:`read_tables` reads the tables ``python -m simulator memory`` wrote (no server needed, so
the charts and the notebook work from the committed ones); :func:`whiteboard` is the arithmetic
a candidate does at the whiteboard, and :func:`compare` puts it beside the measured figures.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.studies.memory import ID_FORMATS, TARGET_USERS

__all__ = ["whiteboard", "read_tables", "compare"]


def whiteboard(limit: int = 100, users: int = TARGET_USERS, key_bytes: int = 30) -> pd.DataFrame:
    """The arithmetic a candidate does: payload bytes only, no per-key or per-entry overhead.

    Each algorithm's sum is in its record (``memory.whiteboard``): a counter is a key name and an
    8-byte integer, the log holds ``limit`` entries of an 8-byte score and a ~16-byte request id.
    The gap between these and the measured figures is the server's overhead.
    """
    per_user = {
        name: cls.memory.whiteboard(limit, key_bytes)
        for name, cls in ALGORITHMS.items()
        if cls.memory is not None
    }
    frame = pd.DataFrame(
        {"algorithm": list(per_user), "whiteboard_bytes_per_user": list(per_user.values())}
    )
    frame["whiteboard_total_bytes"] = frame["whiteboard_bytes_per_user"] * users
    return frame


def read_tables(data_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables a ``memory`` run wrote: the per-user table with the most users measured, its
    ``used_memory`` samples, the big-key study and the encoding sweep. Needs no server."""
    data = Path(data_dir)
    files = sorted(data.glob("memory_per_user_*.csv"))
    if not files:
        raise FileNotFoundError(
            f"no memory_per_user_*.csv in {data}: run python -m simulator memory"
        )
    tables = {f: pd.read_csv(f, keep_default_na=False, na_values=[""]) for f in files}
    best = max(tables, key=lambda f: int(tables[f]["users_measured"].max()))
    per_user = tables[best].fillna({"id_format": ""})
    growth = data / best.name.replace("memory_per_user_", "memory_growth_")
    return {
        "per_user": per_user,
        "growth": pd.read_csv(growth).fillna({"id_format": ""}),
        "bigkey": pd.read_csv(data / "memory_bigkey.csv"),
        "encoding": pd.read_csv(data / "memory_encoding.csv"),
    }


def compare(per_user: pd.DataFrame, limit: int = 100) -> pd.DataFrame:
    """Whiteboard beside measurement, one row per algorithm, steady state and worst moment."""
    rows = per_user[
        (per_user["limit"] == limit) & (per_user["id_format"].isin(["", ID_FORMATS[0]]))
    ]
    steady = rows[rows["state"] == "steady"].set_index("algorithm")
    worst = rows.groupby("algorithm")["bytes_per_user_used_memory"].max()
    board = whiteboard(limit).set_index("algorithm")
    out = pd.DataFrame(
        {
            "whiteboard_bytes_per_user": board["whiteboard_bytes_per_user"],
            "memory_usage_bytes_per_user": steady["memory_usage_bytes_per_user"],
            "bytes_per_user_used_memory": steady["bytes_per_user_used_memory"],
            "worst_moment_bytes_per_user": worst,
            "encoding": steady["encoding"],
            "whiteboard_total_gb": board["whiteboard_total_bytes"] / 1e9,
            "total_at_5m_gb": steady["total_at_5m_bytes"] / 1e9,
            "worst_total_at_5m_gb": rows.groupby("algorithm")["total_at_5m_bytes"].max() / 1e9,
            "total_at_5m_source": steady["total_at_5m_source"],
            "users_measured": steady["users_measured"],
        }
    ).reindex(list(board.index))
    out["measured_over_whiteboard"] = (
        out["bytes_per_user_used_memory"] / out["whiteboard_bytes_per_user"]
    ).round(2)
    return out
