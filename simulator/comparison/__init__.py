"""Which limiter for my traffic? Candidate configurations scored on a real log with the real Lua.

A baseline (the configuration running now) and candidates, each ``ALGORITHM:key=value,...``
(:mod:`~simulator.comparison.spec`), are replayed over one trace, request for request: the
candidates' decisions are set beside the baseline's (flips: who would be refused that was
admitted, and the reverse) and beside the exact sliding log of their own limit and window
(:mod:`~simulator.comparison.score`). The trace is split by client into shards
(:mod:`~simulator.comparison.split`), so candidates x shards run as Dask tasks with the same
answer (:mod:`~simulator.comparison.run`). :mod:`~simulator.comparison.coverage` says how much
of its span the trace covers, :mod:`~simulator.comparison.choice` picks by a stated rule
(keeping the baseline is one of the options), :mod:`~simulator.comparison.limits` tries each
configuration at other limits beside the clients' peaks, and :mod:`~simulator.comparison.budget`
and :mod:`~simulator.comparison.report` make the plan a gate and a page.
:mod:`~simulator.comparison.synthetic` writes large access logs to show the scale.
"""

from simulator.comparison.run import CLIENT_COLUMNS, SCORE_COLUMNS, Listeners, compare
from simulator.comparison.spec import Candidate, load_candidates, parse_spec

__all__ = [
    "compare",
    "Listeners",
    "Candidate",
    "parse_spec",
    "load_candidates",
    "SCORE_COLUMNS",
    "CLIENT_COLUMNS",
]
