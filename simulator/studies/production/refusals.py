"""Rejected hits that count: the sliding counter that counts refusals (Kong's) beside the one that
does not.

A user sends steadily at a multiple of the limit's rate. The sliding counter that counts only
admitted hits lets it through at about the rate: ``limit`` per window. The one that counts
refusals too feeds its own estimate with every refused request, so the estimate never falls
below the limit while the user keeps sending above the rate: after its first window it is
blocked for as long as it sends ("blocked forever"); a user below the rate sees no difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import SlidingCounter, SlidingCounterAll
from simulator.checks import ConfigError, check_number
from simulator.studies.production.common import MAX_REQUESTS, USER, Clock, check_setup, check_some

__all__ = ["RefusalSetup", "refusals_run", "refusals_summary", "PAIR", "RATE_MULTIPLES"]

#: The two counters compared.
PAIR = (SlidingCounter, SlidingCounterAll)
#: The user's rate as a multiple of the limit's (limit per window).
RATE_MULTIPLES = (0.9, 1.1, 2.0)


@dataclass(frozen=True)
class RefusalSetup:
    """``limit`` per ``window_ms``; a user sending evenly for ``duration_ms``."""

    limit: int = 100
    window_ms: int = 10_000
    duration_ms: int = 60_000

    def __post_init__(self) -> None:
        check_setup("RefusalSetup", self, {"limit": 1, "window_ms": 1, "duration_ms": 1}, ())


def refusals_run(setup: RefusalSetup, multiples: Sequence[float] = RATE_MULTIPLES) -> pd.DataFrame:
    """One row per request, algorithm and rate multiple (at least one): ``t_ms``, ``allowed``."""
    check_some("refusals_run", "multiples", multiples)
    for i, multiple in enumerate(multiples):
        check_number("refusals_run", f"multiples[{i}]", multiple, positive=True, hi=1000)
        n = setup.duration_ms * setup.limit * multiple / setup.window_ms
        if n > MAX_REQUESTS:
            raise ConfigError(
                f"RefusalSetup.duration_ms: {n:,.0f} requests at {multiple:g} x the rate, over "
                f"{MAX_REQUESTS:,}; shorten the run or lower the limit per window"
            )
    out = []
    for multiple in multiples:
        rate_per_ms = setup.limit * multiple / setup.window_ms
        n = int(setup.duration_ms * rate_per_ms)
        t_ms = np.floor(np.arange(n) / rate_per_ms).astype("int64").tolist()
        for cls in PAIR:
            clock = Clock()
            limiter = cls(clock.backend(), setup.limit, setup.window_ms)
            allowed = []
            for t in t_ms:
                clock.t_ms = t
                allowed.append(limiter.decide(USER, t).allowed)
            out.append(
                pd.DataFrame({"t_ms": t_ms, "allowed": allowed}).assign(
                    algorithm=cls.name, multiple=multiple
                )
            )
    return pd.concat(out, ignore_index=True)


def refusals_summary(frame: pd.DataFrame, setup: RefusalSetup) -> pd.DataFrame:
    """Per algorithm and rate multiple: requests, admitted, admitted after the first window,
    and the longest run of refusals in ms."""
    rows = []
    for (name, multiple), f in frame.groupby(["algorithm", "multiple"], sort=False):
        t, allowed = f["t_ms"].to_numpy(), f["allowed"].to_numpy()
        admitted_t = np.concatenate([[0], t[allowed], [setup.duration_ms]])
        rows.append(
            {
                "algorithm": name,
                "multiple": multiple,
                "requests": len(f),
                "admitted": int(allowed.sum()),
                "admitted_after_first_window": int(allowed[t >= setup.window_ms].sum()),
                "longest_refused_ms": int(np.diff(admitted_t).max()),
            }
        )
    return pd.DataFrame(rows)


def admitted_per_window(frame: pd.DataFrame, window_ms: int) -> pd.DataFrame:
    """Admitted per grid window, algorithm and multiple (for the chart)."""
    return (
        frame.assign(t_s=(frame["t_ms"] // window_ms) * window_ms / 1000)
        .groupby(["algorithm", "multiple", "t_s"], sort=False)["allowed"]
        .sum()
        .astype(np.int64)
        .reset_index(name="admitted")
    )
