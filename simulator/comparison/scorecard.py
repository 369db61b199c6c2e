"""The scorecard and the per-client table, made from the parts a run put together.

One row per configuration (:data:`SCORE_COLUMNS`), what it depends on beside the requests
(:func:`time_notes`), one row per client a candidate flipped (:data:`CLIENT_COLUMNS`), and the
timeline per bucket of the trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import Limiter
from simulator.comparison.memory import bytes_per_active_client
from simulator.comparison.score import Part
from simulator.comparison.spec import Candidate
from simulator.comparison.split import SplitTrace
from simulator.records import CLIENT_DTYPE

__all__ = [
    "SCORE_COLUMNS",
    "CLIENT_COLUMNS",
    "time_notes",
    "score_row",
    "client_table",
    "timeline_frame",
    "percentile_ms",
]

#: The scorecard's columns, in order.
SCORE_COLUMNS = (
    "candidate",
    "role",
    "algorithm",
    "limit",
    "window_s",
    "params",
    "requests",
    "admitted",
    "refused",
    "clients_refused",
    "flips_to_refused",
    "flips_to_admitted",
    "clients_affected",
    "wrongly_admitted",
    "wrongly_refused",
    "most_in_window",
    "most_in_window_ratio",
    "retry_after_p50_s",
    "retry_after_p99_s",
    "refused_never",
    "bytes_per_active_client",
    "bytes_per_client_on_server",
    "peak_active_clients",
    "peak_memory_bytes",
    "server_cpu_us_per_decision",
    "depends_on",
)
#: The per-client table's columns: each client a candidate decided differently from the baseline.
CLIENT_COLUMNS = (
    "candidate",
    "client",
    "requests",
    "flips",
    "flips_to_refused",
    "flips_to_admitted",
    "first_flip_t_ms",
    "last_flip_t_ms",
)


def time_notes(candidate: Candidate, resolution_ms: int) -> str:
    """What the candidate's decisions depend on beyond the requests themselves (empty: nothing).

    A trace of whole seconds has rounded every time down before any limiter saw it. Only the
    clock-aligned fixed window is unmoved by that, and only when its window is a whole number of
    the trace's steps: its seams are then whole steps, and no request is rounded across one.
    Every other limiter decides on the rounded times (which requests lie within a trailing
    window, the counter's interpolation, a bucket's refill), and they say so. A limiter whose
    window is the key's TTL depends on the server's clock.
    """
    notes = []
    aligned = candidate.algorithm == "fixed_window" and candidate.window_ms % resolution_ms == 0
    if resolution_ms > 1 and not aligned:
        step = f"{resolution_ms / 1000:g} s" if resolution_ms >= 1000 else f"{resolution_ms} ms"
        notes.append(f"trace resolution ({step})")
    if candidate.policy.algorithm.uses_server_time:
        notes.append("server clock (the window is the key's TTL)")
    return "; ".join(notes)


def _says_retry_after(algorithm: type[Limiter]) -> bool:
    """False for a user's script whose reply has no Retry-After (its -1 means "not said")."""
    declaration = getattr(algorithm, "declaration", None)
    return declaration is None or "retry_after" in declaration.reply


def score_row(c: Candidate, p: Part, split: SplitTrace, is_baseline: bool) -> dict[str, Any]:
    said = _says_retry_after(c.policy.algorithm)
    retry = {v: n for v, n in p.retry_after_ms.items() if v >= 0} if said else {}
    per_client = bytes_per_active_client(c.algorithm, c.limit)
    peak = int(p.active_t.max()) if p.active_t is not None and p.active_t.size else 0
    cpu = (
        float("nan")
        if p.server_cpu_s is None or not p.decided
        else p.server_cpu_s / p.decided * 1e6
    )
    return {
        "candidate": c.name,
        "role": "baseline" if is_baseline else "candidate",
        "algorithm": c.algorithm,
        "limit": c.limit,
        "window_s": c.window_s,
        "params": ",".join(f"{k}={v:g}" for k, v in c.params.items()),
        "requests": p.decided,
        "admitted": p.admitted,
        "refused": p.refused,
        "clients_refused": p.clients_refused,
        "flips_to_refused": p.flips_to_refused,
        "flips_to_admitted": p.flips_to_admitted,
        "clients_affected": len(p.clients),
        "wrongly_admitted": p.wrongly_admitted,
        "wrongly_refused": p.wrongly_refused,
        "most_in_window": p.most_in_window,
        "most_in_window_ratio": p.most_in_window / c.limit,
        "retry_after_p50_s": percentile_ms(retry, 0.5) / 1000,
        "retry_after_p99_s": percentile_ms(retry, 0.99) / 1000,
        "refused_never": int(p.retry_after_ms.get(-1, 0)) if said else 0,
        "bytes_per_active_client": per_client,
        "bytes_per_client_on_server": (
            p.server_bytes / p.server_clients if p.server_clients else float("nan")
        ),
        "peak_active_clients": peak,
        "peak_memory_bytes": per_client * peak,
        "server_cpu_us_per_decision": cpu,
        "depends_on": time_notes(c, split.resolution_ms),
    }


def client_table(parts: list[Part]) -> pd.DataFrame:
    """One row per client a candidate flipped, most flips first (ties: first flipped first)."""
    rows = [
        (i, p.candidate, client, r[0], r[1] + r[2], r[1], r[2], r[3], r[4])
        for i, p in enumerate(parts)
        for client, r in p.clients.items()
    ]
    rows.sort(key=lambda r: (r[0], -r[4], r[7], r[2]))
    columns = list(zip(*rows, strict=True)) if rows else [()] * 9
    data: dict[str, Any] = {"candidate": list(columns[1])}
    # Python strings: an id with bytes that are not UTF-8 keeps them (lone surrogates).
    data["client"] = pd.array(list(columns[2]), dtype=CLIENT_DTYPE)
    for name, values in zip(CLIENT_COLUMNS[2:], columns[3:], strict=True):
        data[name] = np.array(values, dtype=np.int64)
    return pd.DataFrame(data, columns=list(CLIENT_COLUMNS))


class Timeline(pd.DataFrame):
    """The timeline as a scorecard's ``attrs`` hold it: a frame whose deep copy is itself.

    pandas deep-copies a frame's ``attrs`` with every operation on it (a filter, an index set or
    reset); a comparison's timeline has a row per time bucket and configuration (600,000 for
    the sample log at 16 configurations), and copying it took a third of the comparison's time
    on the embedded Valkey. The scorecard's copies share it instead: it is read, not changed in
    place. Whatever is computed from it is a plain frame."""

    def __deepcopy__(self, memo: Any = None) -> Timeline:
        return self

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame


def held(frame: pd.DataFrame) -> Timeline:
    """``frame`` (its ``attrs`` kept) as a :class:`Timeline`."""
    out = Timeline(frame)
    out.attrs = dict(frame.attrs)
    return out


def timeline_frame(parts: list[Part], timeline: tuple[int, int, int]) -> pd.DataFrame:
    """Per time bucket and configuration: flips each way and the clients holding state (one
    block of rows per configuration, in ``parts``' order), as a :class:`Timeline`."""
    t0_ms, bucket_ms, buckets = timeline
    names = np.array([p.candidate for p in parts], dtype=object)
    ticks = t0_ms + bucket_ms * np.arange(buckets, dtype=np.int64)
    out = held(
        pd.DataFrame(
            {  # whole columns at once: a frame per part, concatenated, took 2 s for 600,000 rows
                "candidate": np.repeat(names, buckets),
                "t_ms": np.tile(ticks, len(parts)),
                "flips_to_refused": _joined(parts, "flips_to_refused_t", buckets),
                "flips_to_admitted": _joined(parts, "flips_to_admitted_t", buckets),
                "active_clients": _joined(parts, "active_t", buckets),
            }
        )
    )
    out.attrs["bucket_ms"] = bucket_ms
    return out


def _joined(parts: list[Part], field: str, n: int) -> np.ndarray:
    """Each part's ``field`` (``n`` buckets; zeros where the part has none), one after another."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([_or_zeros(getattr(p, field), n) for p in parts]).astype(
        np.int64, copy=False
    )


def _or_zeros(a: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64) if a is None else a


def percentile_ms(counts: Mapping[int, int], q: float) -> float:
    """The ``q`` quantile (0..1) of values given as counts: the smallest value with at least
    ``q`` of them at or below it (nearest rank); NaN when there are none."""
    total = sum(counts.values())
    if not total:
        return float("nan")
    # Exact: 0.99 x 100 in floats is 99.00000000000001, whose ceiling would be rank 100.
    rank = max(1, math.ceil(Fraction(str(q)) * total))
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return float(value)
    return float(max(counts))  # pragma: no cover - rank <= total
