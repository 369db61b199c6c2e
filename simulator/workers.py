"""Where many runs go at once: Dask distributed, on this machine or on a cluster that exists.

A sweep's grid points and a sharded simulation's shards are independent tasks. They run on a Dask
cluster: by default a ``LocalCluster`` with one worker process per core (one thread each: the
simulations hold the GIL), started for the command and stopped with it; or an existing cluster by
its scheduler's address (``tcp://HOST:PORT``), which is left running. ``serial`` runs the tasks
here, one after another, without Dask (what a test or a notebook wants for a small run).

Workers import the functions they run from this package, so it must be importable on every
worker, at the same version as here (``pip install`` it on each; see docs/scale_out.md).
:func:`run_tasks` hands back each task's result or its exception as it finishes, so that one
failed task never loses the others.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from simulator.scenario import ConfigError

__all__ = ["SERIAL", "LOCAL", "dask_client", "run_tasks", "check_scheduler", "describe"]

#: No Dask: every task here, one after another.
SERIAL = "serial"
#: A LocalCluster with one worker process per core, started and stopped with the block.
LOCAL = "local"


def check_scheduler(scheduler: Any) -> Any:
    """``scheduler`` if it names a way to run (None, local, serial, an address, a Client)."""
    if scheduler is None or scheduler in (SERIAL, LOCAL):
        return scheduler
    if isinstance(scheduler, str):
        scheme, sep, rest = scheduler.partition("://")
        if sep and scheme in ("tcp", "tls", "ws", "wss", "inproc", "ucx") and rest:
            return scheduler
        raise ConfigError(
            f"scheduler: {scheduler!r} is not a Dask scheduler address (tcp://HOST:PORT), "
            f"{LOCAL!r} or {SERIAL!r}"
        )
    from distributed import Client

    if isinstance(scheduler, Client):
        return scheduler
    raise ConfigError(f"scheduler: must be an address, {LOCAL!r}, {SERIAL!r} or a Client")


@contextlib.contextmanager
def dask_client(scheduler: Any = None, workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (None: serial), closed with the block.

    ``None`` or ``"local"``: a LocalCluster of ``workers`` processes (default: one per core), one
    thread each, no dashboard, started here and stopped on the way out whatever happens.
    ``"tcp://HOST:PORT"``: the cluster of that scheduler (only the connection is closed). A
    ``Client`` is used as it is and left open. ``"serial"`` yields None.
    """
    scheduler = check_scheduler(scheduler)
    if scheduler == SERIAL:
        yield None
        return
    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
        return
    if isinstance(scheduler, str) and scheduler != LOCAL:
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as exc:
            raise ConfigError(f"scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    with (
        LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: never one another cluster holds
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def describe(client: Any) -> str:
    """``N workers at ADDRESS`` (or ``serial``), for the line a command prints first."""
    if client is None:
        return "serial (no Dask: here, one task after another)"
    n = len(client.scheduler_info().get("workers", {}))
    return f"{n} Dask worker{'s' * (n != 1)} at {client.scheduler.address}"


def run_tasks(
    client: Any, fn: Callable[[Any], Any], items: Sequence[Any], scatter: bool = False
) -> Iterator[tuple[int, Any, BaseException | None]]:
    """``fn(item)`` for every item, yielded as ``(index, result, None)`` or ``(index, None,
    exception)`` in the order they finish. A worker that dies mid-task has its task run again on
    another (Dask's own rescheduling); Ctrl-C cancels the tasks still running. ``scatter``: send
    the items to the workers first (large items, such as a shard's clients)."""
    if client is None:
        for i, item in enumerate(items):
            try:
                yield i, fn(item), None
            except Exception as exc:  # a failed task is reported; the others still run
                yield i, None, exc
        return
    from distributed import as_completed

    sent = client.scatter(list(items), hash=False) if scatter else items  # no tokenizing
    futures = [client.submit(fn, item, pure=False) for item in sent]
    where = {f.key: i for i, f in enumerate(futures)}
    try:
        for future in as_completed(futures):
            i = where[future.key]
            try:
                result = future.result()
            except Exception as exc:
                yield i, None, exc
            else:
                yield i, result, None
            future.release()
    finally:
        client.cancel([f for f in futures if not f.done()])
