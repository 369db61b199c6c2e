"""``bench compare`` on a short log: the default backend's rows beside the fake server's, on one
Dask worker and on two, the scorecards equal (the bench stops when they are not), the ratios and
the goals printed, each task's progress on standard error; no time asserted."""

from __future__ import annotations

import pytest

from simulator.bench.compare import bench_compare


@pytest.mark.slow
@pytest.mark.server
def test_bench_compare_prints_both_backends_and_their_ratios(capsys):
    said: list[str] = []
    bench_compare(lines=1_000, out=said.append)
    assert said[0].startswith("backend valkey (default): ")
    rows = [line.split()[:3] for line in said if line.endswith("MB") and "shards" in line]
    assert rows == [
        ["valkey", "1", "worker,"],
        ["valkey", "2", "workers,"],
        ["fakeredis", "1", "worker,"],
        ["fakeredis", "2", "workers,"],
    ]
    assert any(line.startswith("valkey: 1 -> 2 workers ") for line in said)
    assert any(line.startswith("valkey against fakeredis, 1 worker(s): ") for line in said)
    assert said[-2].startswith("goals for 5,000,000 lines (this log has 1,000): valkey on 2 ")
    assert said[-1].startswith("same scorecard everywhere: True")
    progress = capsys.readouterr().err
    assert "  valkey, 2 worker(s): 10 of 10 tasks done (" in progress
    assert "  fakeredis, 1 worker(s): 1 of 10 tasks done (" in progress
