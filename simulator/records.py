"""One row per decision, with the header values a server would send.

Each decision becomes one row of the decision log: who asked, when, at what cost (1 unless the
request weighs more), whether it was admitted, the count or estimate the algorithm compared, and the values of the ``RateLimit-Limit``,
``RateLimit-Remaining``, ``RateLimit-Reset`` and (on a refusal) ``Retry-After`` headers, kept in
milliseconds. :func:`to_frame` turns the rows into a pandas DataFrame with explicit dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

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
    "HEADER_STYLES",
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
    "cost": "int64",
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
        self.costs: list[int] | None = None  # kept once a request costs more than 1

    def append(self, client: str, t_ms: int, decision: Decision, cost: int = 1) -> None:
        if cost != 1 and self.costs is None:
            self.costs = [1] * len(self.rows)
        if self.costs is not None:
            self.costs.append(cost)
        self.rows.append((client, t_ms, decision))

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        return to_frame(self.rows, self.run_id, self.seed, self.algorithm, self.costs)


def to_frame(
    rows: Iterable[tuple[str, int, Decision]],
    run_id: str,
    seed: int,
    algorithm: str,
    costs: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Rows of ``(client, t_ms, Decision)`` as a decision-log frame; ``costs`` one per row
    (None: every request cost 1)."""
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
        "cost": np.ones(n, dtype="int64") if costs is None else np.array(costs, dtype="int64"),
    }
    columns = zip(*decisions, strict=True) if rows else [()] * len(Decision._fields)
    for name, values in zip(Decision._fields, columns, strict=True):
        data[name] = np.array(values, dtype="int64" if name == "retry_after_ms" else DTYPES[name])
    frame = pd.DataFrame(data, columns=list(COLUMNS))
    frame["retry_after_ms"] = frame["retry_after_ms"].where(~frame["allowed"], None)
    return frame.astype(_CONVERT)


#: Which header fields :func:`http_headers` gives: the IETF draft's, the legacy trio, or both.
HEADER_STYLES = ("draft", "legacy", "both")


def _seconds(ms: int) -> int:
    return math.ceil(ms / 1000)


def http_headers(
    row: Any,
    style: str = "both",
    window_ms: int | None = None,
    rate_limit: int | None = None,
    policy: str | None = None,
) -> dict[str, str]:
    """The response header fields for one decision (a frame row or a :class:`Decision`), in
    whole seconds rounded up, as HTTP wants.

    ``draft`` (draft-ietf-httpapi-ratelimit-headers-11): ``RateLimit-Policy: "p";q=Q;w=W`` and
    ``RateLimit: "p";r=R;t=T``, with the policy name ``p`` (default: the row's algorithm, else
    ``default``). ``legacy``: ``RateLimit-Limit``, ``-Remaining``, ``-Reset`` (draft -06 and
    before). Both add ``Retry-After`` on a refusal that may be retried (none for a request that
    costs more than the policy ever admits: Retry-After -1).

    ``q`` is the decision's limit; ``w`` (given ``window_ms``) is the window it applies to:
    ``window_ms`` itself for the windows, and for a bucket (whose limit is its capacity, the
    burst) the time it takes to refill from empty, ``window_ms x burst / rate_limit`` (pass the
    configured ``rate_limit`` for those; it defaults to ``q``). ``r`` is what remains after this
    request. ``t`` is when the quota comes back: the decision's reset, except on a refusal,
    where it is the Retry-After if that is sooner (so a client never reads a Retry-After earlier
    than ``t``). A key without expiry (``reset_ms`` -1) sends no ``t``.
    """
    if style not in HEADER_STYLES:
        raise ValueError(f"style: one of {', '.join(HEADER_STYLES)}, got {style!r}")
    allowed, retry = bool(row.allowed), row.retry_after_ms
    retry = -1 if allowed or retry is None or pd.isna(retry) else int(retry)
    reset, q, r = int(row.reset_ms), int(row.limit), int(row.remaining)
    headers: dict[str, str] = {}
    if style in ("draft", "both"):
        name = policy or str(getattr(row, "algorithm", "") or "default")
        quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
        fields = f"{quoted};q={q}"
        if window_ms is not None:
            fields += f";w={_seconds(window_ms * q // (rate_limit or q))}"
        headers["RateLimit-Policy"] = fields
        now = f"{quoted};r={r}"
        until = reset if allowed or retry < 0 else (retry if reset < 0 else min(reset, retry))
        if until >= 0:
            now += f";t={_seconds(until)}"
        headers["RateLimit"] = now
    if style in ("legacy", "both"):
        headers["RateLimit-Limit"] = str(q)
        headers["RateLimit-Remaining"] = str(r)
        if reset >= 0:
            headers["RateLimit-Reset"] = str(_seconds(reset))
    if not allowed and retry >= 0:
        headers["Retry-After"] = str(_seconds(retry))
    return headers
