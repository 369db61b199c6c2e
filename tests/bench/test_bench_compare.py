"""``bench compare`` on a short log: the default backend's row beside the fake server's, the
scorecards equal (the bench stops when they are not), the ratios printed; no time asserted."""

from __future__ import annotations

import pytest

from simulator.bench.compare import bench_compare


@pytest.mark.slow
@pytest.mark.server
def test_bench_compare_prints_both_backends_and_their_ratios():
    said: list[str] = []
    bench_compare(lines=1_000, out=said.append)
    assert said[0].startswith("backend valkey (default): ")
    rows = [line.split()[:2] for line in said if line.split()[1:2] in (["serial,"], ["2"])]
    assert rows == [
        ["valkey", "serial,"],
        ["valkey", "2"],
        ["fakeredis", "serial,"],
        ["fakeredis", "2"],
    ]
    assert any(line.startswith("valkey against fakeredis, 1 worker(s): ") for line in said)
    assert said[-1].startswith("same scorecard everywhere: True")
