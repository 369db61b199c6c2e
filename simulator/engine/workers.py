"""Where many runs go at once: Dask distributed, on this machine or on a cluster that exists.

A sweep's grid points and a sharded simulation's shards are independent tasks. They run on a Dask
cluster: by default a ``LocalCluster`` with one worker process per core (one thread each: the
simulations hold the GIL), started for the command and stopped with it; or an existing cluster by
its scheduler's address (``tcp://HOST:PORT``), which is left running. A cluster started here
listens on 127.0.0.1 only and has no dashboard: it is nobody else's to reach. ``serial`` runs
the tasks here, one after another, without Dask (what a test or a notebook wants for a small
run).

Workers import the functions they run from this package, so it must be importable on every
worker, at the same version as here (``pip install`` it on each; see docs/scale_out.md).
:func:`run_tasks` hands back each task's result or its exception as it finishes, so that one
failed task never loses the others; it keeps only a few tasks per worker out at once, and says
so when the scheduler has no workers at all.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from simulator.checks import ConfigError

__all__ = [
    "SERIAL",
    "LOCAL",
    "LOOPBACK",
    "NoWorkers",
    "dask_client",
    "run_tasks",
    "check_scheduler",
    "describe",
]

#: No Dask: every task here, one after another.
SERIAL = "serial"
#: A LocalCluster with one worker process per core, started and stopped with the block.
LOCAL = "local"
#: The only address a cluster started here listens on.
LOOPBACK = "127.0.0.1"


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
    # A cluster interrupted while it starts is left half made, and Dask's own clean-up at exit
    # then fails with a traceback: Ctrl-C and SIGTERM wait the few seconds of the start, and
    # take effect as soon as the cluster can be stopped whole.
    with _signals_held() as held:
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            # Loopback only, and no dashboard: a cluster this command starts is nobody else's
            # to look at (the dashboard shows the workers, their tasks and their logs). The
            # scheduler keeps its small HTTP server (health, metrics) on loopback, on a free
            # port: never 8787, which another cluster may hold.
            host=LOOPBACK,
            dashboard_address=f"{LOOPBACK}:0",
            scheduler_kwargs={"dashboard": False},
            # The command reports every failed task itself; what the cluster's processes log
            # while it stops (a worker's heartbeat to a scheduler already gone) is noise.
            silence_logs=logging.CRITICAL,
        )
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
    with cluster, client:
        held.replay()
        yield client


class _Held:
    """The signals that came while held, to be delivered once it is safe."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def replay(self) -> None:
        for signum in self.signals:  # the handlers are back: this raises as the signal would
            signal.raise_signal(signum)
        self.signals.clear()


@contextlib.contextmanager
def _signals_held() -> Iterator[_Held]:
    """Ctrl-C and SIGTERM noted, not acted on, for the block (in the main thread; elsewhere no
    signal arrives anyway); :meth:`_Held.replay` delivers them to the handlers restored."""
    held = _Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    names = (signal.SIGINT, signal.SIGTERM)
    previous = {
        sig: signal.signal(sig, lambda signum, frame: held.signals.append(signum)) for sig in names
    }
    try:
        yield held
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def describe(client: Any) -> str:
    """``N workers at ADDRESS`` (or ``serial``), for the line a command prints first."""
    if client is None:
        return "serial (no Dask: here, one task after another)"
    n = len(client.scheduler_info().get("workers", {}))
    return f"{n} Dask worker{'s' * (n != 1)} at {client.scheduler.address}"


class NoWorkers(ConfigError):
    """The scheduler had no worker for longer than the caller would wait (the tasks kept)."""


#: How long a run waits between two lines saying the scheduler has no workers.
NO_WORKERS_SAY_S = 30.0
#: How long a wait for a result lasts before the run looks at the workers (and Ctrl-C is seen
#: between two waits whatever the client's own waits do).
POLL_S = 1.0


def run_tasks(
    client: Any,
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    scatter: bool = False,
    window: int | None = None,
    no_workers_s: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Generator[tuple[int, Any, BaseException | None], None, None]:
    """``fn(item)`` for every item, yielded as ``(index, result, None)`` or ``(index, None,
    exception)`` in the order they finish. A worker that dies mid-task has its task run again on
    another (Dask's own rescheduling); Ctrl-C cancels the tasks still running. ``scatter``: send
    the items to the workers first (large items, such as a shard's clients).

    At most ``window`` tasks are out at once (default: four per worker thread, at least 8): the
    items are taken from ``items`` as tasks finish, so a grid of a million points costs what a
    few dozen do, and an interrupted run has only those few to cancel. When the scheduler has no
    workers, ``say`` hears of it every :data:`NO_WORKERS_SAY_S` seconds, and after
    ``no_workers_s`` seconds (None: wait on) the run stops with :class:`NoWorkers`."""
    if client is None:
        for i, item in enumerate(items):
            try:
                yield i, fn(item), None
            except Exception as exc:  # a failed task is reported; the others still run
                yield i, None, exc
        return
    from distributed import wait

    if window is None:
        window = max(8, 4 * sum(client.nthreads().values()))
    todo = iter(enumerate(items))
    pending: dict[Any, int] = {}

    def send(n: int) -> None:
        for i, item in itertools.islice(todo, n):
            arg = client.scatter(item, hash=False) if scatter else item  # no tokenizing
            pending[client.submit(fn, arg, pure=False)] = i

    watch = _WorkerWatch(client, no_workers_s, say)
    try:
        send(window)
        while pending:
            try:
                done, _ = wait(list(pending), timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            if not done:
                watch.check()
                continue
            watch.reset()
            # Tasks that finished in the same wait (several, on a busy machine) are yielded in
            # the order they were sent, not in the set's: the first failure reported is then the
            # earliest item's, however slow the machine.
            for future in sorted(done, key=pending.__getitem__):
                i = pending.pop(future)
                try:
                    result = future.result()
                except Exception as exc:
                    yield i, None, exc
                else:
                    yield i, result, None
                future.release()
            send(window - len(pending))
    finally:
        if pending:
            client.cancel(list(pending))


class _WorkerWatch:
    """Says when the scheduler has had no workers for a while, and gives up after a limit."""

    def __init__(
        self, client: Any, limit_s: float | None, say: Callable[[str], None] | None
    ) -> None:
        self.client, self.limit_s, self.say = client, limit_s, say
        self.since: float | None = None
        self.said_at = 0.0

    def reset(self) -> None:
        self.since = None

    def check(self) -> None:
        if self.client.nthreads():
            self.since = None
            return
        now = time.monotonic()
        if self.since is None:
            self.since, self.said_at = now, now
            return
        idle_s = now - self.since
        where = self.client.scheduler.address
        if self.limit_s is not None and idle_s >= self.limit_s:
            raise NoWorkers(
                f"no workers on the scheduler {where} for {idle_s:.0f} s (the limit); start "
                f"some (dask worker {where}) or run with --scheduler local, then run this again"
            )
        if self.say is not None and now - self.said_at >= NO_WORKERS_SAY_S:
            self.said_at = now
            self.say(f"no workers on the scheduler {where} for {idle_s:.0f} s; waiting for one")
