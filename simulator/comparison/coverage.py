"""How much of its span a trace actually covers, found on the one pass that deals it.

A log cut from a bigger one often keeps a slice of every hour (minute :05 of each hour, say):
its first and last requests are days apart, yet almost all of that time holds nothing. A limiter
replayed over it decides on the slices only, and a window that reaches back out of a slice
counts none of the traffic that was left out, so its decisions there may not be the real ones.

The span is cut into bins (a minute on a trace of two hours or more, else a second); a bin
holding a request is *covered*. :class:`CoverageCount` takes the requests in time order, a part
at a time (numpy over each part, nothing kept per request), and :class:`Coverage` says what it
found: the share of the bins covered, the largest gaps, the covered stretches' median length,
and a pattern when the covered bins keep to a few minutes of each hour (or hours of each day).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from simulator.checks import ConfigError

__all__ = ["Coverage", "CoverageCount", "WARN_BELOW", "GAPS_SHOWN"]

#: A trace that covers less than this share of its span is warned about.
WARN_BELOW = 0.5
#: The largest gaps kept and named.
GAPS_SHOWN = 3
_MINUTE_MS, _HOUR_MS, _DAY_MS = 60_000, 3_600_000, 86_400_000
#: At most this many minutes of an hour (hours of a day) make a pattern worth naming.
_FEW_SLOTS = 6


def _duration(ms: float) -> str:
    """A span in the unit a reader thinks in: 83 h, 25 min, 40 s, 9.5 d."""
    if ms >= 7 * _DAY_MS:
        return f"{ms / _DAY_MS:,.1f} d"
    if ms >= 2 * _HOUR_MS:
        return f"{ms / _HOUR_MS:,.0f} h"
    if ms >= 2 * _MINUTE_MS:
        return f"{ms / _MINUTE_MS:,.0f} min"
    return f"{ms / 1000:,.{0 if ms >= 10_000 else 1}f} s"


def _when(t_ms: int) -> str:
    if t_ms >= 10**11:  # an access log's times: ms since the epoch
        return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{t_ms / 1000:,.0f} s"


@dataclass(frozen=True)
class Coverage:
    """What :class:`CoverageCount` found (see the module's story)."""

    t_min_ms: int
    t_max_ms: int
    bin_ms: int
    bins: int
    covered_bins: int
    #: the largest gaps, largest first: (start_ms, length_ms)
    gaps: tuple[tuple[int, int], ...]
    #: the median length of a covered stretch (consecutive covered bins), ms
    stretch_median_ms: int
    #: e.g. "requests only in minute :05 of each hour"; empty when there is none
    pattern: str

    def __post_init__(self) -> None:
        if not 0 < self.covered_bins <= self.bins:
            raise ConfigError(f"coverage: {self.covered_bins} covered bins of {self.bins}")

    @property
    def share(self) -> float:
        """The share of the span's bins that hold a request (0..1)."""
        return self.covered_bins / self.bins

    @property
    def span_ms(self) -> int:
        return self.bins * self.bin_ms

    def line(self) -> str:
        """One line: the share covered, and the pattern or the largest gaps."""
        unit = "minutes" if self.bin_ms == _MINUTE_MS else "seconds"
        text = (
            f"coverage: requests in {100 * self.share:.2f} % of the {_duration(self.span_ms)} "
            f"span ({self.covered_bins:,} of {self.bins:,} {unit} hold any)"
        )
        if self.pattern:
            return f"{text}: {self.pattern}"
        if self.gaps:
            shown = ", ".join(f"{_duration(n)} from {_when(t)}" for t, n in self.gaps)
            return f"{text}; largest gaps: {shown}"
        return f"{text}; no gaps"

    def warning(self, longest_window_ms: int) -> str:
        """Why decisions may differ on the traffic that was not sampled (empty: no warning)."""
        if self.share >= WARN_BELOW:
            return ""
        window = _duration(longest_window_ms)
        stretch = _duration(self.stretch_median_ms)
        if longest_window_ms >= self.stretch_median_ms:
            how = (
                f"the windows (up to {window}) are as long as the covered stretches "
                f"(median {stretch}) or longer, so almost every window reaches into time the "
                "trace does not hold"
            )
        else:
            how = (
                f"a window (up to {window}) that starts a covered stretch (median {stretch}) "
                "reaches into time the trace does not hold"
            )
        return (
            f"warning: {how}; if that time had traffic that was not sampled, the decisions "
            "may differ on it: read the figures as those of the covered stretches only"
        )


def _median(counts: Counter[int]) -> int:
    """The median of values given as counts (the upper one of an even number); 1 if none."""
    half, seen = sum(counts.values()) // 2, 0
    for value in sorted(counts):
        seen += counts[value]
        if seen > half:
            return value
    return 1


class CoverageCount:
    """Takes a trace's times in time order, a part at a time; :meth:`result` says what it saw."""

    def __init__(self, t_min_ms: int, t_max_ms: int) -> None:
        span = t_max_ms - t_min_ms
        self.bin_ms = _MINUTE_MS if span >= 2 * _HOUR_MS else 1000
        self.t_min_ms, self.t_max_ms = t_min_ms, t_max_ms
        self.covered = 0
        self.last: int | None = None  # the last covered bin seen
        self.run = 0  # covered bins in the stretch that is still open
        self.runs: Counter[int] = Counter()  # stretch length in bins -> how many
        self.gaps: list[tuple[int, int]] = []  # a heap of (empty bins, first empty bin)
        self.minutes = np.zeros(60, dtype=np.int64)  # covered bins per minute of the hour
        self.hours = np.zeros(24, dtype=np.int64)  # covered bins per hour of the day
        self.hours_seen = 0
        self.last_hour: int | None = None

    def add(self, t_ms: Sequence[int]) -> None:
        """The next times, in time order (each part after the last)."""
        if not len(t_ms):
            return
        b = np.asarray(t_ms, dtype=np.int64) // self.bin_ms
        b = b[np.concatenate(([True], b[1:] != b[:-1]))]
        if self.last is not None and b[0] == self.last:
            b = b[1:]
            if not b.size:
                return
        prev = np.concatenate(([b[0] - 1 if self.last is None else self.last], b[:-1]))
        empty = b - prev - 1
        self._gaps(empty, b)
        self._runs(empty)
        self.covered += int(b.size)
        start = b * self.bin_ms
        self.minutes += np.bincount((start // _MINUTE_MS) % 60, minlength=60)
        self.hours += np.bincount((start // _HOUR_MS) % 24, minlength=24)
        hours = np.unique(start // _HOUR_MS)
        self.hours_seen += int(hours.size) - int(hours[0] == self.last_hour)
        self.last_hour = int(hours[-1])
        self.last = int(b[-1])

    def _gaps(self, empty: np.ndarray, b: np.ndarray) -> None:
        at = np.flatnonzero(empty > 0)
        if at.size > GAPS_SHOWN:
            at = at[np.argpartition(empty[at], -GAPS_SHOWN)[-GAPS_SHOWN:]]
        for i in at.tolist():
            heapq.heappush(self.gaps, (int(empty[i]), int(b[i] - empty[i])))
            if len(self.gaps) > GAPS_SHOWN:
                heapq.heappop(self.gaps)

    def _runs(self, empty: np.ndarray) -> None:
        """Stretches closed by a gap counted by length; the open one carried on."""
        breaks = np.flatnonzero(empty > 0)
        if not breaks.size:
            self.run += int(empty.size)
            return
        first = self.run + int(breaks[0])  # the open stretch, closed by the first gap
        if first:
            self.runs[first] += 1
        self.runs.update(np.diff(breaks).tolist())
        self.run = int(empty.size - breaks[-1])

    def result(self) -> Coverage:
        runs = self.runs + Counter({self.run: 1} if self.run else {})
        first, last = self.t_min_ms // self.bin_ms, self.t_max_ms // self.bin_ms
        return Coverage(
            self.t_min_ms,
            self.t_max_ms,
            self.bin_ms,
            int(last - first + 1),
            max(1, self.covered),
            tuple(
                (b * self.bin_ms, n * self.bin_ms)
                for n, b in sorted(self.gaps, key=lambda g: (-g[0], g[1]))
            ),
            _median(runs) * self.bin_ms,
            self._pattern(first, last),
        )

    def _pattern(self, first: int, last: int) -> str:
        """A few minutes of each hour, or a few hours of each day, holding every request."""
        span_ms = (last - first + 1) * self.bin_ms
        hours_in_span = (self.t_max_ms // _HOUR_MS) - (self.t_min_ms // _HOUR_MS) + 1
        if self.bin_ms == _MINUTE_MS and span_ms >= 2 * _HOUR_MS:
            minutes = np.flatnonzero(self.minutes).tolist()
            if len(minutes) <= _FEW_SLOTS:
                which = ", ".join(f":{m:02d}" for m in minutes)
                which_hours = (
                    "each hour"
                    if self.hours_seen >= hours_in_span
                    else f"{self.hours_seen:,} of the {hours_in_span:,} hours"
                )
                return f"requests only in minute{'s' if len(minutes) > 1 else ''} {which} of {which_hours}"
        if span_ms >= 2 * _DAY_MS:
            slots = np.flatnonzero(self.hours).tolist()
            if len(slots) <= 2 * _FEW_SLOTS:
                which = ", ".join(f"{h:02d}:00" for h in slots)
                return f"requests only in the hours from {which} of each day"
        return ""
