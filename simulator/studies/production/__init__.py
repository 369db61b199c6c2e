"""What production adds around the limiter script, each a study on the virtual clock with the
real scripts: several limits on one request (:mod:`.policies`), the store going away
(:mod:`.outage`), caches in front of it (:mod:`.caches`), clocks that disagree (:mod:`.skew`),
the server's own INCREX (:mod:`.native`), and refused hits that count (:mod:`.refusals`).

Each study takes a frozen setup (validated: a wrong field is one ConfigError naming it) and
returns frames; :mod:`simulator.charts.production` draws them, and ``python -m simulator charts
--only production`` writes both under ``data/``.
"""

from __future__ import annotations

from simulator.studies.production.caches import (
    CacheSetup,
    deny_cache_run,
    deny_cache_summary,
    lease_run,
    lease_sizes,
    lease_summary,
)
from simulator.studies.production.native import NativeSetup, native_run, native_summary, operations
from simulator.studies.production.outage import (
    MODES,
    OutageSetup,
    outage_run,
    outage_summary,
    split_commands_run,
)
from simulator.studies.production.policies import PolicySetup, policies_run, policies_summary
from simulator.studies.production.refusals import RefusalSetup, refusals_run, refusals_summary
from simulator.studies.production.skew import SKEWS_MS, SkewSetup, skew_study, skew_summary

__all__ = [
    "CacheSetup",
    "deny_cache_run",
    "deny_cache_summary",
    "lease_run",
    "lease_sizes",
    "lease_summary",
    "NativeSetup",
    "native_run",
    "native_summary",
    "operations",
    "MODES",
    "OutageSetup",
    "outage_run",
    "outage_summary",
    "split_commands_run",
    "PolicySetup",
    "policies_run",
    "policies_summary",
    "RefusalSetup",
    "refusals_run",
    "refusals_summary",
    "SKEWS_MS",
    "SkewSetup",
    "skew_study",
    "skew_summary",
]
