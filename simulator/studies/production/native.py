"""The server's own primitive: INCREX against the Lua windows, decision for decision.

The same requests (a few users, costs 1 to 4, now and then one above the limit) go to the INCREX
algorithms and to the Lua script each should match: the first-hit INCREX against EchoMQ's
script (they must agree on every decision), the clock-grid INCREX against the Lua fixed window
(they agree until a refused request that the Lua window counts: after it, a cheaper request
passes INCREX's counter and not the script's). Beside it, the operations per decision: every
command the server runs, a script's own ``redis.call`` included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import (
    ALGORITHMS,
    EchoMQ,
    FixedWindow,
    IncrexFirstHit,
    IncrexGrid,
    Limiter,
)
from simulator.backends.fakeserver import counted_commands
from simulator.checks import check_int
from simulator.policy import lookup
from simulator.studies.production.common import MAX_REQUESTS, Clock, check_setup

__all__ = ["NativeSetup", "PAIRS", "native_run", "native_summary", "operations"]

#: Each INCREX algorithm and the Lua script it is compared with.
PAIRS: tuple[tuple[type[Limiter], type[Limiter]], ...] = (
    (IncrexFirstHit, EchoMQ),
    (IncrexGrid, FixedWindow),
)


@dataclass(frozen=True)
class NativeSetup:
    """``requests`` over ``users`` users in ``duration_ms``, costs 1 to ``max_cost``."""

    limit: int = 10
    window_ms: int = 1_000
    users: int = 3
    requests: int = 3_000
    duration_ms: int = 60_000
    max_cost: int = 4
    seed: int = 1

    def __post_init__(self) -> None:
        ints = {"limit": 1, "window_ms": 1, "users": 1, "duration_ms": 1, "max_cost": 1}
        check_setup("NativeSetup", self, ints | {"seed": 0}, ())
        check_int("NativeSetup", "requests", self.requests, 1, MAX_REQUESTS)


def _trace(setup: NativeSetup) -> pd.DataFrame:
    rng = np.random.default_rng(np.random.SeedSequence(setup.seed))
    n = setup.requests
    cost = rng.integers(1, setup.max_cost + 1, size=n)
    cost[rng.random(n) < 0.01] = setup.limit + 1  # now and then one no window can admit
    return pd.DataFrame(
        {
            "t_ms": np.sort(rng.integers(0, setup.duration_ms, size=n)),
            "client": rng.integers(0, setup.users, size=n).astype(str),
            "cost": cost,
        }
    )


def native_run(setup: NativeSetup = NativeSetup()) -> pd.DataFrame:
    """One row per request and pair: the INCREX decision and count beside the Lua one's, and
    whether an earlier refusal of that user in the same window was counted by the Lua window."""
    trace = _trace(setup)
    out = []
    for native, lua in PAIRS:
        clock = Clock()
        backend = clock.backend()
        a = native(backend, setup.limit, setup.window_ms)
        b = lua(backend, setup.limit, setup.window_ms)
        rows = []
        for t, c, k in trace.itertuples(index=False):
            clock.t_ms = t
            x, y = a.decide(c, t, k), b.decide(c, t, k)
            rows.append((t, c, k, x.allowed, y.allowed, x.count, y.count))
        f = pd.DataFrame(
            rows,
            columns=["t_ms", "client", "cost", "native", "lua", "native_count", "lua_count"],
        )
        names = {"native_algorithm": native.name, "lua_algorithm": lua.name}
        out.append(f.assign(pair=f"{native.name} / {lua.name}", **names))
    return pd.concat(out, ignore_index=True)


def native_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per pair: requests, decisions that differ (INCREX admits where the Lua refuses, and the
    other way), and the refused hits the Lua counted that INCREX did not (count above it)."""
    g = frame.groupby("pair", sort=False)
    return pd.DataFrame(
        {
            "requests": g.size(),
            "agree": g.apply(lambda f: int((f["native"] == f["lua"]).sum()), include_groups=False),
            "native_only": g.apply(
                lambda f: int((f["native"] & ~f["lua"]).sum()), include_groups=False
            ),
            "lua_only": g.apply(
                lambda f: int((~f["native"] & f["lua"]).sum()), include_groups=False
            ),
            "lua_count_higher": g.apply(
                lambda f: int((f["lua_count"] > f["native_count"]).sum()), include_groups=False
            ),
        }
    ).reset_index()


def operations(
    setup: NativeSetup = NativeSetup(), algorithms: tuple[str | type[Limiter], ...] = ()
) -> pd.DataFrame:
    """Per algorithm: server commands per decision on the fake server over the same requests
    (a script call counts one, and each ``redis.call`` in it one more); one round trip each.
    No ``algorithms``: every one registered."""
    trace = _trace(setup)
    rows = []
    classes = [lookup(a, owner="operations.algorithms") for a in algorithms]
    for cls in classes or list(ALGORITHMS.values()):
        clock = Clock()
        limiter = cls(clock.backend(), setup.limit, setup.window_ms)
        limiter.backend.client.ping()  # the connection's own handshake is not a decision's
        with counted_commands() as count:
            for t, c, k in trace.itertuples(index=False):
                clock.t_ms = t
                limiter.decide(c, t, k)
        rows.append({"algorithm": cls.name, "decisions": len(trace), "commands": count.commands})
    f = pd.DataFrame(rows)
    return f.assign(commands_per_decision=f["commands"] / f["decisions"])
