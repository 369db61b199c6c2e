"""The explorer's runs: each algorithm's decision log for the settings, kept so that only what
changed runs again.

A control change asks for a new run. Each algorithm's log is the real Lua script deciding the
requests on the chosen backend (one :class:`~simulator.explore.job.Job` per algorithm, with the
policy the settings resolved: a traffic mix, or the chosen span of a trace file), kept in a
small cache so that a change that touches one algorithm (its own parameter) or none (the client
shown) runs only what changed. The cache is keyed on what decides a log: the policy, the
script's source (a script registered again under the same name runs again), and a trace file's
contents (a file edited in place is read again). A run can be cancelled: the caller's
``cancelled()`` is asked between decisions and a stale run stops there with
:class:`~simulator.explore.job.Cancelled`.

A trace file is read by the trace box's own rules (:mod:`simulator.explore.tracebox`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Future, wait
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms.scripts import load
from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import resolve_spec
from simulator.checks import ConfigError
from simulator.engine.realtime import runs_on_real_time
from simulator.explore.job import (
    EXACT,
    Cancelled,
    Job,
    Summary,
    decide,
    merged,
    summarise,
    summary_line,
    summary_of,
)
from simulator.explore.partial import Partial, partial_of
from simulator.explore.pool import NotHere, Pool, poolable
from simulator.explore.settings import Settings
from simulator.explore.tracebox import Traces, span_of

__all__ = [
    "Cancelled",
    "Summary",
    "Outcome",
    "Runner",
    "summarise",
    "summary_line",
    "seams_ms",
    "EXACT",
]


@dataclass(frozen=True)
class Outcome:
    """A finished run: the settings, each algorithm's log (in the order asked), the summaries,
    the algorithms left out and why, the time origin (ms) of the charts, and the wall time."""

    settings: Settings
    frames: dict[str, pd.DataFrame]
    summaries: dict[str, Summary]
    skipped: dict[str, str]
    origin_ms: int
    seconds: float

    @property
    def decisions(self) -> int:
        return sum(len(f) for f in self.frames.values())

    def clients(self) -> list[str]:
        """Client ids, the busiest first (ties by id)."""
        return list(self._clients)

    @cached_property
    def _clients(self) -> tuple[str, ...]:  # counted once per outcome, not at every redraw
        counts: dict[str, int] = {}
        for frame in self.frames.values():
            for client, n in frame["client"].value_counts().items():
                counts[str(client)] = counts.get(str(client), 0) + int(n)
        return tuple(sorted(counts, key=lambda c: (-counts[c], c)))


Progress = Callable[[int], None]
#: One algorithm's log and its summary.
Done = tuple[pd.DataFrame, Summary]
#: What a worker makes of a job: the log, its summary, the seconds it took, its instants.
Made = tuple[pd.DataFrame, Summary, float, "np.ndarray | None"]


class Runner:
    """Runs settings and keeps the last logs, so that only what changed runs again.

    ``backend_for(name)`` gives the backend of a run (fresh for ``fakeredis``; the caller may
    hand out one long-lived server, which is emptied before each run by ``reset``). With
    ``workers``, the fake server's runs go to that many worker processes: started by the first
    run that needs them, which waits for them (``autostart``), or else only when
    :meth:`start_workers` is called, and used once they are up (runs go in this process until
    then).
    """

    def __init__(
        self,
        backend_for: Callable[[str], Backend] | None = None,
        reset: Callable[[Backend], None] | None = None,
        cache_size: int = 240,
        most_requests: int = 500_000,
        workers: int = 0,
        *,
        autostart: bool = True,
    ) -> None:
        self.most_requests = most_requests
        self._backend_for = backend_for or (lambda name: DirectFakeBackend())
        self._reset = reset
        self._cache: OrderedDict[Hashable, Done] = OrderedDict()
        #: Each cached log's decisions' exact instants (a traffic mix on the fake server).
        self._instants: dict[Hashable, np.ndarray] = {}
        self._cache_size = cache_size
        self.traces = Traces()
        #: How many worker processes this runner may start (0: none, or no more).
        self.workers = workers
        self.autostart = autostart
        #: The worker processes for the fake server's runs (None: not started, or ended).
        self.pool: Pool | None = None
        #: Seconds a decision of each algorithm took in its last run: the dearest algorithms are
        #: handed to the workers first, so that no long run is left to start last.
        self._per_decision: dict[str, float] = {}

    def start_workers(self) -> None:
        """Start the worker processes (in the background), unless they are up or were ended."""
        if self.pool is None and self.workers > 0:
            self.pool = Pool(self.workers)

    def close(self) -> None:
        """End the worker processes, if any; the runs from now on go in this process."""
        self.workers = 0
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def _workers_now(self) -> Pool | None:
        """The pool a run should use now, if any (see the class' docstring)."""
        if self.autostart:
            self.start_workers()
        pool = self.pool
        return pool if pool is not None and (self.autostart or pool.ready()) else None

    def trace(self, path: str, fmt: str) -> pd.DataFrame:
        """The trace file as a frame, read again whenever its contents changed."""
        return self.traces.read(path, fmt)[1]

    def _requests(self, settings: Settings) -> tuple[pd.DataFrame | None, str, int]:
        """The trace's requests in the span (None for a traffic mix), its digest, and the
        charts' time origin (ms)."""
        if settings.trace is None:
            return None, "", 0
        digest, whole = self.traces.read(settings.trace, settings.trace_format)
        trace = span_of(whole, settings.trace_from_s, settings.trace_span_s)
        if settings.traffic.added and len(trace):
            trace = _with_added(trace, settings.traffic.added)
        if len(trace) > self.most_requests:
            raise ConfigError(
                f"trace file: {len(trace):,} requests in the span, at most "
                f"{self.most_requests:,} here (choose a shorter span (s))"
            )
        return trace, digest, int(trace["t_ms"].min()) if len(trace) else 0

    def run(
        self,
        settings: Settings,
        cancelled: Callable[[], bool] = lambda: False,
        progress: Progress | None = None,
    ) -> Outcome:
        """Every algorithm of ``settings``; :class:`Cancelled` as soon as ``cancelled()``.

        Algorithms not in the cache run on the worker processes when there are any (on the fake
        server; the longest first), the others one after another in this process."""
        start = time.perf_counter()
        trace, digest, origin_ms = self._requests(settings)
        done, skipped, missing = self._cached(settings, digest)
        counted = sum(len(f) for f, _ in done.values())
        if progress is not None and counted:
            progress(counted)
        jobs, parts = self._jobs(settings, missing, trace, digest)
        made: dict[str, np.ndarray] = {}  # each log's instants, where a run keeps them
        pool = self._workers_now() if resolve_spec(settings.backend).virtual_time else None
        if pool is not None:
            done.update(self._on_pool(pool, settings, jobs, cancelled, progress, counted, made))
        rest = {a: j for a, j in jobs.items() if a not in done}
        self._here(settings, rest, cancelled, progress, done, made)
        self._put_together(settings, parts, done, made)
        self._store(settings, digest, {a: done[a] for a in missing}, made)
        order = [a for a in settings.algorithms if a in done]
        return Outcome(
            settings,
            {a: done[a][0] for a in order},
            {a: done[a][1] for a in order},
            skipped,
            origin_ms,
            time.perf_counter() - start,
        )

    def _jobs(
        self, settings: Settings, missing: list[str], trace: pd.DataFrame | None, digest: str
    ) -> tuple[dict[str, Job], dict[str, Partial]]:
        """The job of each algorithm to run, and those made of an earlier run (only the
        clients a request was painted for decided again: :mod:`simulator.explore.partial`)."""
        jobs, parts = {}, {}
        for algorithm in missing:
            job = _job(settings, algorithm, trace)
            part = partial_of(
                settings,
                algorithm,
                partial(self._key, algorithm=algorithm, digest=digest),
                lambda key: key in self._cache and key in self._instants,
            )
            if part is not None:
                parts[algorithm] = part
                job = replace(job, only=part.only)
            jobs[algorithm] = job
        return jobs, parts

    def _put_together(
        self,
        settings: Settings,
        parts: dict[str, Partial],
        done: dict[str, Done],
        made: dict[str, np.ndarray],
    ) -> None:
        """Each log of some clients put in among the other clients' rows of its earlier run."""
        clients = settings.traffic.clients()
        for algorithm, part in parts.items():
            if algorithm not in done or algorithm not in made:
                continue
            earlier = (self._cache[part.key][0], self._instants[part.key])
            some = (done[algorithm][0], made[algorithm])
            frame, made[algorithm] = merged(earlier, some, list(part.names), clients)
            done[algorithm] = (frame, summary_of(frame, settings.policies[algorithm]))

    def _here(
        self,
        settings: Settings,
        jobs: dict[str, Job],
        cancelled: Callable[[], bool],
        progress: Progress | None,
        done: dict[str, Done],
        made: dict[str, np.ndarray],
    ) -> None:
        """The algorithms' logs and summaries, decided one after another in this process."""
        counted = sum(len(f) for f, _ in done.values())
        timed = resolve_spec(settings.backend).virtual_time
        for algorithm, job in jobs.items():
            began = time.perf_counter()
            instants: list[float] | None = [] if timed and job.trace is None else None
            frame = self._decide(
                settings, algorithm, job.trace, cancelled, progress, counted, instants, job
            )
            self._per_decision[algorithm] = (time.perf_counter() - began) / max(1, len(frame))
            done[algorithm] = (frame, summary_of(frame, settings.policies[algorithm]))
            if instants is not None:
                made[algorithm] = np.array(instants, dtype="float64")
            counted += len(frame)

    def _store(
        self, settings: Settings, digest: str, fresh: dict[str, Done], made: dict[str, np.ndarray]
    ) -> None:
        """Keep the logs just made (and their instants), giving up the least recently used past
        the cache's size."""
        for algorithm, log in fresh.items():
            key = self._key(settings, algorithm, digest)
            self._cache[key] = log
            if algorithm in made:
                self._instants[key] = made[algorithm]
        while len(self._cache) > self._cache_size:
            gone, _ = self._cache.popitem(last=False)
            self._instants.pop(gone, None)

    def _cached(
        self, settings: Settings, digest: str
    ) -> tuple[dict[str, Done], dict[str, str], list[str]]:
        """What the cache holds of ``settings``, the algorithms left out and why, and the
        algorithms to run."""
        done: dict[str, Done] = {}
        skipped: dict[str, str] = {}
        missing: list[str] = []
        for algorithm, policy in settings.policies.items():
            if runs_on_real_time(resolve_spec(settings.backend), policy):
                skipped[algorithm] = (
                    f"{algorithm}: its window is the key's TTL, so on a real server it runs on "
                    "real time; choose fakeredis to see it"
                )
                continue
            key = self._key(settings, algorithm, digest)
            if key in self._cache:
                self._cache.move_to_end(key)
                done[algorithm] = self._cache[key]
            else:
                missing.append(algorithm)
        return done, skipped, missing

    def _on_pool(
        self,
        pool: Pool,
        settings: Settings,
        jobs: dict[str, Job],
        cancelled: Callable[[], bool],
        progress: Progress | None,
        counted: int,
        made: dict[str, np.ndarray],
    ) -> dict[str, Done]:
        """The algorithms' logs and summaries from the worker processes (the instants of each
        log into ``made``). Those a worker cannot run (a user's script, its registry differs,
        or a worker died) are left out, for this process to run."""
        remote = [a for a in jobs if poolable(settings.policies[a].algorithm)]
        if not remote:
            return {}
        pool.next_run()
        futures: dict[Future[Made], str] = {}
        for algorithm in sorted(remote, key=lambda a: -self._per_decision.get(a, 0.0)):
            job = pool.stamped(jobs[algorithm])
            try:
                futures[pool.submit(job)] = algorithm
            except BrokenExecutor:  # a worker died before: the rest run here
                self.close()
                break
        got: dict[str, Done] = {}
        pending = set(futures)
        broken = False
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.005, return_when=FIRST_COMPLETED)
                if cancelled():
                    raise Cancelled()
                for future in finished:
                    broken |= self._collect(future, futures[future], got, made)
                if progress is not None:
                    progress(counted + pool.decided.value)
        except BaseException:
            pool.cancel_before()
            for future in pending:
                future.cancel()
            raise
        if broken:
            self.close()  # a worker died: this runner goes on in its own process
        return got

    def _collect(
        self,
        future: Future[Made],
        algorithm: str,
        got: dict[str, Done],
        made: dict[str, np.ndarray],
    ) -> bool:
        """A finished job's log into ``got`` (its instants into ``made``); True when its
        worker died."""
        try:
            frame, summary, seconds, instants = future.result()
        except NotHere:
            return False
        except BrokenExecutor:
            return True
        got[algorithm] = (frame, summary)
        if instants is not None:
            made[algorithm] = instants
        self._per_decision[algorithm] = seconds / max(1, len(frame))
        return False

    @staticmethod
    def _key(settings: Settings, algorithm: str, digest: str = "") -> Hashable:
        """What decides one algorithm's log: its policy (class, limit, window, parameters) and
        its scripts' sources, and the requests (a trace's contents and span, or the mix,
        duration, seed)."""
        policy = settings.policies[algorithm]
        scripts = tuple(load(name).sha for name in policy.algorithm.scripts)
        source: Any = (
            (
                digest,
                settings.trace_format,
                settings.trace_from_s,
                settings.trace_span_s,
                settings.traffic.added,
            )
            if settings.trace is not None
            else (settings.traffic, settings.duration_s, settings.seed)
        )
        return (policy, scripts, source, settings.backend)

    def _decide(
        self,
        settings: Settings,
        algorithm: str,
        trace: pd.DataFrame | None,
        cancelled: Callable[[], bool],
        progress: Progress | None,
        done: int,
        instants: list[float] | None = None,
        job: Job | None = None,
    ) -> pd.DataFrame:
        """``algorithm``'s log in this process (its ``job``, else the whole run's)."""
        backend = self._backend_for(settings.backend)
        if self._reset is not None:
            self._reset(backend)
        report = None if progress is None else (lambda n: progress(done + n))
        job = job or _job(settings, algorithm, trace)
        return decide(job, backend, cancelled, report, instants)


def _job(settings: Settings, algorithm: str, trace: pd.DataFrame | None) -> Job:
    """One algorithm's run of ``settings``: its policy, and the traffic mix or the trace's
    requests."""
    return Job(
        settings.policies[algorithm],
        traffic=settings.traffic,
        duration_s=settings.duration_s,
        seed=settings.seed,
        trace=trace,
    )


def _with_added(trace: pd.DataFrame, added: tuple[tuple[str, float, int], ...]) -> pd.DataFrame:
    """A trace's span with the requests a reader added (``at_s`` from its first request)."""
    first = int(trace["t_ms"].min())
    extra = pd.DataFrame(
        {
            "t_ms": [first + round(at_s * 1000) for _, at_s, n in added for _ in range(n)],
            "client": [c for c, _, n in added for _ in range(n)],
        }
    )
    both = pd.concat([trace, extra.astype({"t_ms": trace["t_ms"].dtype})], ignore_index=True)
    return both.sort_values("t_ms", kind="stable").reset_index(drop=True)


def seams_ms(outcome: Outcome, until_ms: int) -> np.ndarray:
    """Where the clock-aligned windows start, on the charts' time axis (ms from the origin)."""
    w = outcome.settings.window_ms
    first = (-outcome.origin_ms) % w
    return np.arange(first, until_ms + 1, w, dtype="int64")
