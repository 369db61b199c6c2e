"""The explorer's runs: each algorithm's decision log for the settings, and what it says in one line.

A control change asks for a new run. Each algorithm's log is the real Lua script deciding the
requests on the chosen backend (:func:`simulator.engine.run.simulate` for a traffic mix,
:func:`simulator.playback.run.replay` for a trace file), kept in a small cache so that a change that
touches one algorithm (its own parameter) or none (the client shown) runs only what changed. A
run can be cancelled: the caller's ``cancelled()`` is asked between decisions and a stale run
stops there with :class:`Cancelled`.

The summary line per algorithm: *admitted A of N, most in any window M (M/limit x), decided
differently from the exact log D*, where M is the most one client got admitted in any trailing
window (t - W, t] and D counts the requests the exact sliding log, given the same requests, would
have decided the other way.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.backends import Backend, FakeRedisBackend
from simulator.engine.model import Row
from simulator.engine.run import simulate
from simulator.explore.settings import Settings, scenario_for
from simulator.fastref import decide_bulk
from simulator.metrics import rolling_admitted
from simulator.playback.run import replay
from simulator.playback.traces import read_trace

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
    differs_from_exact: int

    @property
    def ratio(self) -> float:
        return self.most_in_window / self.limit


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
        counts: dict[str, int] = {}
        for frame in self.frames.values():
            for client, n in frame["client"].value_counts().items():
                counts[str(client)] = counts.get(str(client), 0) + int(n)
        return sorted(counts, key=lambda c: (-counts[c], c))


def summarise(frame: pd.DataFrame, algorithm: str, limit: int, window_ms: int) -> Summary:
    """The summary of one algorithm's log (its own requests also given to the exact log)."""
    allowed = frame["allowed"].to_numpy(dtype=bool)
    if len(frame) == 0:
        return Summary(algorithm, 0, 0, 0, limit, 0)
    codes, _ = pd.factorize(frame["client"], sort=False)
    t_ms = frame["t_ms"].to_numpy(dtype="int64")
    exact = decide_bulk(EXACT, codes, t_ms, limit, window_ms)
    return Summary(
        algorithm=algorithm,
        requests=len(frame),
        admitted=int(allowed.sum()),
        most_in_window=int(rolling_admitted(frame, window_ms).max()),
        limit=limit,
        differs_from_exact=int((exact.allowed != allowed).sum()),
    )


def summary_line(s: Summary) -> str:
    """``name: admitted A of N, most in any window M (R× the limit), decided differently from the
    exact log D`` - the line a reader (or a test) reads."""
    return (
        f"{s.algorithm}: admitted {s.admitted:,} of {s.requests:,}, most in any window "
        f"{s.most_in_window:,} ({s.ratio:.2f}× the limit), decided differently from the exact "
        f"log {s.differs_from_exact:,}"
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
        cache_size: int = 48,
    ) -> None:
        self._backend_for = backend_for or (lambda name: FakeRedisBackend())
        self._reset = reset
        self._cache: OrderedDict[Hashable, pd.DataFrame] = OrderedDict()
        self._cache_size = cache_size
        self._traces: dict[tuple[str, str, int, int], pd.DataFrame] = {}

    def trace(self, path: str, fmt: str) -> pd.DataFrame:
        """The trace file as a frame (read again only when the file changed)."""
        st = Path(path).stat()
        key = (str(Path(path).resolve()), fmt, st.st_mtime_ns, st.st_size)
        if key not in self._traces:
            self._traces.clear()
            self._traces[key] = read_trace(path, fmt)
        return self._traces[key]

    def run(
        self,
        settings: Settings,
        cancelled: Callable[[], bool] = lambda: False,
        progress: Progress | None = None,
    ) -> Outcome:
        """Every algorithm of ``settings``; :class:`Cancelled` as soon as ``cancelled()``."""
        start = time.perf_counter()
        trace = self.trace(settings.trace, settings.trace_format) if settings.trace else None
        origin_ms = int(trace["t_ms"].min()) if trace is not None and len(trace) else 0
        frames: dict[str, pd.DataFrame] = {}
        skipped: dict[str, str] = {}
        done = 0
        for algorithm in settings.algorithms:
            if settings.backend != "fakeredis" and ALGORITHMS[algorithm].uses_server_time:
                skipped[algorithm] = (
                    f"{algorithm}: its window is the key's TTL, so on a real server it runs on "
                    "real time; choose fakeredis to see it"
                )
                continue
            key = self._key(settings, algorithm)
            frame = self._cache.get(key)
            if frame is None:
                frame = self._decide(settings, algorithm, trace, cancelled, progress, done)
                self._cache[key] = frame
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
            done += len(frame)
            if progress is not None:
                progress(done)
            frames[algorithm] = frame
        summaries = {
            a: summarise(f, a, settings.limit, settings.window_ms) for a, f in frames.items()
        }
        seconds = time.perf_counter() - start
        return Outcome(settings, frames, summaries, skipped, origin_ms, seconds)

    @staticmethod
    def _key(settings: Settings, algorithm: str) -> Hashable:
        params = tuple(sorted(settings.params_of(algorithm).items()))
        source: Any = (
            (settings.trace, settings.trace_format)
            if settings.trace
            else (settings.traffic, settings.duration_s, settings.seed)
        )
        return (algorithm, settings.limit, settings.window_ms, params, source, settings.backend)

    def _decide(
        self,
        settings: Settings,
        algorithm: str,
        trace: pd.DataFrame | None,
        cancelled: Callable[[], bool],
        progress: Progress | None,
        done: int,
    ) -> pd.DataFrame:
        seen = [0]

        def on_rows(rows: Sequence[Row]) -> None:  # a list, or a replay's Decisions batch
            seen[0] += len(rows)
            if cancelled():
                raise Cancelled()
            if progress is not None and seen[0] % 250 < len(rows):
                progress(done + seen[0])

        backend = self._backend_for(settings.backend)
        if self._reset is not None:
            self._reset(backend)
        if trace is not None:
            return replay(
                trace,
                algorithm,
                settings.limit,
                settings.window_ms,
                backend,
                on_rows=on_rows,
                params=settings.params_of(algorithm),
            ).reset_index(drop=True)
        return simulate(scenario_for(settings, algorithm), backend, on_rows=on_rows)


def seams_ms(outcome: Outcome, until_ms: int) -> np.ndarray:
    """Where the clock-aligned windows start, on the charts' time axis (ms from the origin)."""
    w = outcome.settings.window_ms
    first = (-outcome.origin_ms) % w
    return np.arange(first, until_ms + 1, w, dtype="int64")
