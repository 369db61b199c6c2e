"""How far the sliding window counter is from the exact answer, request by request and client by client.

The counter never stores request times: it keeps two grid-window counts and estimates the trailing
window as ``cur + prev * (W - elapsed) / W``, as if last window's requests had been spread evenly.
The exact sliding log stores every admitted time. Both get the *same offered traffic* - the same
arrival times per client - and each decides on its own, so their admitted histories may drift
apart once they disagree. Every figure below is defined on that setup:

Per decision
  ``wrongly admitted``   the counter admitted, the exact log (same arrivals) refused
  ``wrongly refused``    the counter refused, the exact log admitted
  ``exact``              requests the *counter itself* admitted in (t - W, t] before this one: the
                         true value of the quantity the estimate approximates
  ``error``              estimate - exact (requests; > 0 means the counter over-counts)
  ``over-admit``         the counter admitted although ``exact >= limit`` (its own window overflows)
  ``false refusal``      the counter refused although ``exact < limit`` (there was room)
Per client
  ``max_in_window``      most requests the counter admitted in any (t - W, t]
  ``over the limit``     max_in_window > limit (Cloudflare: "allowed despite being above")
  ``limited while under`` at least one false refusal (Cloudflare: a "false positive")
Summary (Cloudflare's figures, our definitions)
  share decided differently = (wrongly admitted + wrongly refused) / requests
  mean relative difference  = mean of |estimate - exact| / exact over decisions with exact >= 1
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from simulator.fastref import _sort, decide_any, decide_bulk
from simulator.metrics import trailing_admitted

__all__ = [
    "CLOUDFLARE",
    "exact_before",
    "compare",
    "per_client",
    "summarise",
    "run_study",
    "lua_agreement",
    "study",
    "lua_check",
    "load_sweep",
    "load_point",
]

#: Cloudflare's published figures (blog "How we built rate limiting capable of scaling to
#: millions of domains", 2017): 400M requests from 270,000 sources.
CLOUDFLARE: dict[str, float | str] = {
    "family": "Cloudflare (published)",
    "requests": 400_000_000,
    "clients": 270_000,
    "decided_differently_pct": 0.003,
    "mean_rel_diff_pct": 6.0,
    "clients_over_limit": 3,
    "clients_limited_while_under": 0,
}


def exact_before(
    codes: np.ndarray,
    t_ms: np.ndarray,
    admitted: np.ndarray,
    window_ms: int,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """For each request: admitted requests of its client in (t - W, t] decided before it.

    Vectorised (one sort, a cumulative sum and a binary search); pass ``order`` (a sort by client,
    time, arrival, e.g. :attr:`simulator.fastref.Bulk.order`) to skip the sort.
    """
    codes = np.asarray(codes, dtype="int64")
    t_ms = np.asarray(t_ms, dtype="int64")
    if order is None:
        order = _sort(codes, t_ms)
    return trailing_admitted(codes, t_ms, admitted, window_ms, order, including_self=False)


def compare(
    trace: pd.DataFrame,
    limit: int,
    window_ms: int,
    family: str = "",
    algorithm: str = "sliding_counter",
    params: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """The same offered traffic through the counter and the exact log: one row per request.

    Rows come sorted by (client, time, arrival); ``client`` is an integer code. ``algorithm``
    (with its own ``params``) stands in for the counter: any algorithm can be judged against
    the exact log this way (``estimate`` is then whatever it compares with the limit).
    """
    codes, _ = pd.factorize(trace["client"].astype(str), sort=False)
    codes = codes.astype("int64")
    t_ms = np.floor(trace["t_ms"].to_numpy(dtype="float64")).astype("int64")
    counter = decide_any(algorithm, codes, t_ms, limit, window_ms, params)
    log = decide_bulk("sliding_log", codes, t_ms, limit, window_ms, order=counter.order)
    exact = exact_before(codes, t_ms, counter.allowed, window_ms, order=counter.order)
    o = counter.order
    return pd.DataFrame(
        {
            "family": pd.Categorical([family] * len(o)),
            "client": codes[o].astype("int32"),
            "t_ms": t_ms[o],
            "counter_allowed": counter.allowed[o],
            "log_allowed": log.allowed[o],
            "estimate": counter.count[o],
            "exact": exact[o],
            "log_count": log.count[o].astype("int64"),
        }
    ).assign(error=lambda d: d["estimate"] - d["exact"])


def per_client(decisions: pd.DataFrame, limit: int) -> pd.DataFrame:
    """One row per client: requests, admissions, disagreements, most admitted in any window."""
    d = decisions
    flags = pd.DataFrame(
        {
            "client": d["client"],
            "requests": 1,
            "counter_admitted": d["counter_allowed"],
            "log_admitted": d["log_allowed"],
            "wrongly_admitted": d["counter_allowed"] & ~d["log_allowed"],
            "wrongly_refused": ~d["counter_allowed"] & d["log_allowed"],
            "false_refusals": ~d["counter_allowed"] & (d["exact"] < limit),
            "in_window": np.where(d["counter_allowed"], d["exact"] + 1, 0),
        }
    )
    g = flags.groupby("client", sort=True)
    out = g[
        [
            "requests",
            "counter_admitted",
            "log_admitted",
            "wrongly_admitted",
            "wrongly_refused",
            "false_refusals",
        ]
    ].sum()
    out["max_in_window"] = g["in_window"].max()
    out["overshoot"] = (out["max_in_window"] - limit).clip(lower=0)
    return out.reset_index()


def summarise(decisions: pd.DataFrame, clients: pd.DataFrame, limit: int, family: str) -> dict:
    """The Cloudflare-style figures for one family (definitions in the module docstring)."""
    d, n = decisions, len(decisions)
    ca, la = d["counter_allowed"].to_numpy(), d["log_allowed"].to_numpy()
    exact, err = d["exact"].to_numpy(), d["error"].to_numpy()
    has = exact >= 1
    near = exact >= limit / 2
    rel = np.abs(err[has]) / exact[has]
    over = clients[clients["max_in_window"] > limit]
    pct = 100.0 / max(n, 1)
    return {
        "family": family,
        "requests": n,
        "clients": len(clients),
        "counter_admitted_pct": ca.sum() * pct,
        "log_admitted_pct": la.sum() * pct,
        "decided_differently_pct": (ca != la).sum() * pct,
        "wrongly_admitted_pct": (ca & ~la).sum() * pct,
        "wrongly_refused_pct": (~ca & la).sum() * pct,
        "over_admits_pct": (ca & (exact >= limit)).sum() * pct,
        "false_refusals_pct": (~ca & (exact < limit)).sum() * pct,
        "mean_error": float(err.mean()) if n else 0.0,
        "mean_abs_error": float(np.abs(err).mean()) if n else 0.0,
        "p99_abs_error": float(np.quantile(np.abs(err), 0.99)) if n else 0.0,
        "mean_rel_diff_pct": 100 * float(rel.mean()) if len(rel) else 0.0,
        "mean_rel_diff_near_limit_pct": (
            100 * float((np.abs(err[near]) / exact[near]).mean()) if near.any() else np.nan
        ),
        "clients_over_limit": len(over),
        "clients_over_limit_pct": 100 * len(over) / max(len(clients), 1),
        "max_overshoot_pct": 100 * float(over["overshoot"].max()) / limit if len(over) else 0.0,
        "mean_overshoot_pct": 100 * float(over["overshoot"].mean()) / limit if len(over) else 0.0,
        "clients_limited_while_under": int((clients["false_refusals"] > 0).sum()),
        "clients_decided_differently": int(
            ((clients["wrongly_admitted"] + clients["wrongly_refused"]) > 0).sum()
        ),
    }


def run_study(
    traces: Iterable[tuple[str, pd.DataFrame, int, int]],
    on_family: Callable[[str, int], object] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Compare every ``(family, trace, limit, window_ms)``; returns decisions, clients, summary."""
    decisions, clients, rows = [], [], []
    for family, trace, limit, window_ms in traces:
        d = compare(trace, limit, window_ms, family)
        c = per_client(d, limit).assign(family=family)
        rows.append(summarise(d, c, limit, family) | {"limit": limit, "window_s": window_ms / 1000})
        decisions.append(d)
        clients.append(c)
        if on_family is not None:
            on_family(family, len(d))
    all_decisions = pd.concat(decisions, ignore_index=True)
    all_decisions["family"] = all_decisions["family"].astype("category")
    return all_decisions, pd.concat(clients, ignore_index=True), pd.DataFrame(rows)


def lua_agreement(
    trace: pd.DataFrame,
    limit: int,
    window_ms: int,
    min_decisions: int,
    algorithms: tuple[str, ...] | None = None,
    seed: int = 0,
    on_progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Replay whole clients (chosen at random until ``min_decisions``) through the Lua scripts on
    fakeredis and through :func:`simulator.fastref.decide_bulk`; count the disagreements."""
    from simulator.fastref import decide_trace
    from simulator.playback.run import replay

    sizes = trace.groupby(trace["client"].astype(str), sort=True).size()
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    picked = sizes.index[rng.permutation(len(sizes))]
    upto = int(np.searchsorted(np.cumsum(sizes[picked].to_numpy()), min_decisions)) + 1
    sample = trace[trace["client"].astype(str).isin(set(picked[:upto]))].reset_index(drop=True)
    rows = []
    if algorithms is None:  # every algorithm with a bulk kernel
        from simulator.algorithms import BULK

        algorithms = tuple(BULK)
    for algorithm in algorithms:
        lua = replay(sample, algorithm, limit, window_ms, on_progress=on_progress)
        fast = decide_trace(sample, algorithm, limit, window_ms)
        rows.append(
            {
                "algorithm": algorithm,
                "decisions": len(sample),
                "clients": int(sample["client"].nunique()),
                "refused": int((~lua["allowed"]).sum()),
                "allowed_mismatches": int((lua["allowed"] != fast["allowed"]).sum()),
                "count_mismatches": int((lua["count"] != fast["count"]).sum()),
            }
        )
    return pd.DataFrame(rows)


def study(
    size: str = "default", seed: int = 0, progress: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every traffic family of :func:`simulator.studies.families.families` at ``size``, compared."""
    from tqdm import tqdm

    from simulator.studies.families import families, offered

    fams = families(size, seed)
    with tqdm(
        total=len(fams), desc=f"accuracy {size}", unit="family", disable=not progress or None
    ) as bar:
        return run_study(
            ((f.name, offered(f), f.limit, f.window_ms) for f in fams),
            on_family=lambda name, n: (bar.set_postfix_str(f"{name}: {n:,}"), bar.update()),
        )


def lua_check(
    size: str = "default", min_decisions: int = 5_000, seed: int = 0, progress: bool = False
) -> pd.DataFrame:
    """:func:`lua_agreement` on every family, ``min_decisions`` spread evenly over them."""
    from tqdm import tqdm

    from simulator.studies.families import families, offered

    fams = families(size, seed)
    each = -(-min_decisions // len(fams))
    rows = []
    with tqdm(desc="lua vs bulk", unit="req", disable=not progress or None) as bar:
        for f in fams:
            rows.append(
                lua_agreement(
                    offered(f), f.limit, f.window_ms, each, seed=seed, on_progress=bar.update
                ).assign(family=f.name)
            )
    return pd.concat(rows, ignore_index=True)


def load_sweep(
    loads: Iterable[float], clients: int = 100, kind: str = "poisson", seed: int = 0
) -> pd.DataFrame:
    """The summary figures as the offered load (in units of the limit) grows, for one kind."""
    rows = [
        load_point(kind, float(load), clients, seed + i) | {"load": load, "kind": kind}
        for i, load in enumerate(loads)
    ]
    return pd.DataFrame(rows)


def load_point(
    kind: str,
    load: float,
    clients: int,
    seed: int,
    limit: int = 100,
    window_ms: int = 60_000,
    duration_ms: int = 600_000,
    algorithm: str = "sliding_counter",
    params: Mapping[str, float] | None = None,
) -> dict:
    """One point of :func:`load_sweep`: the summary figures of ``algorithm`` against the exact
    log for ``clients`` of one kind at one offered load (a sweep's task)."""
    from simulator.studies.families import Family, offered

    f = Family(f"{kind}@{load:g}", kind, clients, load, duration_ms, limit, window_ms, seed)
    d = compare(offered(f), f.limit, f.window_ms, f.name, algorithm, params)
    return summarise(d, per_client(d, f.limit), f.limit, f.name)
