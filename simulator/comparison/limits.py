"""Choosing the number: each configuration replayed at other limits, and each client's peak.

``--limits 5,10,20,50`` (or ``5..50:5``) asks, for the baseline and every candidate, what the
same algorithm, window and parameters would do at each of those limits: refused requests,
clients refused, flips against the baseline (which stays as it is) and wrongly refused against
the exact log of that limit. The variants are replayed with the real Lua in the same run as the
candidates (:func:`variants`), and their rows are taken out of the scorecard again
(:func:`limits_table`).

Beside them, each client's **peak**: the most requests it sent in any window of the
configuration's length - a trailing window ``(t - W, t]`` for every algorithm but the
clock-aligned fixed window, whose windows are ``[kW, (k+1)W)``. A client whose peak is above a
limit is refused at least once by the exact count at that limit; drawn over the distribution of
the peaks, each limit shows whom it would touch (:func:`client_peaks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.base import own_params
from simulator.checks import MAX_LIMIT, ConfigError
from simulator.comparison.scorecard import held
from simulator.comparison.spec import Candidate
from simulator.playback.traces import TraceFormat

__all__ = [
    "parse_limits",
    "variants",
    "limits_table",
    "without_variants",
    "client_peaks",
    "trace_peaks",
    "compare_limits",
    "LIMITS_COLUMNS",
]

#: The most limits one run takes (each is one more replay of every configuration).
MOST_LIMITS = 24
#: The limits table's columns.
LIMITS_COLUMNS = (
    "configuration", "role", "algorithm", "window_s", "limit", "refused", "clients_refused",
    "flips_to_refused", "flips_to_admitted", "flips", "wrongly_refused", "clients_over_limit",
)  # fmt: skip
_SEP = " @ limit "


def _whole(text: str, where: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LIMIT:
        raise ConfigError(
            f"--limits {where!r}: {text.strip()!r} is not a whole number from 1 to {MAX_LIMIT:,}"
        )
    return value


def parse_limits(text: str) -> tuple[int, ...]:
    """``5,10,20,50`` or ``5..50:5`` (items may be mixed), sorted, each once."""
    out: set[int] = set()
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        if ".." in item:
            lo, _, rest = item.partition("..")
            hi, _, step = rest.partition(":")
            a, b = _whole(lo, item), _whole(hi, item)
            s = _whole(step, item) if step.strip() else 1
            if b < a:
                raise ConfigError(f"--limits {item!r}: the range runs down ({a} to {b})")
            if (b - a) // s + 1 > MOST_LIMITS:
                raise ConfigError(f"--limits {item!r}: more than {MOST_LIMITS} limits")
            out.update(range(a, b + 1, s))
        else:
            out.add(_whole(item, item))
    if not out:
        raise ConfigError(f"--limits {text!r}: no limit given (e.g. 5,10,20 or 5..50:5)")
    if len(out) > MOST_LIMITS:
        raise ConfigError(f"--limits {text!r}: {len(out)} limits, at most {MOST_LIMITS}")
    return tuple(sorted(out))


def at_limit(c: Candidate, limit: int) -> Candidate:
    """``c`` at another limit: its own parameters kept where they were given, defaults (a
    bucket's burst is the limit) worked out again for the new limit."""
    declared = ALGORITHMS[c.algorithm].params_declared
    defaults = own_params(c.name, declared, {}, c.limit, c.window_ms)
    given = {k: v for k, v in c.params.items() if defaults.get(k) != v}
    params = own_params(c.name, declared, given, limit, c.window_ms)
    return Candidate(f"{c.name}{_SEP}{limit}", c.algorithm, limit, c.window_ms, params)


def variants(everyone: Sequence[Candidate], limits: Sequence[int]) -> list[Candidate]:
    """Every configuration at every limit that is not its own."""
    return [at_limit(c, n) for c in everyone for n in limits if n != c.limit]


def limits_table(
    scorecard: pd.DataFrame, everyone: Sequence[Candidate], limits: Sequence[int],
    peaks: pd.DataFrame | None = None,
) -> pd.DataFrame:  # fmt: skip
    """One row per configuration and limit, from a scorecard that holds the variants' rows."""
    rows = scorecard.set_index("candidate")
    out = []
    for c in everyone:
        for n in limits:
            r = rows.loc[c.name if n == c.limit else f"{c.name}{_SEP}{n}"]
            over = float("nan")
            if peaks is not None:
                mine = peaks[peaks["configuration"] == c.name]["peak"]
                over = int((mine > n).sum())
            out.append(
                {
                    "configuration": c.name,
                    "role": "baseline" if c is everyone[0] else "candidate",
                    "algorithm": c.algorithm,
                    "window_s": c.window_s,
                    "limit": n,
                    "refused": int(r["refused"]),
                    "clients_refused": int(r["clients_refused"]),
                    "flips_to_refused": int(r["flips_to_refused"]),
                    "flips_to_admitted": int(r["flips_to_admitted"]),
                    "flips": int(r["flips_to_refused"] + r["flips_to_admitted"]),
                    "wrongly_refused": int(r["wrongly_refused"]),
                    "clients_over_limit": over,
                }
            )
    return pd.DataFrame(out, columns=list(LIMITS_COLUMNS))


def without_variants(scorecard: pd.DataFrame, clients: pd.DataFrame) -> tuple:
    """The scorecard and the clients table with the variants' rows taken out."""
    keep = [_SEP not in str(c) for c in scorecard["candidate"]]
    main = scorecard[keep].reset_index(drop=True)
    main.attrs = dict(scorecard.attrs)
    named = set(main["candidate"])
    timeline = scorecard.attrs.get("timeline")
    if timeline is not None:
        kept = timeline[timeline["candidate"].isin(named)].reset_index(drop=True)
        kept.attrs = dict(timeline.attrs)
        main.attrs["timeline"] = held(kept)
    mine = clients[clients["candidate"].isin(named)].reset_index(drop=True)
    return main, mine


def _grid(c: Candidate) -> bool:
    return getattr(c.policy.algorithm, "counted_window", "trailing") == "grid"


def client_peaks(trace: pd.DataFrame, everyone: Sequence[Candidate]) -> pd.DataFrame:
    """Each configuration's clients with their peak (see the module's story), highest first."""
    t = trace["t_ms"].to_numpy(dtype=np.int64)
    cost = trace["cost"].to_numpy(dtype=np.int64) if "cost" in trace else np.ones_like(t)
    codes, names = pd.factorize(trace["client"], sort=False)
    order = np.lexsort((t, codes))
    codes, t, cost = codes[order], t[order], cost[order]
    done: dict[tuple[int, bool], np.ndarray] = {}
    frames = []
    for c in everyone:
        key = (c.window_ms, _grid(c))
        if key not in done:
            done[key] = _peaks(codes, t, cost, len(names), *key)
        peak = done[key]
        frame = pd.DataFrame(
            {
                "configuration": c.name,
                "algorithm": c.algorithm,
                "window_s": c.window_s,
                "client": np.asarray(names, dtype=object),
                "peak": peak,
            }
        )
        frames.append(frame.sort_values("peak", ascending=False, kind="stable"))
    return pd.concat(frames, ignore_index=True)


def _peaks(
    codes: np.ndarray, t: np.ndarray, cost: np.ndarray, n: int, window_ms: int, grid: bool
) -> np.ndarray:
    """The most cost each client sent in one window, over requests sorted by client and time."""
    peak = np.zeros(n, dtype=np.int64)
    if not t.size:
        return peak
    if grid:
        cell = t // window_ms
        start = np.concatenate(([True], (codes[1:] != codes[:-1]) | (cell[1:] != cell[:-1])))
        at = np.flatnonzero(start)
        sums = np.add.reduceat(cost, at)
        np.maximum.at(peak, codes[at], sums)
        return peak
    # Trailing (t - W, t]: per request, the cost of its client's requests within the window
    # before it, from a running sum and the first request inside the window.
    span = int(t.max() - t.min()) + window_ms + 1
    key = codes.astype(np.int64) * span + (t - t.min())
    first = np.searchsorted(key, key - window_ms, side="right")
    running = np.concatenate(([0], np.cumsum(cost)))
    held = running[1:] - running[first]
    np.maximum.at(peak, codes, held)
    return peak


def trace_peaks(
    trace: str | Path | pd.DataFrame, fmt: TraceFormat, everyone: Sequence[Candidate]
) -> pd.DataFrame:
    """:func:`client_peaks` of a trace file (read once more) or frame."""
    if not isinstance(trace, pd.DataFrame):
        from simulator.playback.traces import read_trace

        trace = read_trace(trace, fmt)
    return client_peaks(trace, everyone)


def compare_limits(
    trace: str | Path | pd.DataFrame,
    baseline: str | Candidate,
    candidates: Sequence[str | Candidate],
    limits: Sequence[int] | str,
    **options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`~simulator.comparison.compare` with every configuration at each of ``limits``
    too, in one run: the scorecard and clients table (as ``compare`` gives them), the limits
    table and the clients' peaks."""
    from simulator.comparison.run import compare
    from simulator.comparison.spec import resolve_candidates

    base, others = resolve_candidates(baseline, candidates)
    wanted = parse_limits(limits) if isinstance(limits, str) else tuple(sorted(set(limits)))
    everyone = [base, *others]
    card, clients = compare(trace, base, [*others, *variants(everyone, wanted)], **options)
    peaks = trace_peaks(trace, options.get("fmt", "csv"), everyone)
    scorecard, mine = without_variants(card, clients)
    return scorecard, mine, limits_table(card, everyone, wanted, peaks), peaks
