"""A run of very many clients, split by client into shards that run at once on Dask workers.

For a per-client limiter (``per_client`` in the registry: every key of a decision is under the
client's own hash tag) a client's decisions depend on its own requests only. So the clients of a
scenario can be dealt into shards, each shard simulated on a fake server of its own on its own
virtual clock, in a Dask task, and the shards' decision logs put together: the same rows as the
whole run. Each client keeps the random generator it has in the whole run (made from its
position in ``Scenario.clients``) and every row keeps the whole run's ``run_id``.

Client specs that share a name share a counter, so they always go into one shard; names are
dealt round-robin in order of first appearance. The shards' rows are put in time order, ties in
client order, which is the whole run's own order for clients played ahead (see
:mod:`simulator.engine.clients`); a reacting client's rows at an instant another client shares may come
in another order, never with another decision. Two specs of one name, one reacting and one played
ahead, may tie at one instant on their shared counter in another order than in the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.checks import ConfigError, check_int
from simulator.engine.scenario import Scenario

__all__ = ["deal", "simulate_sharded", "not_per_client"]


@dataclass(frozen=True)
class Shard:
    """One shard as a task gets it in another process: the scenario's fields by value (the
    algorithm by name: the worker's registry makes it again), its clients and their positions
    in the whole run, the run id, and the user's script the algorithm is, if it is one
    (see :mod:`simulator.userscripts.shipping`)."""

    algorithm: str
    limit: int
    window_ms: int
    duration_ms: float
    clients: tuple[Any, ...]
    seed: int
    params: dict[str, float]
    indices: list[int]
    run_id: str
    script: Any

    def scenario(self) -> Scenario:
        return Scenario(
            self.algorithm,
            self.limit,
            self.window_ms,
            self.duration_ms,
            self.clients,
            self.seed,
            self.params,
        )


def not_per_client(algorithm: type[Limiter]) -> str | None:
    """Why ``algorithm``'s runs cannot be split by client, or None when they can."""
    if algorithm.per_client:
        return None
    sharded = ", ".join(n for n, c in ALGORITHMS.items() if c.per_client) or "none"
    return (
        f"{algorithm.name} is not a per-client limiter (its clients share state), so a run cannot be "
        f"split by client; per-client limiters: {sharded}"
    )


def deal(scenario: Scenario, shards: int) -> list[list[int]]:
    """Positions of the clients in each shard (names dealt round-robin; empty shards left out)."""
    shard_of: dict[str, int] = {}
    parts: list[list[int]] = [[] for _ in range(shards)]
    for i, spec in enumerate(scenario.clients):
        k = shard_of.setdefault(spec.name, len(shard_of) % shards)
        parts[k].append(i)
    return [p for p in parts if p]


def _run_shard(shard: Shard) -> tuple[pd.DataFrame, np.ndarray]:
    """One shard on a fake server of its own (this runs on a worker): its decision log and each
    decision's exact simulated instant."""
    from simulator.engine.model import simulate_whole
    from simulator.userscripts.shipping import install

    install(shard.script)
    instants: list[float] = []
    frame = simulate_whole(
        shard.scenario(), run_id=shard.run_id, indices=shard.indices, instants=instants
    )
    return frame, np.array(instants, dtype="float64")


def simulate_sharded(scenario: Scenario, shards: int, scheduler: Any = None) -> pd.DataFrame:
    """:func:`simulator.engine.run.simulate` split into ``shards`` by client, on Dask (see
    :func:`simulator.engine.workers.dask_client` for ``scheduler``; None starts a LocalCluster)."""
    from simulator.engine.model import scenario_run_id, simulate_whole
    from simulator.engine.workers import check_scheduler, dask_client, run_tasks
    from simulator.userscripts.shipping import shipped

    shards = check_int("simulate", "shards", shards, 1, 1_000_000)
    check_scheduler(scheduler)
    why = not_per_client(scenario.policy.algorithm)
    if why is not None:
        raise ConfigError(f"simulate.shards: {why}")
    params = dict(scenario.params)
    run_id = scenario_run_id(scenario)
    script = shipped(scenario.algorithm)
    parts = deal(scenario, shards)
    if not parts:
        return simulate_whole(scenario)
    work: list[Shard] = [
        Shard(
            scenario.algorithm,
            scenario.limit,
            scenario.window_ms,
            scenario.duration_ms,
            tuple(scenario.clients[i] for i in part),
            scenario.seed,
            params,
            part,
            run_id,
            script,
        )
        for part in parts
    ]
    done: list[tuple[pd.DataFrame, np.ndarray]] = [None] * len(work)  # type: ignore[list-item]
    with dask_client(scheduler) as client:
        for i, result, exc in run_tasks(client, _run_shard, work, scatter=True):
            if exc is not None:
                raise exc
            done[i] = result
    whole = pd.concat([frame for frame, _ in done], ignore_index=True)
    instants = np.concatenate([at for _, at in done])
    first: dict[str, int] = {}
    for i, spec in enumerate(scenario.clients):
        first.setdefault(spec.name, i)
    position = whole["client"].map(first).to_numpy(dtype="int64")
    order = np.lexsort((np.arange(len(whole)), position, instants))
    return whole.take(order).reset_index(drop=True)
