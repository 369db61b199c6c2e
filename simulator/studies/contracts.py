"""Every algorithm against the exact log, on the same offered traffic: different contracts, in numbers.

The sliding window counter *approximates* the exact log: it tries to enforce "at most L in any
trailing window W" and sometimes misjudges. The fixed windows and the buckets do not try: each
enforces a contract of its own. A clock-grid window promises L per grid cell (so up to 2L across a
seam); a first-hit window L per window that starts at a client's first request; a token bucket
(or GCRA, its twin) promises a long-run rate of L per W with ``burst`` saved up, so any span of W
may hold ``burst + L`` and a client that sends evenly at the rate is never refused. Fed the same
arrivals as the log, each decides on its own; per family and algorithm the table says

  ``admitted_pct``            requests it admitted (the log's own row is the reference)
  ``admitted_vs_log_pct``     its admissions over the log's (> 100: a looser contract)
  ``decided_differently_pct`` requests on which it and the log disagreed
  ``wrongly_admitted_pct``    it admitted, the log refused (and ``wrongly_refused_pct``: the reverse)
  ``clients_over_limit_pct``  clients it let through more than L in some (t - W, t]
  ``max_in_window_ratio``     the most it admitted to one client in any (t - W, t], over L
  ``sampled``                 decided on a sample of the family's requests (a user's script on
                              the Lua path): ``requests`` of ``offered_requests``

All decisions come from the bulk kernels, which agree with the scripts decision for decision
(:func:`simulator.studies.accuracy.lua_agreement` checks it on samples of real script runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS, BULK
from simulator.fastref import decide_bulk
from simulator.metrics import trailing_admitted

__all__ = ["EXACT", "compare_contracts", "contracts_study", "small_burst_variants"]

#: The exact answer every other algorithm is held against.
EXACT = "sliding_log"

#: (label, algorithm, params): an algorithm with some of its own parameters set.
Variant = tuple[str, str, Mapping[str, float]]


def small_burst_variants(limit: int, share: float = 0.1) -> list[Variant]:
    """Each algorithm that has a ``burst``, with a burst of ``share`` x the limit (at least 1),
    labelled ``<name> small burst`` whatever the limit (the ``params`` column says how small)."""
    burst = max(1, round(limit * share))
    return [
        (f"{name} small burst", name, {"burst": burst})
        for name, cls in ALGORITHMS.items()
        if any(p.name == "burst" for p in cls.params_declared) and name in BULK
    ]


#: Requests of each family a user's script decides on the Lua path (whole clients, the first
#: ones): every family of the ``ci`` and ``default`` sizes whole (at most about 90,000 requests,
#: seconds on the fake server's direct path); the ``full`` size's larger ones are sampled, and
#: their rows and bars say so.
LUA_SAMPLE = 100_000


@dataclass(frozen=True)
class _BesideLog:
    """One algorithm's admissions ``allowed`` beside the log's ``exact``, on the same requests
    (clients as ``codes``, times ``t_ms``; ``order`` sorts them by client, then time)."""

    codes: np.ndarray
    t_ms: np.ndarray
    allowed: np.ndarray
    exact: np.ndarray
    order: np.ndarray


def _row(
    family: str,
    variant: Variant,
    limit: int,
    window_ms: int,
    side: _BesideLog,
    decided_on: str,
    offered: int | None = None,
) -> dict:
    """The figures of one variant's admissions beside the log's (same requests)."""
    label, name, params = variant
    codes, t_ms, a, e = side.codes, side.t_ms, side.allowed, side.exact
    n = len(t_ms)
    clients = int(codes.max()) + 1 if n else 0
    inside = trailing_admitted(codes, t_ms, a, window_ms, side.order)
    per_client = np.zeros(max(clients, 1), dtype="int64")
    np.maximum.at(per_client, codes[a], inside[a])
    pct = 100.0 / max(n, 1)
    return {
        "family": family,
        "algorithm": name,
        "variant": label,
        "params": " ".join(f"{k}={v:g}" for k, v in params.items()),
        "limit": limit,
        "window_s": window_ms / 1000,
        "requests": n,
        "clients": clients,
        "decided_on": decided_on,
        "offered_requests": n if offered is None else offered,
        "sampled": offered is not None and n < offered,
        "admitted_pct": a.sum() * pct,
        "admitted_vs_log_pct": 100.0 * a.sum() / max(int(e.sum()), 1),
        "decided_differently_pct": (a != e).sum() * pct,
        "wrongly_admitted_pct": (a & ~e).sum() * pct,
        "wrongly_refused_pct": (~a & e).sum() * pct,
        "clients_over_limit_pct": 100.0 * (per_client > limit).sum() / max(clients, 1),
        "max_in_window_ratio": float(per_client.max()) / limit if clients else 0.0,
    }


def compare_contracts(
    trace: pd.DataFrame,
    limit: int,
    window_ms: int,
    family: str = "",
    variants: Sequence[Variant] = (),
) -> pd.DataFrame:
    """One row per algorithm (with its defaults, then each variant) on one offered trace.

    An algorithm without a bulk kernel (a user's script) is decided on the Lua path, on the
    first whole clients of the trace up to :data:`LUA_SAMPLE` requests, beside the log's
    decisions on those same requests; its ``decided_on`` says so."""
    from simulator.playback.run import replay

    codes = pd.factorize(trace["client"].astype(str), sort=False)[0].astype("int64")
    t_ms = np.floor(trace["t_ms"].to_numpy(dtype="float64")).astype("int64")
    log = decide_bulk(EXACT, codes, t_ms, limit, window_ms)
    runs: list[Variant] = [(name, name, {}) for name in ALGORITHMS if name in BULK]
    rows = []
    for label, name, params in [*runs, *variants]:
        bulk = decide_bulk(name, codes, t_ms, limit, window_ms, order=log.order, params=params)
        side = _BesideLog(codes, t_ms, bulk.allowed, log.allowed, log.order)
        rows.append(_row(family, (label, name, params), limit, window_ms, side, "bulk kernel"))
    for name in [n for n in ALGORITHMS if n not in BULK]:
        sizes = np.bincount(codes)
        upto = int(np.searchsorted(np.cumsum(sizes), LUA_SAMPLE)) + 1
        rows_in = np.flatnonzero(codes < upto)
        sample = trace.iloc[rows_in].reset_index(drop=True)
        lua = replay(sample, name, limit, window_ms)["allowed"].to_numpy()
        c, t = codes[rows_in], t_ms[rows_in]
        exact = decide_bulk(EXACT, c, t, limit, window_ms)
        side = _BesideLog(c, t, lua, exact.allowed, exact.order)
        decided_on = f"lua, {len(rows_in):,} of {len(t_ms):,} requests"
        rows.append(_row(family, (name, name, {}), limit, window_ms, side, decided_on, len(t_ms)))
    return pd.DataFrame(rows)


def contracts_study(
    size: str = "default",
    seed: int = 0,
    progress: bool = False,
    on_family: Callable[[str], object] | None = None,
    families_: Iterable | None = None,
) -> pd.DataFrame:
    """:func:`compare_contracts` on every traffic family at ``size``, each algorithm with its
    defaults and, for the buckets, with a burst of a tenth of the limit."""
    from tqdm import tqdm

    from simulator.studies.families import families, offered

    fams = list(families_ if families_ is not None else families(size, seed))
    parts = []
    for f in tqdm(fams, desc=f"contracts {size}", unit="family", disable=not progress or None):
        parts.append(
            compare_contracts(
                offered(f), f.limit, f.window_ms, f.name, small_burst_variants(f.limit)
            )
        )
        if on_family is not None:
            on_family(f.name)
    return pd.concat(parts, ignore_index=True)
