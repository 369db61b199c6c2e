"""Two limits on one request: all or nothing in one script, against each policy asked in turn.

A user sends above the short policy's rate for a while. The ``multi_policy`` script admits a
request only when both policies admit it and then counts it in both. The naive way asks each
policy's own limiter (a bounded counter on the clock grid, INCREX's window) one after another,
and each one counts the request whenever *it* admits, whatever the other says: the long
policy's budget goes to requests the short one refuses, so fewer get through, and a request
both refuse is refused twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import IncrexGrid, MultiPolicy
from simulator.studies.production.common import USER, Clock, arrivals, check_setup

__all__ = ["PolicySetup", "policies_run", "policies_summary"]


@dataclass(frozen=True)
class PolicySetup:
    """A short policy (``limit`` per ``window_ms``) inside a long one, and the user's rate."""

    limit: int = 10
    window_ms: int = 1_000
    long_limit: int = 300
    long_window_ms: int = 60_000
    rate_per_s: float = 20.0
    duration_ms: int = 60_000
    seed: int = 1

    def __post_init__(self) -> None:
        ints = {"limit": 1, "window_ms": 1, "long_limit": 1, "long_window_ms": 1}
        check_setup("PolicySetup", self, {**ints, "duration_ms": 1, "seed": 0}, ("rate_per_s",))


def policies_run(setup: PolicySetup = PolicySetup()) -> pd.DataFrame:
    """One row per request and way (``all_or_nothing``, ``naive``): ``t_ms``, ``allowed``, and
    for the naive way which policies refused (``short_refused``, ``long_refused``) and which
    counted a request that was refused all the same (``short_wasted``, ``long_wasted``)."""
    arr = arrivals(setup.rate_per_s, setup.duration_ms, 1, setup.seed)
    clock = Clock()
    backend = clock.backend()
    params = {"long_limit": setup.long_limit, "long_window_ms": setup.long_window_ms}
    atomic = MultiPolicy(backend, setup.limit, setup.window_ms, **params)
    short = IncrexGrid(backend, setup.limit, setup.window_ms)
    long = IncrexGrid(backend, setup.long_limit, setup.long_window_ms)
    rows = []
    for t in arr.t_ms.tolist():
        clock.t_ms = t
        d = atomic.decide(USER, t)
        rows.append(("all_or_nothing", t, d.allowed, False, False))
        a, b = short.decide(f"{USER}/short", t), long.decide(f"{USER}/long", t)
        rows.append(("naive", t, a.allowed and b.allowed, not a.allowed, not b.allowed))
    frame = pd.DataFrame(rows, columns=["way", "t_ms", "allowed", "short_refused", "long_refused"])
    frame["short_wasted"] = ~frame["short_refused"] & frame["long_refused"]
    frame["long_wasted"] = frame["short_refused"] & ~frame["long_refused"]
    return frame


def policies_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per way: requests, admitted, refused twice, and the budget each policy spent on requests
    that were refused (its ``wasted`` units)."""
    g = frame.groupby("way", sort=False)
    out = pd.DataFrame(
        {
            "requests": g.size(),
            "admitted": g["allowed"].sum(),
            "refused_twice": g.apply(
                lambda f: int((f["short_refused"] & f["long_refused"]).sum()), include_groups=False
            ),
            "short_wasted": g["short_wasted"].sum(),
            "long_wasted": g["long_wasted"].sum(),
        }
    )
    return out.astype("int64").reset_index()


def admitted_per_window(frame: pd.DataFrame, window_ms: int) -> pd.DataFrame:
    """Admitted per ``window_ms`` cell and way (for the chart)."""
    cell = (frame["t_ms"] // window_ms) * window_ms / 1000
    return (
        frame.assign(t_s=cell)
        .groupby(["way", "t_s"], sort=False)["allowed"]
        .sum()
        .astype(np.int64)
        .reset_index(name="admitted")
    )
