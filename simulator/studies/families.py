"""Traffic families: named, seeded kinds of offered traffic for the accuracy study.

Each family is a crowd of clients that send whether or not they are admitted (offered traffic, not
a closed loop), so the same arrival times can be fed to two limiters independently. A family is a
frozen :class:`Family`; :func:`offered` draws its trace - ``t_ms`` (integer ms), ``client`` - from
the shapes in :mod:`simulator.engine.traffic`, with one random generator per client spawned from the
family's seed, so a client's arrivals do not change when other clients are added. ``load`` is the mean client's offered rate in units of the
limit (1.0 = exactly ``limit`` requests per window).

    poisson_under  steady Poisson at 0.8x the limit: the easy case
    poisson_over   steady Poisson at 1.5x: every client leans on the limit all the time
    on_off         bursts at 5x for 12 s of every minute, silence otherwise (mean 1x)
    diurnal        a compressed day: the rate swings between 0.1x and 1.9x and back
    zipf           many users, rate ~ 1/rank: a few heavy hitters far over, a long tail far under
    apache_log     a real Apache access log (data/traces), replayed per client IP
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.checks import ConfigError
from simulator.engine.traffic import diurnal_times, on_off_times, poisson_by_count
from simulator.paths import APACHE_LOG
from simulator.playback.traces import read_clf_trace

__all__ = ["Family", "KINDS", "SIZES", "families", "offered", "APACHE_LOG"]

KINDS = ("poisson", "on_off", "diurnal", "zipf", "apache_log")
#: Client-count multipliers per study size; "full" has >= 1,000,000 requests, >= 10,000 clients.
SIZES = {"ci": 0.03, "default": 0.15, "full": 1.0}


@dataclass(frozen=True)
class Family:
    """One named kind of offered traffic and the limit it is judged against."""

    name: str
    kind: str
    clients: int
    load: float = 1.0
    duration_ms: int = 600_000
    limit: int = 100
    window_ms: int = 60_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"Family.kind: unknown {self.kind!r}; known: {', '.join(KINDS)}")
        for name in ("clients", "duration_ms", "limit", "window_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"Family.{name}: must be an integer >= 1, got {value!r}")
        if not np.isfinite(self.load) or self.load <= 0:
            raise ConfigError(f"Family.load: must be a finite number > 0, got {self.load!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"Family.seed: must be an integer >= 0, got {self.seed!r}")

    @property
    def rate_per_ms(self) -> float:
        """The mean client's offered rate."""
        return self.load * self.limit / self.window_ms


def families(size: str = "default", seed: int = 0) -> tuple[Family, ...]:
    """The study's families at ``size`` (ci, default or full)."""
    if size not in SIZES:
        raise ConfigError(f"size: unknown {size!r}; known: {', '.join(SIZES)}")
    s = SIZES[size]

    def n(full: int) -> int:
        return max(5, round(full * s))

    return (
        Family("poisson_under", "poisson", n(500), load=0.8, seed=seed),
        Family("poisson_over", "poisson", n(300), load=1.5, seed=seed + 1),
        Family("on_off", "on_off", n(500), load=1.0, seed=seed + 2),
        Family("diurnal", "diurnal", n(300), load=1.0, duration_ms=1_200_000, seed=seed + 3),
        Family("zipf", "zipf", n(20_000), load=10.0, seed=seed + 4),
        Family("apache_log", "apache_log", 1, limit=5, window_ms=10_000, seed=seed + 5),
    )


def offered(f: Family) -> pd.DataFrame:
    """The family's offered traffic: columns ``t_ms`` (int64 ms) and ``client`` (string)."""
    if f.kind == "apache_log":
        trace = read_clf_trace(APACHE_LOG)
        t_ms = np.floor(trace["t_ms"].to_numpy(dtype="float64")).astype("int64")
        return pd.DataFrame({"t_ms": t_ms - t_ms.min(), "client": trace["client"].astype(str)})
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(f.seed).spawn(f.clients)]
    parts: list[np.ndarray] = []
    for i, rng in enumerate(rngs):
        if f.kind == "poisson":
            t = poisson_by_count(rng, f.rate_per_ms, f.duration_ms)
        elif f.kind == "on_off":  # 12 s on at 5x the mean rate, 48 s off
            t = on_off_times(rng, f.rate_per_ms, f.duration_ms, on_ms=12_000, period_ms=60_000)
        elif f.kind == "diurnal":
            t = diurnal_times(rng, f.rate_per_ms, f.duration_ms)
        else:  # zipf: client i (rank i + 1) offers load / rank times the limit
            t = poisson_by_count(rng, f.rate_per_ms / (i + 1), f.duration_ms)
        parts.append(t)
    sizes = np.array([len(p) for p in parts])
    t_all = np.floor(np.concatenate(parts)).astype("int64") if parts else np.empty(0, "int64")
    names = np.array([f"{f.name}-{i}" for i in range(f.clients)], dtype=object)
    trace = pd.DataFrame({"t_ms": t_all, "client": np.repeat(names, sizes)})
    return trace.sort_values("t_ms", kind="stable", ignore_index=True)
