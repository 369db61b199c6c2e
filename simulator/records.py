"""One row per decision, with the header values a server would send.

Each decision becomes one row of the decision log: who asked, when, whether it was admitted, the
count or estimate the algorithm compared with the limit, and the values of the ``RateLimit-Limit``,
``RateLimit-Remaining``, ``RateLimit-Reset`` and (on a refusal) ``Retry-After`` headers, kept in
milliseconds. :func:`to_frame` turns the rows into a pandas DataFrame with explicit dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "Decision",
    "COLUMNS",
    "DTYPES",
    "CLIENT_DTYPE",
    "DecisionLog",
    "to_frame",
    "http_headers",
]


class Decision(NamedTuple):
    """What a limiter answered for one request."""

    allowed: bool
    count: float  # type: ignore[assignment]  # the count or estimate compared with the limit (shadows tuple.count)
    limit: int
    remaining: int
    reset_ms: int  # -1 when the key has no expiry
    retry_after_ms: int  # 0 when allowed


DTYPES: dict[str, str] = {
    "run_id": "string",
    "seed": "int64",
    "algorithm": "string",
    "client": "string",
    "t_ms": "int64",
    "allowed": "bool",
    "count": "float64",
    "limit": "int64",
    "remaining": "int64",
    "reset_ms": "int64",
    "retry_after_ms": "Int64",  # <NA> when allowed: no Retry-After header is sent
}
COLUMNS = tuple(DTYPES)
#: Client ids are kept in Python strings: an id read from a file may hold undecodable bytes as
#: lone surrogates (``surrogateescape``), which Arrow-backed strings cannot hold.
CLIENT_DTYPE = pd.StringDtype("python")
#: What :func:`to_frame` converts to (the names in :data:`DTYPES`, the client column as above).
_CONVERT: dict[str, object] = {**DTYPES, "client": CLIENT_DTYPE}


class DecisionLog:
    """Collects rows column by column (cheap on the hot path) until :meth:`frame` is called."""

    def __init__(self, run_id: str, seed: int, algorithm: str) -> None:
        self.run_id, self.seed, self.algorithm = run_id, seed, algorithm
        self.rows: list[tuple[str, int, Decision]] = []

    def append(self, client: str, t_ms: int, decision: Decision) -> None:
        self.rows.append((client, t_ms, decision))

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        return to_frame(self.rows, self.run_id, self.seed, self.algorithm)


def to_frame(
    rows: Iterable[tuple[str, int, Decision]], run_id: str, seed: int, algorithm: str
) -> pd.DataFrame:
    """Rows of ``(client, t_ms, Decision)`` as a decision-log frame."""
    rows = list(rows)
    n = len(rows)
    # Transposed in C and converted with known dtypes: pandas' inference on lists costs more.
    clients, t_ms, decisions = zip(*rows, strict=True) if rows else ((), (), ())
    data: dict[str, object] = {
        "run_id": [run_id] * n,
        "seed": np.full(n, seed, dtype="int64"),
        "algorithm": [algorithm] * n,
        "client": pd.array(list(clients), dtype=CLIENT_DTYPE),
        "t_ms": np.array(t_ms, dtype="int64"),
    }
    columns = zip(*decisions, strict=True) if rows else [()] * len(Decision._fields)
    for name, values in zip(Decision._fields, columns, strict=True):
        data[name] = np.array(values, dtype="int64" if name == "retry_after_ms" else DTYPES[name])
    frame = pd.DataFrame(data, columns=list(COLUMNS))
    frame["retry_after_ms"] = frame["retry_after_ms"].where(~frame["allowed"], None)
    return frame.astype(_CONVERT)


def http_headers(row: pd.Series | Decision) -> dict[str, str]:
    """The response headers for one decision (seconds, rounded up, as HTTP wants)."""
    headers = {
        "RateLimit-Limit": str(int(row.limit)),
        "RateLimit-Remaining": str(int(row.remaining)),
    }
    if row.reset_ms >= 0:
        headers["RateLimit-Reset"] = str(math.ceil(row.reset_ms / 1000))
    if not row.allowed:
        headers["Retry-After"] = str(math.ceil(int(row.retry_after_ms) / 1000))
    return headers
