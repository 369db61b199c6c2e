"""Sweeps and sharded runs on real Dask clusters give what the serial run gives.

Two clusters: a ``LocalCluster`` with two worker processes, and what "an existing cluster" looks
like - a ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, started here as
subprocesses and stopped by their own handles. Then one worker is killed in the middle of a
sweep (the sweep still finishes: Dask runs its task again on the other), and a sweep stopped by
Ctrl-C resumes on rerun; in both, the dataset ends up equal to the serial one. Every wait is for
a state, with a generous deadline; no time is asserted.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from simulator.engine.run import simulate
from simulator.engine.scenario import Poisson, Polite, Scenario
from simulator.sweeps import parse_spec, read_dataset, run_sweep

pytestmark = pytest.mark.slow

DEADLINE_S = 180
SMALL = {
    "name": "small",
    "study": "accuracy",
    "grid": {
        "algorithm": ["sliding_counter", "fixed_window"],
        "kind": ["poisson", "on_off"],
        "load": [0.5, 2.0],
        "client_count": 8,
        "duration_s": 120,
    },
}


def quiet(line: str) -> None:
    pass


def serial_dataset(tmp_path: Path, spec_data: dict) -> pd.DataFrame:
    spec = parse_spec(spec_data)
    outcome = run_sweep(spec, tmp_path / "serial", "serial", out=quiet)
    return read_dataset(outcome.folder, outcome.tasks)


def crowd() -> Scenario:
    clients = (*(Poisson(f"u{i}", rate_per_s=4) for i in range(40)), Polite("p", rate_per_s=9))
    return Scenario("sliding_counter", 5, 1000, 3000, clients, seed=3)


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s} s for {what}")
        time.sleep(0.2)


def scheduler_address(scheduler_file: Path, scheduler: subprocess.Popen) -> str:
    """The address the scheduler wrote once it listened on the port it picked itself."""

    def written() -> bool:
        assert scheduler.poll() is None, "the dask scheduler ended before it listened"
        try:
            return bool(json.loads(scheduler_file.read_text()).get("address"))
        except (OSError, ValueError):  # not there yet, or half written
            return False

    wait_for(written, "the dask scheduler's file")
    return str(json.loads(scheduler_file.read_text())["address"])


def stop(proc: subprocess.Popen) -> None:
    """Stop one process we started, by its handle: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@contextlib.contextmanager
def real_cluster(tmp_path: Path, workers: int = 2) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """``dask scheduler`` and ``workers`` x ``dask worker`` (no nanny: the handle is the worker)."""
    from distributed import Client

    # Port 0: the scheduler binds a port of its own choosing (nothing else can take it between a
    # port being found and bound) and writes its address to the file the workers read.
    scheduler_file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    quiet_out = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": tmp_path}
    try:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dask",
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--scheduler-file",
                    str(scheduler_file),
                    "--no-dashboard",
                ],
                **quiet_out,
            )
        )
        address = scheduler_address(scheduler_file, procs[0])
        for i in range(workers):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "dask",
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--name",
                        f"w{i}",
                        "--local-directory",
                        str(tmp_path / f"w{i}"),
                    ],
                    **quiet_out,
                )
            )
        with Client(address, timeout=f"{DEADLINE_S}s") as client:
            client.wait_for_workers(workers, timeout=DEADLINE_S)
        yield address, procs[1:]
    finally:
        for proc in reversed(procs):
            stop(proc)


@pytest.fixture(scope="module")
def local_client():
    from simulator.engine.workers import dask_client

    with dask_client("local", workers=2) as client:
        client.wait_for_workers(2, timeout=DEADLINE_S)
        yield client


@pytest.fixture(scope="module")
def cluster_address(tmp_path_factory):
    with real_cluster(tmp_path_factory.mktemp("cluster")) as (address, _):
        yield address


def test_a_sweep_on_a_local_cluster_equals_the_serial_sweep(tmp_path, local_client):
    outcome = run_sweep(parse_spec(SMALL), tmp_path / "local", local_client, out=quiet)
    assert outcome.failed == [] and outcome.done == 8
    pd.testing.assert_frame_equal(
        read_dataset(outcome.folder, outcome.tasks), serial_dataset(tmp_path, SMALL)
    )


def test_a_sharded_run_on_a_local_cluster_equals_the_whole_run(local_client):
    scenario = crowd()
    pd.testing.assert_frame_equal(
        simulate(scenario, shards=3, scheduler=local_client), simulate(scenario)
    )


FW3 = """--[[ ratelimit
keys = ["rl:fw3:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2 }
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count <= tonumber(ARGV[3]) then return {1, count} end
return {0, count}
"""


def test_a_users_script_goes_to_the_workers_with_its_tasks_and_shards(tmp_path, local_client):
    """The workers started before the script was registered, and never read its file."""
    from simulator.algorithms import ALGORITHMS
    from simulator.userscripts import register_script

    path = tmp_path / "fw3.lua"
    path.write_text(FW3)
    register_script(path, "fw3")
    try:
        grid = {"algorithm": "fw3", "kind": "poisson", "load": [0.5, 2.0], "client_count": 4}
        data = {"name": "mine", "study": "accuracy", "grid": grid | {"duration_s": 30}}
        outcome = run_sweep(parse_spec(data), tmp_path / "local", local_client, out=quiet)
        assert outcome.failed == [] and outcome.done == 2
        pd.testing.assert_frame_equal(
            read_dataset(outcome.folder, outcome.tasks), serial_dataset(tmp_path, data)
        )
        scenario = Scenario("fw3", 5, 1000, 3000, crowd().clients, seed=3)
        pd.testing.assert_frame_equal(
            simulate(scenario, shards=3, scheduler=local_client), simulate(scenario)
        )
    finally:
        ALGORITHMS.pop("fw3", None)


def test_a_sweep_on_an_existing_cluster_equals_the_serial_sweep(tmp_path, cluster_address):
    outcome = run_sweep(parse_spec(SMALL), tmp_path / "real", cluster_address, out=quiet)
    assert outcome.failed == [] and outcome.done == 8
    pd.testing.assert_frame_equal(
        read_dataset(outcome.folder, outcome.tasks), serial_dataset(tmp_path, SMALL)
    )


def test_a_sharded_run_on_an_existing_cluster_equals_the_whole_run(cluster_address):
    scenario = crowd()
    pd.testing.assert_frame_equal(
        simulate(scenario, shards=2, scheduler=cluster_address), simulate(scenario)
    )


#: A sweep long enough to be caught in the middle: 12 tasks of a few hundred thousand decisions.
SLOW = {
    "name": "slow",
    "study": "accuracy",
    "grid": {
        "algorithm": "sliding_counter",
        "kind": "poisson",
        "load": [1.0, 2.0, 3.0],
        "client_count": 150,
        "seed": [0, 1, 2, 3],
    },
}


def spec_file(tmp_path: Path, data: dict) -> Path:
    grid = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in data["grid"].items())
    path = tmp_path / f"{data['name']}.toml"
    path.write_text(f'name = "{data["name"]}"\nstudy = "{data["study"]}"\n[grid]\n{grid}\n')
    return path


def start_sweep(spec: Path, out_dir: Path, scheduler: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simulator",
            "sweep",
            str(spec),
            "--out-dir",
            str(out_dir),
            "--scheduler",
            scheduler,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def files(folder: Path) -> int:
    return len(list(folder.glob("*.parquet"))) if folder.exists() else 0


def test_a_worker_killed_mid_sweep_loses_nothing(tmp_path):
    spec, out_dir = spec_file(tmp_path, SLOW), tmp_path / "out"
    with real_cluster(tmp_path) as (address, workers):
        sweep = start_sweep(spec, out_dir, address)
        try:
            wait_for(lambda: files(out_dir / "slow") >= 1 or sweep.poll() is not None, "a task")
            assert sweep.poll() is None, sweep.communicate()
            workers[0].kill()  # a crash: SIGKILL to that worker's own pid
            workers[0].wait(timeout=DEADLINE_S)
            _, err = sweep.communicate(timeout=DEADLINE_S * 3)
        finally:
            stop(sweep)
    assert sweep.returncode == 0, err
    assert "12 of 12 tasks finished" in err
    pd.testing.assert_frame_equal(read_dataset(out_dir / "slow"), _sorted_serial(tmp_path))


def test_a_sweep_stopped_by_ctrl_c_resumes_with_nothing_lost(tmp_path, cluster_address):
    spec, out_dir = spec_file(tmp_path, SLOW), tmp_path / "out"
    sweep = start_sweep(spec, out_dir, cluster_address)
    try:
        wait_for(lambda: files(out_dir / "slow") >= 1 or sweep.poll() is not None, "a task")
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=DEADLINE_S)
    finally:
        stop(sweep)
    if sweep.returncode == 0:  # it had finished before the signal came
        assert "12 of 12" in err
    else:
        assert sweep.returncode == 130 and "interrupted (SIGINT)" in err, err
    kept = files(out_dir / "slow")
    assert kept >= 1 and not list((out_dir / "slow").glob(".*"))  # whole files only
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulator",
            "sweep",
            str(spec),
            "--out-dir",
            str(out_dir),
            "--scheduler",
            cluster_address,
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 3,
    )
    assert again.returncode == 0, again.stderr
    assert f"{kept} finished already" in again.stderr
    pd.testing.assert_frame_equal(read_dataset(out_dir / "slow"), _sorted_serial(tmp_path))


def _sorted_serial(tmp_path: Path) -> pd.DataFrame:
    """The serial dataset in the order read_dataset(folder) reads a folder: by file name."""
    frame = serial_dataset(tmp_path, SLOW)
    return frame.sort_values("task", kind="stable", ignore_index=True)
