"""The explorer's worker processes: the same logs as one process, stopped when asked, and gone
with the process that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from multiprocessing import Value
from pathlib import Path

import pandas as pd
import psutil
import pytest

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.scripts import load
from simulator.explore import Runner, Settings, Traffic
from simulator.explore import pool as pool_module
from simulator.explore.job import Cancelled, Job
from simulator.explore.pool import NotHere, default_workers, poolable
from simulator.policy import resolve

ROOT = Path(__file__).resolve().parents[2]
SHORT = Settings(duration_s=20, traffic=Traffic(polite=1, on_off=1))


@pytest.fixture(scope="module")
def runner():
    runner = Runner(workers=2)
    yield runner
    runner.close()


def _same(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert list(a) == list(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], obj=name)


def test_the_workers_decide_what_one_process_decides(runner):
    alone = Runner().run(SHORT)
    shared = runner.run(SHORT)
    assert runner.pool is not None, "the pool stayed up"
    _same(alone.frames, shared.frames)
    assert alone.summaries == shared.summaries
    assert list(shared.frames) == list(SHORT.algorithms)  # in the order asked, whoever ran first


def test_a_trace_is_decided_on_the_workers_as_here(runner, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(
        "t_ms,client,cost\n" + "".join(f"{i * 37},c{i % 5},{1 + i % 3}\n" for i in range(600))
    )
    settings = Settings(limit=4, window_s=1.0, trace=str(trace), trace_from_s=2, trace_span_s=15)
    alone, shared = Runner().run(settings), runner.run(settings)
    _same(alone.frames, shared.frames)
    assert alone.origin_ms == shared.origin_ms


def test_a_script_the_workers_do_not_know_is_decided_here(runner, forever):  # noqa: F811
    assert not poolable(ALGORITHMS["forever"]) and poolable(ALGORITHMS["sliding_log"])
    settings = Settings(algorithms=("forever", "sliding_log"), limit=3, duration_s=20)
    _same(Runner().run(settings).frames, runner.run(settings).frames)


def test_a_worker_refuses_a_job_whose_script_it_does_not_have():
    job = Job(resolve("sliding_log", 3, 1000), scripts=("0" * 40,))
    with pytest.raises(NotHere):
        pool_module._run_job(job)


def test_a_cancelled_job_stops_at_its_first_decisions(monkeypatch):
    stop_before, decided = Value("q", 5, lock=False), Value("q", 0)
    monkeypatch.setattr(pool_module, "_shared", {"stop_before": stop_before, "decided": decided})

    made = Job(
        resolve("fixed_window", 10, 10_000),
        traffic=Traffic(),
        duration_s=600,
        seed=1,
        scripts=(load("fixed_window").sha,),
        run=4,
    )
    with pytest.raises(Cancelled):
        pool_module._run_job(made)
    assert decided.value < 250  # it stopped before its first progress report, of ~4,500


def test_a_cancelled_run_leaves_the_workers_ready_for_the_next(runner):
    asked = [0]

    def cancelled() -> bool:
        asked[0] += 1
        return asked[0] > 1  # the first look lets the jobs start; the next stops them

    long = Settings(duration_s=3_000)
    with pytest.raises(Cancelled):
        runner.run(long, cancelled)
    _same(Runner().run(SHORT).frames, runner.run(SHORT).frames)


@pytest.mark.every_algorithm
def test_the_server_a_worker_keeps_decides_as_a_new_one(monkeypatch):
    """Each worker keeps one fake server, emptied before each job: every algorithm's log on it,
    after the other algorithms' jobs and one cancelled part-way, is the log on a new server."""
    stop_before, decided = Value("q", 0, lock=False), Value("q", 0)
    shared = {"stop_before": stop_before, "decided": decided}
    monkeypatch.setattr(pool_module, "_shared", shared)
    settings = Settings(duration_s=20, traffic=Traffic(polite=1, on_off=1, bursts=1))

    def job(name: str, run: int = 1) -> Job:
        policy = settings.policies[name]
        scripts = tuple(load(s).sha for s in policy.algorithm.scripts)
        return Job(policy, settings.traffic, settings.duration_s, settings.seed, None, scripts, run)

    long = replace(job("sliding_log", run=0), duration_s=600)
    stop_before.value = 1  # run 0 is cancelled at its first look, keys half written
    with pytest.raises(Cancelled):
        pool_module._run_job(long)
    stop_before.value = 0
    kept = shared["backend"]
    on_kept = {name: pool_module._run_job(job(name))[0] for name in settings.algorithms}
    assert shared["backend"] is kept, "the worker started another server"
    for name in settings.algorithms:
        shared.pop("backend").close()
        pd.testing.assert_frame_equal(on_kept[name], pool_module._run_job(job(name))[0], obj=name)
    shared.pop("backend").close()


@pytest.mark.slow  # a pool of its own started and a worker killed
def test_a_worker_that_dies_leaves_the_runs_to_this_process(tmp_path):
    runner = Runner(workers=1)
    try:
        runner.run(SHORT)
        assert runner.pool is not None
        (pid,) = runner.pool.pids()
        worker = psutil.Process(pid)
        worker.kill()
        worker.wait(30)
        settings = Settings(duration_s=25, traffic=Traffic(polite=1))
        _same(Runner().run(settings).frames, runner.run(settings).frames)
        assert runner.pool is None  # what is left runs here
    finally:
        runner.close()


@pytest.mark.slow  # a Python that starts a pool of its own, then ended
def test_the_workers_end_with_the_process_that_started_them(tmp_path):
    script = tmp_path / "start.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            from simulator.explore import Runner, Settings

            if __name__ == "__main__":
                runner = Runner(workers=2)
                runner.run(Settings(duration_s=5))
                print(" ".join(map(str, runner.pool.pids())), flush=True)
                time.sleep(600)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        workers = [psutil.Process(p) for p in pids]
        assert len(workers) >= 2
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive, f"workers left running: {alive}"


def test_the_number_of_workers_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(pool_module.WORKERS_ENV, "0")
    assert default_workers() == 0
    monkeypatch.setenv(pool_module.WORKERS_ENV, "3")
    assert default_workers() == 3
    monkeypatch.setenv(pool_module.WORKERS_ENV, "many")
    with pytest.raises(ValueError, match="SIMULATOR_EXPLORER_WORKERS='many'"):
        default_workers()


def test_a_plain_script_starts_no_workers_by_itself(monkeypatch):
    monkeypatch.delenv(pool_module.WORKERS_ENV, raising=False)
    main = type(sys)("__main__")
    main.__file__ = "/somewhere/script.py"
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert default_workers() == 0
    main.__spec__ = object()  # python -m: a module, imported safely
    cores = len(os.sched_getaffinity(0))
    assert default_workers() == (min(2, cores) if cores > 1 else 0)
