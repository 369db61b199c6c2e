"""The explorer's runs: each algorithm's decision log for the settings, and what it says in one line.

A control change asks for a new run. Each algorithm's log is the real Lua script deciding the
requests on the chosen backend (:func:`simulator.engine.run.simulate` for a traffic mix,
:func:`simulator.playback.run.replay` for a trace file, or the chosen span of it), kept in a
small cache so that a change that touches one algorithm (its own parameter) or none (the client
shown) runs only what changed. The cache is keyed on what decides a log: the settings that reach
the algorithm, the script's source (a script registered again under the same name runs again),
and a trace file's contents (a file edited in place is read again). A run can be cancelled: the
caller's ``cancelled()`` is asked between decisions and a stale run stops there with
:class:`Cancelled`.

The summary line per algorithm: *admitted A of N, most one client got in any window M
(M/limit x), wrongly admitted X, wrongly refused Y*, where M is the most one client got admitted
in any trailing window (t - W, t], and X and Y compare each decision with the exact sliding log
given the same requests: admitted where the log would refuse, refused where it would admit.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, wait
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.scripts import load
from simulator.backends import Backend
from simulator.backends.direct import DirectFakeBackend
from simulator.backends.specs import resolve_spec
from simulator.checks import ConfigError
from simulator.explore.pool import Job, NotHere, Pool, decide, poolable
from simulator.explore.settings import TRACE_FORMATS, Settings
from simulator.fastref import decide_bulk
from simulator.metrics import rolling_admitted
from simulator.playback.traces import TraceError, read_trace

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

#: The algorithm every other is compared with: the exact log of admitted times.
EXACT = "sliding_log"


class Cancelled(Exception):
    """The run was overtaken by a newer one and stopped."""


@dataclass(frozen=True)
class Summary:
    """One algorithm's run in numbers (see the module's docstring)."""

    algorithm: str
    requests: int
    admitted: int
    most_in_window: int
    limit: int
    wrongly_admitted: int
    wrongly_refused: int

    @property
    def ratio(self) -> float:
        return self.most_in_window / self.limit

    @property
    def differs_from_exact(self) -> int:
        """Decisions the exact log, given the same requests, would have made the other way."""
        return self.wrongly_admitted + self.wrongly_refused


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


def summarise(frame: pd.DataFrame, algorithm: str, limit: int, window_ms: int) -> Summary:
    """The summary of one algorithm's log (its own requests also given to the exact log)."""
    allowed = frame["allowed"].to_numpy(dtype=bool)
    if len(frame) == 0:
        return Summary(algorithm, 0, 0, 0, limit, 0, 0)
    codes, _ = pd.factorize(frame["client"], sort=False)
    t_ms = frame["t_ms"].to_numpy(dtype="int64")
    cost = frame["cost"].to_numpy(dtype="int64") if "cost" in frame else None
    exact = decide_bulk(EXACT, codes, t_ms, limit, window_ms, cost=cost)
    return Summary(
        algorithm=algorithm,
        requests=len(frame),
        admitted=int(allowed.sum()),
        most_in_window=int(rolling_admitted(frame, window_ms).max()),
        limit=limit,
        wrongly_admitted=int((allowed & ~exact.allowed).sum()),
        wrongly_refused=int((~allowed & exact.allowed).sum()),
    )


def summary_line(s: Summary) -> str:
    """``name: admitted A of N, most one client got in any window M (R× the limit), wrongly
    admitted X, wrongly refused Y`` - the line a reader (or a test) reads."""
    return (
        f"{s.algorithm}: admitted {s.admitted:,} of {s.requests:,}, most one client got in any "
        f"window {s.most_in_window:,} ({s.ratio:.2f}× the limit), wrongly admitted "
        f"{s.wrongly_admitted:,}, wrongly refused {s.wrongly_refused:,}"
    )


Progress = Callable[[int], None]


class Runner:
    """Runs settings and keeps the last logs, so that only what changed runs again.

    ``backend_for(name)`` gives the backend of a run (fresh for ``fakeredis``; the caller may
    hand out one long-lived server, which is emptied before each run by ``reset``).
    """

    def __init__(
        self,
        backend_for: Callable[[str], Backend] | None = None,
        reset: Callable[[Backend], None] | None = None,
        cache_size: int = 240,
        most_requests: int = 500_000,
        workers: int = 0,
    ) -> None:
        self.most_requests = most_requests
        self._backend_for = backend_for or (lambda name: DirectFakeBackend())
        self._reset = reset
        self._cache: OrderedDict[Hashable, tuple[pd.DataFrame, Summary]] = OrderedDict()
        self._cache_size = cache_size
        self._traces: dict[tuple[str, str, str, int], pd.DataFrame] = {}
        #: Worker processes for the fake server's runs (None: every run in this process).
        self.pool = Pool(workers) if workers > 0 else None
        #: Seconds a decision of each algorithm took in its last run: the dearest algorithms are
        #: handed to the workers first, so that no long run is left to start last.
        self._per_decision: dict[str, float] = {}

    def close(self) -> None:
        """End the worker processes, if any."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def trace(self, path: str, fmt: str) -> pd.DataFrame:
        """The trace file as a frame, read again whenever its contents changed."""
        return self._trace(path, fmt)[1]

    def _trace(self, path: str, fmt: str) -> tuple[str, pd.DataFrame]:
        """The trace's digest (of its bytes) and its frame; a ConfigError naming the trace box,
        never quoting the file (the page may be seen by someone who may not read it)."""
        if not path.strip():
            raise ConfigError("trace file: empty; give the path of a CSV or an access log")
        file = Path(path).expanduser()
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"trace file: cannot read {path} ({exc.strerror})") from None
        digest = hashlib.sha1(data).hexdigest()
        key = (str(file.resolve()), fmt, digest, 0)
        if key not in self._traces:
            try:
                frame = read_trace(file, fmt)
            except (TraceError, ConfigError) as exc:
                raise ConfigError(_unquoted(str(exc), path, fmt)) from None
            self._traces.clear()
            self._traces[key] = frame
        return digest, self._traces[key]

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
        trace, digest = None, ""
        if settings.trace is not None:
            digest, whole = self._trace(settings.trace, settings.trace_format)
            trace = span_of(whole, settings.trace_from_s, settings.trace_span_s)
            if len(trace) > self.most_requests:
                raise ConfigError(
                    f"trace file: {len(trace):,} requests in the span, at most "
                    f"{self.most_requests:,} here (choose a shorter span (s))"
                )
        origin_ms = int(trace["t_ms"].min()) if trace is not None and len(trace) else 0
        done: dict[str, tuple[pd.DataFrame, Summary]] = {}
        skipped: dict[str, str] = {}
        missing: list[str] = []
        for algorithm in settings.algorithms:
            if (
                not resolve_spec(settings.backend).virtual_time
                and ALGORITHMS[algorithm].uses_server_time
            ):
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
        counted = sum(len(f) for f, _ in done.values())
        if progress is not None and counted:
            progress(counted)
        if self.pool is not None and resolve_spec(settings.backend).virtual_time:
            remote = [a for a in missing if poolable(a)]
            if remote:
                done.update(self._on_pool(settings, remote, trace, cancelled, progress, counted))
                counted = sum(len(f) for f, _ in done.values())
        for algorithm in missing:
            if algorithm in done:
                continue
            began = time.perf_counter()
            frame = self._decide(settings, algorithm, trace, cancelled, progress, counted)
            self._per_decision[algorithm] = (time.perf_counter() - began) / max(1, len(frame))
            done[algorithm] = (
                frame,
                summarise(frame, algorithm, settings.limit, settings.window_ms),
            )
            counted += len(frame)
        for algorithm in missing:
            self._cache[self._key(settings, algorithm, digest)] = done[algorithm]
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        order = [a for a in settings.algorithms if a in done]
        seconds = time.perf_counter() - start
        return Outcome(
            settings,
            {a: done[a][0] for a in order},
            {a: done[a][1] for a in order},
            skipped,
            origin_ms,
            seconds,
        )

    def _on_pool(
        self,
        settings: Settings,
        algorithms: list[str],
        trace: pd.DataFrame | None,
        cancelled: Callable[[], bool],
        progress: Progress | None,
        counted: int,
    ) -> dict[str, tuple[pd.DataFrame, Summary]]:
        """The algorithms' logs and summaries from the worker processes. Those a worker cannot
        run (its registry differs, or a worker died) are left out, for this process to run."""
        pool = self.pool
        assert pool is not None
        pool.next_run()
        futures = {}
        for algorithm in sorted(algorithms, key=lambda a: -self._per_decision.get(a, 0.0)):
            job = pool.stamped(_job(settings, algorithm, trace))
            try:
                futures[pool.submit(job)] = algorithm
            except BrokenExecutor:  # a worker died before: the rest run here
                self.close()
                break
        got: dict[str, tuple[pd.DataFrame, Summary]] = {}
        pending = set(futures)
        broken = False
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.005, return_when=FIRST_COMPLETED)
                if cancelled():
                    raise Cancelled()
                for future in finished:
                    algorithm = futures[future]
                    try:
                        frame, summary, seconds = future.result()
                    except NotHere:
                        continue
                    except BrokenExecutor:
                        broken = True
                        continue
                    got[algorithm] = (frame, summary)
                    self._per_decision[algorithm] = seconds / max(1, len(frame))
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

    @staticmethod
    def _key(settings: Settings, algorithm: str, digest: str = "") -> Hashable:
        """What decides one algorithm's log: its class and scripts' sources, the settings that
        reach it, and the requests (a trace's contents and span, or the mix, duration, seed)."""
        cls = ALGORITHMS[algorithm]
        scripts = tuple(load(name).sha for name in cls.scripts)
        params = tuple(sorted(settings.params_of(algorithm).items()))
        source: Any = (
            (digest, settings.trace_format, settings.trace_from_s, settings.trace_span_s)
            if settings.trace is not None
            else (settings.traffic, settings.duration_s, settings.seed)
        )
        return (cls, scripts, settings.limit, settings.window_ms, params, source, settings.backend)

    def _decide(
        self,
        settings: Settings,
        algorithm: str,
        trace: pd.DataFrame | None,
        cancelled: Callable[[], bool],
        progress: Progress | None,
        done: int,
    ) -> pd.DataFrame:
        backend = self._backend_for(settings.backend)
        if self._reset is not None:
            self._reset(backend)
        report = None if progress is None else (lambda n: progress(done + n))
        return decide(_job(settings, algorithm, trace), backend, cancelled, report)


def _job(settings: Settings, algorithm: str, trace: pd.DataFrame | None) -> Job:
    """One algorithm's run of ``settings``: the traffic mix, or the trace's requests."""
    return Job(
        algorithm,
        settings.limit,
        settings.window_ms,
        settings.params_of(algorithm),
        traffic=settings.traffic,
        duration_s=settings.duration_s,
        seed=settings.seed,
        trace=trace,
    )


def span_of(trace: pd.DataFrame, from_s: float, span_s: float) -> pd.DataFrame:
    """The requests of ``trace`` from ``from_s`` seconds after its first request, for ``span_s``
    seconds (0: to the end)."""
    if not len(trace) or (from_s <= 0 and span_s <= 0):
        return trace
    first = int(trace["t_ms"].min())
    t = trace["t_ms"].to_numpy(dtype="int64")
    lo = first + round(from_s * 1000)
    keep = t >= lo
    if span_s > 0:
        keep &= t < lo + round(span_s * 1000)
    return trace[keep].reset_index(drop=True)


def _unquoted(message: str, path: str, fmt: str) -> str:
    """A trace reader's message without the file's contents: where, and what it expected."""
    where = re.match(r"^(.*?:\d+):", message)
    label = TRACE_FORMATS.get(fmt, fmt)
    if where:
        line = where.group(1).rsplit(":", 1)[1]
        return f"trace file: line {line} of {path} is not a line of a {label} file"
    if "empty" in message:
        return f"trace file: {path} is empty"
    return f"trace file: {path} cannot be read as a {label} file"


def seams_ms(outcome: Outcome, until_ms: int) -> np.ndarray:
    """Where the clock-aligned windows start, on the charts' time axis (ms from the origin)."""
    w = outcome.settings.window_ms
    first = (-outcome.origin_ms) % w
    return np.arange(first, until_ms + 1, w, dtype="int64")
