"""A run of a scenario: in this process, or split by client into shards on Dask.

:func:`simulate` is the one entry point: one process on one backend
(:func:`simulator.engine.model.simulate_whole`), or ``shards=N`` fake servers in Dask tasks
(:func:`simulator.engine.shards.simulate_sharded`), with the same rows either way.
:func:`boundary_burst` is the practice case built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simulator.backends import Backend
from simulator.checks import ConfigError, check_int
from simulator.engine.model import Row, simulate_whole
from simulator.engine.scenario import BurstAt, Scenario
from simulator.engine.shards import simulate_sharded

__all__ = ["Crowd", "simulate", "boundary_burst"]


def simulate(
    scenario: Scenario,
    backend: Backend | None = None,
    on_rows: Callable[[list[Row]], None] | None = None,
    *,
    shards: int = 1,
    scheduler: Any = None,
    pipelined: bool | None = None,
) -> pd.DataFrame:
    """Run ``scenario`` and return its decision log (one row per request).

    On a real server ``echomq`` runs on real time (the scenario takes its duration in wall time);
    the frame's ``attrs["late_ms"]`` then holds how late (ms) each decision was sent.
    ``on_rows`` receives each decision as it is made (its position is the row number).

    ``shards=N`` splits the clients into N shards, each simulated on its own fake server in a
    Dask task (``scheduler``: see :func:`simulator.engine.workers.dask_client`), and concatenates their
    logs: the same rows as one run (:mod:`simulator.engine.shards`).

    When no client reacts to its answers, a real server gets the calls in pipelines, as a
    replay sends a trace, with the same rows (:mod:`simulator.engine.pipelined`); ``pipelined``
    True asks for that on the fake server too, False for one call at a time everywhere. The
    frame's ``attrs["calls"]`` says which way the calls went.
    """
    if shards != 1 or scheduler is not None:
        if backend is not None or on_rows is not None:
            raise ConfigError(
                "simulate.shards: each shard runs on a fake server of its own, so neither a "
                "backend nor on_rows can be given with shards"
            )
        return simulate_sharded(scenario, shards, scheduler)
    return simulate_whole(scenario, backend, on_rows, pipelined=pipelined)


@dataclass(frozen=True)
class Crowd:
    """Who bursts in :func:`boundary_burst`, and where they run: ``users`` clients burst alike (one
    is ``user``; more are ``user0``, ``user1``, ...), split into ``shards`` fake servers on Dask
    (``scheduler``: see :func:`simulate`)."""

    users: int = 1
    shards: int = 1
    scheduler: Any = None


def boundary_burst(
    algorithm: str,
    limit: int = 100,
    window_s: float = 60.0,
    first_s: float = 59.0,
    second_s: float = 61.0,
    per_burst: int | None = None,
    backend: Backend | None = None,
    params: Mapping[str, float] | None = None,
    crowd: Crowd = Crowd(),
) -> pd.DataFrame:
    """The practice case: ``per_burst`` requests (default ``limit``) at each of two seconds.

    ``params``: the algorithm's own parameters (the others take their defaults). ``crowd``: how
    many users burst alike, and how they are split into shards (one user, in this process, unless
    it says otherwise)."""
    n = limit if per_burst is None else per_burst
    users = check_int("boundary_burst", "users", crowd.users, 1, 100_000_000)
    names = ["user"] if users == 1 else [f"user{i}" for i in range(users)]
    scenario = Scenario(
        algorithm=algorithm,
        limit=limit,
        window_ms=round(window_s * 1000),
        duration_ms=max(first_s, second_s) * 1000 + 1,
        clients=tuple(BurstAt(name, n=n, at_s=(first_s, second_s)) for name in names),
        params=dict(params or {}),
    )
    frame = simulate(scenario, backend, shards=crowd.shards, scheduler=crowd.scheduler)
    # The run's limit, for ratios: a bucket's rows hold its capacity (the burst) as "limit".
    frame.attrs["limit"] = limit
    return frame
