"""The explorer's runs on the machine's cores: one algorithm's run per worker process.

Each algorithm's decision log depends on its own script and the requests only, so the algorithms
of one explorer run are independent: :class:`Pool` hands them to a few worker processes (one per
core, two at most by default), each deciding on its own fake server, and gives back each log with
its summary. A worker is started once, with the package imported and every registered script
compiled, and kept for the explorer's life; it ends with the explorer (:meth:`Pool.close`), and
with the process that started it if that one dies first (Linux's parent-death signal), so a
closed page's kernel leaves no worker behind.

A run is stopped between two decisions: every job carries its run's number, and a worker's
``cancelled()`` compares it with a number the parent raises (:meth:`Pool.cancel_before`) in
shared memory. Progress (decisions made) is added up in shared memory too.

A job names its algorithm; the worker runs it only if its registry holds the very class the
parent's does, with the same scripts' sources (a built-in, or one registered through
``SIMULATOR_ALGORITHMS`` in every process). Anything else - a user's script registered in the
notebook - is decided in the parent (:func:`poolable`).
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.scripts import load

__all__ = ["Job", "Pool", "poolable", "decide", "default_workers", "WORKERS_ENV"]

#: Environment variable: how many worker processes an explorer starts (0: none, every run in
#: the explorer's own process).
WORKERS_ENV = "SIMULATOR_EXPLORER_WORKERS"
#: Decisions between two looks at the cancel number and two progress reports.
_EVERY = 250


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


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _scripts_of(algorithm: str) -> tuple[str, ...]:
    return tuple(load(name).sha for name in ALGORITHMS[algorithm].scripts)


def poolable(algorithm: str) -> bool:
    """True when a fresh process resolves ``algorithm`` to the class this one does: a class
    reachable by its module and name, from a module that process imports (the package's own,
    or one named in ``SIMULATOR_ALGORITHMS``)."""
    cls = ALGORITHMS[algorithm]
    module = sys.modules.get(cls.__module__)
    if module is None or getattr(module, cls.__qualname__, None) is not cls:
        return False
    extra = {m.strip() for m in os.environ.get("SIMULATOR_ALGORITHMS", "").split(",") if m.strip()}
    return cls.__module__.startswith("simulator.") or cls.__module__ in extra


@dataclass(frozen=True)
class Job:
    """One algorithm's run: its limit per window and own parameters, and the requests - a
    traffic mix (``traffic``, ``duration_s``, ``seed``) or a trace's requests (``trace``)."""

    algorithm: str
    limit: int
    window_ms: int
    params: Mapping[str, float]
    traffic: Any = None
    duration_s: float = 0.0
    seed: int = 0
    trace: pd.DataFrame | None = None
    #: The class and scripts the parent means (a worker that has others refuses the job).
    class_path: str = ""
    scripts: tuple[str, ...] = ()
    run: int = field(default=0, compare=False)


class NotHere(Exception):
    """The worker's registry does not hold the algorithm the job means."""


def decide(
    job: Job,
    backend: Any,
    cancelled: Callable[[], bool],
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """The decision log of ``job`` on ``backend`` (emptied by the caller), stopped by
    :class:`~simulator.explore.runs.Cancelled` as soon as ``cancelled()`` between decisions."""
    from simulator.engine.run import simulate
    from simulator.engine.scenario import Scenario
    from simulator.explore.runs import Cancelled
    from simulator.playback.run import replay

    seen = [0]

    def on_rows(rows: Any) -> None:  # a list, or a replay's Decisions batch
        seen[0] += len(rows)
        if cancelled():
            raise Cancelled()
        if progress is not None and seen[0] % _EVERY < len(rows):
            progress(seen[0])

    params = dict(job.params)
    if job.trace is not None:
        frame = replay(
            job.trace,
            job.algorithm,
            job.limit,
            job.window_ms,
            backend,
            on_rows=on_rows,
            params=params,
        ).reset_index(drop=True)
    else:
        scenario = Scenario(
            job.algorithm,
            limit=job.limit,
            window_ms=job.window_ms,
            duration_ms=job.duration_s * 1000,
            clients=job.traffic.clients(),
            seed=job.seed,
            params=params,
        )
        frame = simulate(scenario, backend, on_rows=on_rows)
    if progress is not None:
        progress(len(frame))
    return frame


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
    # What a first job would otherwise wait for: the modules a run imports, every script read.
    import simulator.backends.direct  # noqa: F401
    import simulator.engine.run  # noqa: F401
    import simulator.explore.runs  # noqa: F401
    import simulator.playback.run  # noqa: F401

    for algorithm in ALGORITHMS:
        for name in ALGORITHMS[algorithm].scripts:
            load(name)


def _run_job(job: Job) -> tuple[pd.DataFrame, Any, float]:
    from simulator.backends.direct import DirectFakeBackend
    from simulator.explore.runs import summarise

    cls = ALGORITHMS.get(job.algorithm)
    if (
        cls is None
        or _class_path(cls) != job.class_path
        or _scripts_of(job.algorithm) != job.scripts
    ):
        raise NotHere(job.algorithm)
    stop_before, decided = _shared["stop_before"], _shared["decided"]
    reported = [0]

    def progress(n: int) -> None:
        with decided.get_lock():
            decided.value += n - reported[0]
        reported[0] = n

    began = time.perf_counter()
    backend = DirectFakeBackend()
    try:
        frame = decide(job, backend, lambda: job.run < stop_before.value, progress)
    finally:
        backend.close()
    summary = summarise(frame, job.algorithm, job.limit, job.window_ms)
    return frame, summary, time.perf_counter() - began


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
        for _ in range(workers):  # start them now, so the first run does not wait for imports
            self._executor.submit(_ready)

    def stamped(self, job: Job) -> Job:
        """``job`` as this pool's next run sends it: with the class and scripts this process
        means, and the run's number (see :class:`Job`)."""
        return replace(
            job,
            class_path=_class_path(ALGORITHMS[job.algorithm]),
            scripts=_scripts_of(job.algorithm),
            run=self._run,
        )

    def next_run(self) -> None:
        """Jobs made from now on belong to a new run; progress counts from zero."""
        self._run += 1
        with self.decided.get_lock():
            self.decided.value = 0

    def submit(self, job: Job) -> Future[tuple[pd.DataFrame, Any, float]]:
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
