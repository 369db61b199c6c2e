"""GCRA: a fresh key's first request (cost <= burst) is always admitted, on every path.

The decision ``now < (tat + cost x T) - tau`` summed in floats once refused the first request of
a fresh key: at 3 per 1000 ms, burst 1, t = 2000 it came to 2000.0000000000002. The script and
its references now measure it from now (``now - tat < (cost - burst) x T``), where a fresh key's
side is exactly 0. This walks the (limit, window, burst) grid that search found 190 such points
in, through the reference, the bulk kernel and the script on the fake server.
"""

from __future__ import annotations

import itertools

import numpy as np

from simulator.algorithms.gcra import GCRARef, bulk
from simulator.policy import resolve

LIMITS = range(1, 40)
WINDOWS_MS = (999, 1000, 3000, 7000, 60_000)
BURSTS = range(1, 6)
TIMES_MS = (1, 2000, 8000, 59_999, 134_217_727, 10**12 + 7)
GRID = list(itertools.product(LIMITS, WINDOWS_MS, BURSTS))


def test_the_reference_and_the_bulk_kernel_admit_a_fresh_keys_first_request():
    refused = []
    for limit, window_ms, burst in GRID:
        for cost in range(1, burst + 1):
            for t in TIMES_MS:
                if not GCRARef(limit, window_ms, burst=burst).decide("a", t, cost).allowed:
                    refused.append(("reference", limit, window_ms, burst, cost, t))
        ok, _ = bulk(
            np.arange(len(TIMES_MS)), np.array(TIMES_MS), limit, window_ms, None, {"burst": burst}
        )
        # a client each: every request is a fresh key's first
        if not ok.all():
            refused.append(("bulk", limit, window_ms, burst))
    assert refused == []


def test_the_script_admits_a_fresh_keys_first_request(fake, clock):
    refused = []
    for i, (limit, window_ms, burst) in enumerate(GRID):
        limiter = resolve("gcra", limit, window_ms, {"burst": burst}).limiter(fake)
        for j, t in enumerate((2000, 134_217_727)):
            clock.t_ms = t
            if not limiter.decide(f"c{i}-{j}", t, burst).allowed:
                refused.append((limit, window_ms, burst, t))
    assert refused == []


def test_the_reviewed_point_is_admitted_by_the_script(fake, clock):
    limiter = resolve("gcra", 3, 1000, {"burst": 1}).limiter(fake)
    clock.t_ms = 2000
    assert limiter.decide("a", 2000).allowed
