"""The explorer's runs on the machine's cores: one algorithm's run per worker process.

Each algorithm's decision log depends on its own script and the requests only, so the algorithms
of one explorer run are independent: :class:`Pool` hands them to a few worker processes (one per
core, two at most by default), each deciding on its own fake server, and gives back each log with
its summary. A worker is started once, with the package imported and every registered script
compiled, and kept for the explorer's life, with one fake server that it empties before each
job; it ends with the explorer (:meth:`Pool.close`), and with the process that started it if
that one dies first (Linux's parent-death signal), so a closed page's kernel leaves no worker
behind.

A run is stopped between two decisions: every job carries its run's number, and a worker's
``cancelled()`` compares it with a number the parent raises (:meth:`Pool.cancel_before`) in
shared memory. Progress (decisions made) is added up in shared memory too.

A job (:class:`~simulator.explore.job.Job`) carries its algorithm's class itself, in its policy;
the worker runs it only if its registry holds that very class under its name, with the same
scripts' sources (a built-in, or one registered through ``SIMULATOR_ALGORITHMS`` in every
process). Anything else - a user's script registered in the notebook - is decided in the parent
(:func:`poolable`).
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.base import Limiter
from simulator.algorithms.scripts import load
from simulator.backends.direct import DirectFakeBackend
from simulator.explore.job import Cancelled, Job, Summary, decide, summary_of

__all__ = ["Pool", "NotHere", "poolable", "default_workers", "WORKERS_ENV"]

#: Environment variable: how many worker processes an explorer starts (0: none, every run in
#: the explorer's own process).
WORKERS_ENV = "SIMULATOR_EXPLORER_WORKERS"


def _main_imports_safely() -> bool:
    """True when a new process may import this one's main module without running it: a
    notebook's kernel or an interactive session (no file), or ``python -m`` (a module).
    A plain ``python script.py`` may have no ``if __name__ == "__main__":`` guard."""
    main = sys.modules.get("__main__")
    return getattr(main, "__file__", None) is None or getattr(main, "__spec__", None) is not None


def default_workers() -> int:
    """The workers an explorer starts: ``SIMULATOR_EXPLORER_WORKERS``, else one per core (2 at
    most: a page's runs are ten algorithms or so); none on a single core, and none from a plain
    script (which a worker would run again, unless it has the ``__main__`` guard: such a
    script passes ``workers=`` itself)."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            n = -1
        if n < 0:
            raise ValueError(f"{WORKERS_ENV}={text!r}: expected a number of processes (0 or more)")
        return n
    if not _main_imports_safely():
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(2, cores or 1) if (cores or 1) > 1 else 0


def _scripts_of(cls: type[Limiter]) -> tuple[str, ...]:
    return tuple(load(name).sha for name in cls.scripts)


def poolable(cls: type[Limiter]) -> bool:
    """True when a fresh process resolves the algorithm ``cls`` to this very class: a class
    reachable by its module and name, from a module that process imports (the package's own,
    or one named in ``SIMULATOR_ALGORITHMS``)."""
    module = sys.modules.get(cls.__module__)
    if module is None or getattr(module, cls.__qualname__, None) is not cls:
        return False
    extra = {m.strip() for m in os.environ.get("SIMULATOR_ALGORITHMS", "").split(",") if m.strip()}
    return cls.__module__.startswith("simulator.") or cls.__module__ in extra


class NotHere(Exception):
    """The worker's registry does not hold the algorithm the job means."""


# -- the worker's side ------------------------------------------------------------------------
_shared: dict[str, Any] = {}


def _die_with_parent() -> None:
    """Ask Linux to end this process when the process that started it ends."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pool's shutdown still ends it
        pass


def _start(stop_before: Any, decided: Any, parent_pid: int) -> None:
    _die_with_parent()
    if os.getppid() != parent_pid:  # the parent ended before the signal was asked for
        os._exit(0)
    # Ctrl-C is the explorer's to handle: a worker stops when its job is cancelled.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _shared.update(stop_before=stop_before, decided=decided)
    # What a first job would otherwise wait for: every script read (the modules a run imports
    # came with this one).
    for cls in ALGORITHMS.values():
        for name in cls.scripts:
            load(name)


def _emptied_backend() -> DirectFakeBackend:
    """The worker's fake server, emptied (``FLUSHALL``): one per worker, kept from job to job
    with its scripts loaded, so a job starts deciding at once; a new one after a job that
    failed."""
    backend = _shared.get("backend")
    if backend is None:
        backend = _shared["backend"] = DirectFakeBackend()
    else:
        backend.client.flushall()
    return backend


def _run_job(job: Job) -> tuple[pd.DataFrame, Summary, float, np.ndarray | None]:
    cls = job.policy.algorithm
    # The run below is made by the algorithm's name (the engine's scenario takes one): this
    # worker's registry must give that name this very class, with the sender's scripts.
    if ALGORITHMS.get(job.policy.name) is not cls or _scripts_of(cls) != job.scripts:
        raise NotHere(job.policy.name)
    stop_before, decided = _shared["stop_before"], _shared["decided"]
    reported = [0]

    def progress(n: int) -> None:
        with decided.get_lock():
            decided.value += n - reported[0]
        reported[0] = n

    began = time.perf_counter()
    backend = _emptied_backend()
    instants: list[float] | None = [] if job.trace is None else None
    try:
        frame = decide(job, backend, lambda: job.run < stop_before.value, progress, instants)
    except Cancelled:
        raise  # the server is sound: the next job empties it
    except BaseException:
        _shared.pop("backend").close()  # a script that failed may have left it in any state
        raise
    summary = summary_of(frame, job.policy)
    at = None if instants is None else np.array(instants, dtype="float64")
    return frame, summary, time.perf_counter() - began, at


def _ready() -> int:
    return os.getpid()


# -- the parent's side ------------------------------------------------------------------------
class Pool:
    """``workers`` processes deciding jobs; started at once (in the background)."""

    def __init__(self, workers: int) -> None:
        context = mp.get_context("spawn")  # a clean process: the parent may hold threads
        self.stop_before = context.Value("q", 0, lock=False)
        self.decided = context.Value("q", 0)
        self.workers = workers
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_start,
            initargs=(self.stop_before, self.decided, os.getpid()),
        )
        self._run = 0
        # Start them now, so the first run does not wait for imports.
        self._started = [self._executor.submit(_ready) for _ in range(workers)]

    def ready(self) -> bool:
        """True once every worker has started (imported the package, read the scripts)."""
        return all(f.done() for f in self._started)

    def stamped(self, job: Job) -> Job:
        """``job`` as this pool's next run sends it: with the scripts this process means, and
        the run's number (see :class:`~simulator.explore.job.Job`)."""
        return replace(job, scripts=_scripts_of(job.policy.algorithm), run=self._run)

    def next_run(self) -> None:
        """Jobs made from now on belong to a new run; progress counts from zero."""
        self._run += 1
        with self.decided.get_lock():
            self.decided.value = 0

    def submit(self, job: Job) -> Future[tuple[pd.DataFrame, Summary, float, np.ndarray | None]]:
        return self._executor.submit(_run_job, job)

    def pids(self) -> list[int]:
        """The worker processes' ids (those started so far)."""
        return sorted(self._executor._processes or {})

    def cancel_before(self) -> None:
        """Stop every job of this run and those before it, at their next decision."""
        self.stop_before.value = self._run + 1

    def close(self) -> None:
        self.cancel_before()
        self._executor.shutdown(wait=True, cancel_futures=True)
