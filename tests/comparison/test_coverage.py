"""How much of its span a trace covers: the share, the gaps, the pattern, and the warning.

The counts are checked on hand-made times whose answer is known (minute :05 of each hour, one
long gap), fed in parts cut anywhere; the sample access log, which holds only minute :05 of
each hour, is named so by the split that deals it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.comparison.coverage import CoverageCount
from simulator.comparison.split import split_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"
HOUR_MS, MINUTE_MS = 3_600_000, 60_000


def covered(t_ms: list[int], cuts: list[int] | None = None):
    count = CoverageCount(min(t_ms), max(t_ms))
    edges = [0, *(cuts or []), len(t_ms)]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        count.add(t_ms[lo:hi])
    return count.result()


def minute_five_of_each_hour(hours: int = 10) -> list[int]:
    """Three requests in minute :05 of each hour (at :05:00, :05:20, :05:59)."""
    return [h * HOUR_MS + 5 * MINUTE_MS + s * 1000 for h in range(hours) for s in (0, 20, 59)]


def test_minute_five_of_each_hour_is_named_with_its_share():
    cov = covered(minute_five_of_each_hour())
    # 10 covered minutes from 00:05 to 09:05: 9 hours and one minute of bins
    assert (cov.covered_bins, cov.bins, cov.bin_ms) == (10, 9 * 60 + 1, MINUTE_MS)
    assert cov.pattern == "requests only in minute :05 of each hour"
    assert "1.85 % of the 9 h span" in cov.line() and "minute :05" in cov.line()
    assert cov.stretch_median_ms == MINUTE_MS
    assert "as long as the covered stretches" in cov.warning(60_000)
    assert "starts a covered stretch" in cov.warning(10_000)


@pytest.mark.parametrize("cuts", [[1], [3, 4, 5], list(range(1, 30))])
def test_parts_cut_anywhere_give_the_same_coverage(cuts):
    times = minute_five_of_each_hour()
    assert covered(times, cuts) == covered(times)


def test_without_a_pattern_the_largest_gaps_are_listed():
    # every minute for 3 hours, but for a gap of 40 minutes and one of 10
    minutes = [m for m in range(180) if not 50 <= m < 90 and not 120 <= m < 130]
    cov = covered([m * MINUTE_MS + 1 for m in minutes])
    assert cov.pattern == ""
    assert cov.gaps == ((50 * MINUTE_MS, 40 * MINUTE_MS), (120 * MINUTE_MS, 10 * MINUTE_MS))
    assert "largest gaps: 40 min from 3,000 s, 10 min from 7,200 s" in cov.line()
    assert cov.warning(60_000) == ""  # 130 of 180 minutes covered: no warning


def test_a_trace_without_gaps_says_so():
    cov = covered(list(range(0, 30_000, 500)))
    assert cov.share == 1.0 and cov.bin_ms == 1000 and "no gaps" in cov.line()


def test_a_few_hours_of_each_day():
    days = [d * 86_400_000 + h * HOUR_MS + m * MINUTE_MS for d in range(4) for h in (9, 10)
            for m in range(0, 60, 2)]  # fmt: skip
    cov = covered(days)
    assert cov.pattern == "requests only in the hours from 09:00, 10:00 of each day"


def test_five_million_times_in_parts_are_counted():
    t = np.sort(np.random.default_rng(3).integers(0, 86_400_000 * 30, 5_000_000)).tolist()
    cov = covered(t, list(range(65_536, len(t), 65_536)))
    assert cov.bins == 30 * 1440 and cov.share > 0.99


def test_the_sample_log_covers_minute_five_of_each_hour(tmp_path):
    split = split_trace(SAMPLE, "clf", tmp_path)
    assert split.coverage is not None
    line = split.coverage.line()
    assert line.startswith("coverage: requests in 1.69 % of the 83 h span")
    assert "requests only in minute :05 of each hour" in line
    assert split.coverage.warning(60_000).startswith("warning: ")
