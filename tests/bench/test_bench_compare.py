"""``bench compare`` on a short log: the default backend's rows beside the fake server's, on one
Dask worker and on two, the scorecards equal (the bench stops when they are not), the ratios and
the goals printed, each task's progress on standard error; no time asserted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from simulator.bench.compare import bench_compare

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
@pytest.mark.server
def test_sigterm_during_a_run_ends_its_child_and_the_childs_cluster(tmp_path):
    """SIGTERM to the bench alone (a job runner's ``kill``, not a terminal's Ctrl-C, which the
    whole process group gets): the run's child process, its Dask workers and its servers end
    with it; the bench says so in one line and exits 128 + 15."""
    bench = subprocess.Popen(
        [sys.executable, "-m", "simulator", "bench", "compare", "--decisions", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
    )  # fmt: skip
    try:
        assert bench.stderr is not None
        below: set[psutil.Process] = set()
        for line in bench.stderr:  # the first task done: a child and its cluster are running
            if "tasks done" in line:
                direct = psutil.Process(bench.pid).children()
                below = set(psutil.Process(bench.pid).children(recursive=True))
                break
        assert below, "the bench ended before its first task was done"
        bench.send_signal(signal.SIGTERM)
        out, err = bench.communicate(timeout=180)
        assert bench.returncode == 128 + signal.SIGTERM, (out, err)
        # the bench waited for its child: none outlives it (an orphan would run on until its
        # next line of progress found the pipe closed - minutes, on a long log)
        assert not [p for p in direct if _running(p)], "the run's child outlived the bench"
        _, alive = psutil.wait_procs(list(below), timeout=60)
        assert not alive, [p.cmdline()[:3] for p in alive]
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
