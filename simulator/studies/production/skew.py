"""Skewed clocks: app servers whose clocks disagree each pass their own ``now_ms``.

``N`` app servers have clock offsets spread evenly over ``[-S, +S]`` ms (set exactly: the virtual
clock is the true time, and each app server adds its own offset to it before calling a script).
The scripts that take time from their arguments see time jump back and forth as the requests
move between app servers; the server's own clock (its key expiry) stays true. Offset 0 for every
app server is what the same scripts would decide reading the server's ``TIME``. Measured per
algorithm: admitted beyond the limit (admitted while ``limit`` were already admitted in the true
trailing window) and the most admitted in any true window, for each ``S``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import Limiter
from simulator.checks import ConfigError
from simulator.policy import lookup
from simulator.studies.production.common import (
    USER,
    Clock,
    arrivals,
    check_setup,
    check_some,
    max_in_window,
)
from simulator.studies.production.outage import judged

__all__ = ["SkewSetup", "offsets", "skew_run", "skew_summary", "skew_study", "SKEWS_MS"]

#: The skews a study runs, in ms: none (the server's TIME), then up to 5 s.
SKEWS_MS = (0, 100, 1_000, 5_000)


@dataclass(frozen=True)
class SkewSetup:
    """One user's requests at ``rate_per_s`` over ``servers`` app servers."""

    limit: int = 100
    window_ms: int = 10_000
    servers: int = 4
    rate_per_s: float = 20.0
    duration_ms: int = 60_000
    seed: int = 1

    def __post_init__(self) -> None:
        ints = {"limit": 1, "window_ms": 1, "servers": 1, "duration_ms": 1, "seed": 0}
        check_setup("SkewSetup", self, ints, ("rate_per_s",))


def offsets(servers: int, skew_ms: int) -> np.ndarray:
    """Each app server's clock offset in ms: evenly from ``-skew_ms`` to ``+skew_ms``."""
    if servers == 1:
        return np.zeros(1, dtype="int64")
    return np.round(np.linspace(-skew_ms, skew_ms, servers)).astype("int64")


def skew_run(setup: SkewSetup, algorithm: str | type[Limiter], skew_ms: int) -> pd.DataFrame:
    """One row per request: true ``t_ms``, the app server and the ``now_ms`` it sent, and
    ``allowed``. Times before 0 are not sent: the run starts ``skew_ms`` after the epoch."""
    cls = lookup(algorithm)
    if not 0 <= skew_ms <= 3_600_000:
        raise ConfigError(f"skew_ms: must be from 0 to 3,600,000 ms, got {skew_ms}")
    arr = arrivals(setup.rate_per_s, setup.duration_ms, setup.servers, setup.seed)
    start = 10 * max(skew_ms, setup.window_ms)  # every app server's clock past the epoch
    offset = offsets(setup.servers, skew_ms)
    clock = Clock()
    limiter = cls(clock.backend(), setup.limit, setup.window_ms)
    rows = []
    for t, s in zip(arr.t_ms.tolist(), arr.server.tolist(), strict=True):
        clock.t_ms = start + t  # the server's clock is the true one
        sent = start + t + int(offset[s])
        rows.append((t, s, sent - start, limiter.decide(USER, sent).allowed))
    frame = pd.DataFrame(rows, columns=["t_ms", "server", "sent_ms", "allowed"])
    return frame.assign(algorithm=cls.name, skew_ms=skew_ms)


def skew_summary(frames: pd.DataFrame, setup: SkewSetup) -> pd.DataFrame:
    """Per algorithm and skew: admitted, admitted beyond the limit, the most in any true window."""
    rows = []
    for (algorithm, skew), f in frames.groupby(["algorithm", "skew_ms"], sort=False):
        t_ms, allowed = f["t_ms"].to_numpy(), f["allowed"].to_numpy()
        j = judged(t_ms, allowed, setup.limit, setup.window_ms)
        rows.append(
            {
                "algorithm": algorithm,
                "skew_ms": int(skew),
                "admitted": int(allowed.sum()),
                "beyond_limit": int(j["beyond"].sum()),
                "most_in_window": max_in_window(t_ms[allowed], setup.window_ms),
            }
        )
    return pd.DataFrame(rows)


def skew_study(
    setup: SkewSetup,
    algorithms: Sequence[str | type[Limiter]],
    skews_ms: Sequence[int] = SKEWS_MS,
) -> pd.DataFrame:
    """Every algorithm at every skew, one frame (at least one of each)."""
    check_some("skew_study", "algorithms", algorithms)
    check_some("skew_study", "skews_ms", skews_ms)
    algorithms = [lookup(a, owner="skew_study.algorithms") for a in algorithms]
    return pd.concat(
        [skew_run(setup, a, s) for a in algorithms for s in skews_ms], ignore_index=True
    )
