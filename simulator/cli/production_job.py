"""The ``production`` chart job: the six production studies, their tables and charts.

Every table is written as ``data/production_<study>.csv`` beside its chart, so the figures that
``docs/production.md`` quotes are the ones this job printed (``python -m simulator charts
--only production``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["production"]


def production(out_dir: Path, full: bool, scheduler: Any = None) -> list[Path]:
    """Run the production studies at their default size (``full``: the same; they are small)."""
    from simulator.algorithms import ALGORITHMS
    from simulator.charts import production as charts
    from simulator.charts import save
    from simulator.studies import production as st

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []

    def table(frame: pd.DataFrame, name: str) -> None:
        path = out_dir / f"production_{name}.csv"
        frame.to_csv(path, index=False, float_format="%.4g")
        print(f"{name}:\n{frame.to_string(index=False)}", file=sys.stderr)
        paths.append(path)

    policy = st.PolicySetup()
    frame = st.policies_run(policy)
    summary = st.policies_summary(frame)
    table(summary, "policies")
    paths += save(
        charts.policies_figure(frame, summary, policy.window_ms), "production_policies", out_dir
    )

    outage = st.OutageSetup()
    frames = pd.concat([st.outage_run(outage, m) for m in st.MODES], ignore_index=True)
    summary = st.outage_summary(frames, outage)
    table(summary, "outage")
    paths += save(charts.outage_figure(frames, summary, outage), "production_outage", out_dir)
    split = st.split_commands_run()
    ways = (
        split.groupby("way", sort=False)["allowed"].agg(["size", "sum"])
        .rename(columns={"size": "requests", "sum": "admitted"}).reset_index()
    )  # fmt: skip
    # the counter's TTL at the end: only the two-command way leaves one without expiry
    ways["pttl_ms_at_end"] = [
        split.attrs["pttl_ms"] if w == "two commands" else "" for w in ways["way"]
    ]
    table(ways, "split_commands")
    paths += save(charts.split_figure(split), "production_split_commands", out_dir)

    caches = st.CacheSetup()
    deny = st.deny_cache_summary(
        pd.concat([st.deny_cache_run(caches, a) for a in ALGORITHMS], ignore_index=True)
    )
    table(deny, "deny_cache")
    leases = pd.concat([st.lease_run(caches, b) for b in st.lease_sizes(caches)], ignore_index=True)
    lease = st.lease_summary(leases, caches)
    table(lease, "lease")
    paths += save(charts.caches_figure(deny, lease), "production_caches", out_dir)

    skew = st.SkewSetup()
    summary = st.skew_summary(st.skew_study(skew, list(ALGORITHMS)), skew)
    table(summary, "skew")
    paths += save(charts.skew_figure(summary, skew.limit), "production_skew", out_dir)

    native = st.NativeSetup()
    frame = st.native_run(native)
    table(st.native_summary(frame), "native")
    ops = st.operations(native)
    table(ops, "operations")
    paths += save(charts.native_figure(frame, ops), "production_native", out_dir)

    refusal = st.RefusalSetup()
    frame = st.refusals_run(refusal)
    table(st.refusals_summary(frame, refusal), "refusals")
    paths += save(charts.refusals_figure(frame, refusal.window_ms), "production_refusals", out_dir)
    return paths
