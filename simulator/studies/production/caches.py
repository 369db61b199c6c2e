"""Caches in front of the server: a local deny cache, and an allowance taken B at a time.

**Deny cache** (Cloudflare's mitigation timeout, Upstash's ephemeral cache): an app server that
was told "refused, retry after R ms" refuses that user locally until then, without asking. Every
request it answers itself is a server call saved; a decision it changes is one where the server,
asked, would have said otherwise. The server's answer differs only where what it never saw
mattered: an algorithm that counts refused hits (the Lua fixed window, Kong's sliding counter)
never hears of the cached refusals, so it lets more through afterwards.

**Allowance lease**: an app server takes ``B`` of the limit in one call (a request of cost
``B``) and admits locally until they are used. Calls fall by about ``B``; but tokens taken in
one window are spent in the next, so in any window up to ``limit + N x (B - 1)`` get through
with ``N`` app servers, each holding at most ``B - 1`` unspent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from simulator.algorithms import Limiter
from simulator.checks import ConfigError
from simulator.policy import lookup
from simulator.studies.production.common import USER, Clock, arrivals, check_setup, max_in_window

__all__ = [
    "CacheSetup",
    "deny_cache_run",
    "deny_cache_summary",
    "lease_run",
    "lease_summary",
    "lease_sizes",
]


@dataclass(frozen=True)
class CacheSetup:
    """One user's requests at ``rate_per_s`` over ``servers`` app servers."""

    limit: int = 100
    window_ms: int = 10_000
    servers: int = 4
    rate_per_s: float = 30.0
    duration_ms: int = 60_000
    seed: int = 1

    def __post_init__(self) -> None:
        ints = {"limit": 1, "window_ms": 1, "servers": 1, "duration_ms": 1, "seed": 0}
        check_setup("CacheSetup", self, ints, ("rate_per_s",))


def deny_cache_run(setup: CacheSetup, algorithm: str | type[Limiter]) -> pd.DataFrame:
    """One row per request: ``allowed`` with each app server's deny cache, ``called`` (the
    server was asked), and ``uncached`` (the decision without the cache, on a server of its
    own that sees every request)."""
    cls = lookup(algorithm)
    arr = arrivals(setup.rate_per_s, setup.duration_ms, setup.servers, setup.seed)
    clock, plain_clock = Clock(), Clock()
    cached = cls(clock.backend(), setup.limit, setup.window_ms)
    plain = cls(plain_clock.backend(), setup.limit, setup.window_ms)
    until = [-1] * setup.servers  # refused locally while t < until
    rows = []
    for t, s in zip(arr.t_ms.tolist(), arr.server.tolist(), strict=True):
        plain_clock.t_ms = t
        uncached = plain.decide(USER, t).allowed
        if t < until[s]:
            rows.append((t, s, False, False, uncached))
            continue
        clock.t_ms = t
        d = cached.decide(USER, t)
        if not d.allowed and d.retry_after_ms > 0:
            until[s] = t + d.retry_after_ms
        rows.append((t, s, d.allowed, True, uncached))
    frame = pd.DataFrame(rows, columns=["t_ms", "server", "allowed", "called", "uncached"])
    return frame.assign(algorithm=cls.name)


def deny_cache_summary(frames: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: requests, server calls saved, decisions changed (admitted by one way and
    not the other), and admitted with and without the cache."""
    g = frames.groupby("algorithm", sort=False)
    return (
        pd.DataFrame(
            {
                "requests": g.size(),
                "calls_saved": g["called"].apply(lambda c: int((~c).sum())),
                "decisions_changed": g.apply(
                    lambda f: int((f["allowed"] != f["uncached"]).sum()), include_groups=False
                ),
                "admitted_cached": g["allowed"].sum(),
                "admitted_uncached": g["uncached"].sum(),
            }
        )
        .astype("int64")
        .reset_index()
    )


def lease_run(
    setup: CacheSetup, lease: int, algorithm: str | type[Limiter] = "sliding_log"
) -> pd.DataFrame:
    """One row per request with allowances of ``lease`` requests per call: ``allowed`` and
    ``called`` (this request asked the server for a new allowance)."""
    cls = lookup(algorithm)
    if not 1 <= lease <= setup.limit:
        raise ConfigError(
            f"lease: must be an integer from 1 to the limit {setup.limit}, got {lease}"
        )
    arr = arrivals(setup.rate_per_s, setup.duration_ms, setup.servers, setup.seed)
    clock = Clock()
    limiter = cls(clock.backend(), setup.limit, setup.window_ms)
    left = [0] * setup.servers
    rows = []
    for t, s in zip(arr.t_ms.tolist(), arr.server.tolist(), strict=True):
        if left[s]:
            left[s] -= 1
            rows.append((t, s, True, False))
            continue
        clock.t_ms = t
        granted = limiter.decide(USER, t, lease).allowed
        if granted:
            left[s] = lease - 1
        rows.append((t, s, granted, True))
    frame = pd.DataFrame(rows, columns=["t_ms", "server", "allowed", "called"])
    return frame.assign(lease=lease, algorithm=cls.name)


def lease_summary(frames: pd.DataFrame, setup: CacheSetup) -> pd.DataFrame:
    """Per lease size: server calls per decision, admitted, the most admitted in any window,
    and the bound ``limit + N x (B - 1)``."""
    rows = []
    for lease, f in frames.groupby("lease", sort=True):
        t_admitted = f.loc[f["allowed"], "t_ms"].to_numpy()
        rows.append(
            {
                "lease": int(lease),
                "requests": len(f),
                "calls": int(f["called"].sum()),
                "calls_per_decision": float(f["called"].mean()),
                "admitted": int(f["allowed"].sum()),
                "most_in_window": max_in_window(t_admitted, setup.window_ms),
                "limit": setup.limit,
                "bound": setup.limit + setup.servers * (int(lease) - 1),
            }
        )
    return pd.DataFrame(rows)


def lease_sizes(setup: CacheSetup, sizes: Sequence[int] = (1, 2, 5, 10, 20)) -> list[int]:
    """The lease sizes a study runs: those up to the limit."""
    return [b for b in sizes if b <= setup.limit]
