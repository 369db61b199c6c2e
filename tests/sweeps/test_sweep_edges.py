"""Sweeps at the edges: what a cluster listens on, a grid of a million points stopped by Ctrl-C,
an output folder that cannot hold results, a full disk, a task the user's input stops, a file
damaged on disk, a scheduler without workers, two sweeps into one folder, and the name of the
accuracy column.

Clusters are started here and closed by their own handles; a sweep in a subprocess is bounded by
the test's own timeout; nothing asserts a time.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from simulator.checks import ConfigError
from simulator.cli import main
from simulator.sweeps import parse_spec, read_dataset, run_sweep
from simulator.sweeps import run as sweep_run
from simulator.sweeps.dataset import task_path

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 120
#: The lock a running sweep holds in its folder (docs/scale_out.md).
LOCK_NAME = ".lock"
BURST = {"name": "b", "study": "burst", "grid": {"algorithm": "fixed_window", "limit": [5, 6, 7]}}
BURST_TOML = 'name = "b"\nstudy = "burst"\n[grid]\nalgorithm = "fixed_window"\nlimit = [5, 6, 7]\n'


def quiet(line: str) -> None:
    pass


def spec_file(tmp_path: Path, text: str = BURST_TOML) -> Path:
    path = tmp_path / "b.toml"
    path.write_text(text)
    return path


def sweep_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "simulator", "sweep", *args]


def env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(ROOT)}


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s} s for {what}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    """Stop one process we started, by its handle."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


# --- what a cluster the program starts listens on -------------------------------------------------


def listening(pid: int) -> list[str]:
    """The addresses every listening socket of ``pid`` and its children is bound to."""
    me = psutil.Process(pid)
    out = []
    for proc in (me, *me.children(recursive=True)):
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        out += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN]
    return out


@pytest.mark.slow
def test_a_local_cluster_listens_on_loopback_only():
    from simulator.engine.workers import dask_client

    before = set(listening(os.getpid()))
    with dask_client("local", workers=1) as client:
        client.wait_for_workers(1, timeout=DEADLINE_S)
        opened = listening(os.getpid())
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
    assert len(opened) > len(before)  # the scheduler, the worker and its nanny
    assert set(opened) == {"127.0.0.1"}, opened


# --- a grid of a million points ------------------------------------------------------------------

HUGE = (
    'name = "huge"\nstudy = "burst"\n[grid]\nalgorithm = "fixed_window"\n'
    f"limit = {list(range(1, 101))}\nfirst_s = {list(range(100))}\n"
    f"per_burst = {list(range(1, 101))}\n"
)  # 100 x 100 x 100 = 1,000,000 points: the most a spec may have


@pytest.mark.slow
def test_a_sweep_of_a_million_points_starts_at_once_and_stops_on_ctrl_c(tmp_path):
    out_dir = tmp_path / "out"
    folder = out_dir / "huge"
    sweep = subprocess.Popen(
        sweep_command(str(spec_file(tmp_path, HUGE)), "--out-dir", str(out_dir), "--workers", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        # Tasks finish (before, a million submissions came first and none finished)
        wait_for(
            lambda: len(list(folder.glob("*.parquet"))) >= 3 or sweep.poll() is not None, "tasks"
        )
        assert sweep.poll() is None
        assert psutil.Process(sweep.pid).memory_info().rss < 1_000_000_000
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=DEADLINE_S)
    finally:
        stop(sweep)
    assert sweep.returncode == 130 and "interrupted (SIGINT)" in err, err
    assert "Traceback" not in err
    kept = read_dataset(folder)  # every file kept reads whole; no temporary file, no lock left
    assert len(kept) >= 3 and not list(folder.glob(".*"))


# --- the output folder ---------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["a file", "/dev/full", "/proc/sweeps"])
def test_an_output_folder_that_cannot_hold_results_is_one_message_before_any_task(
    tmp_path, capsys, where
):
    if where == "a file":
        where = str(tmp_path / "results.txt")
        Path(where).write_text("not a folder")
    if not Path(where).parent.exists():
        pytest.skip(f"{Path(where).parent} is not on this machine")
    spec = spec_file(tmp_path)
    assert main(["sweep", str(spec), "--scheduler", "serial", "--out-dir", where]) == 2
    err = capsys.readouterr().err
    assert "output folder" in err and "Traceback" not in err
    assert err.count("\n") == 1 and "running on" not in err  # nothing ran


@pytest.mark.slow
def test_a_full_disk_mid_sweep_is_one_message_and_keeps_what_was_written(
    tmp_path, capsys, monkeypatch
):
    real = sweep_run.write_task
    written: list[Path] = []

    def fills_up(folder, task, rows, code):
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(real(folder, task, rows, code))
        return written[-1]

    monkeypatch.setattr(sweep_run, "write_task", fills_up)
    spec = spec_file(tmp_path)
    out_dir = tmp_path / "out"
    assert main(["sweep", str(spec), "--scheduler", "serial", "--out-dir", str(out_dir)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "No space left on device" in errors[0], err
    assert "the 2 finished tasks are kept" in errors[0] and "Traceback" not in err
    assert len(read_dataset(out_dir / "b")) == 2 and not list((out_dir / "b").glob(".*"))


# --- a task the user's input stops --------------------------------------------------------------

BAD_LUA = """--[[ ratelimit
keys = ["rl:bad:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit", "cost"]
reply = { allowed = 1, count = 2 }
]]
local count = redis.call('INCRBY', KEYS[1], tonumber(ARGV[4]))
if count > 3 then error("the budget table is missing") end
return {1, count}
"""


@pytest.mark.slow
def test_a_users_script_failing_on_a_dask_worker_is_one_message_and_exit_2(tmp_path):
    script = tmp_path / "bad.lua"
    script.write_text(BAD_LUA)
    spec = spec_file(tmp_path, BURST_TOML.replace('"fixed_window"', '"bad"'))
    args = [str(spec), "--script", f"bad={script}", "--out-dir", str(tmp_path), "--workers", "1"]
    done = subprocess.run(
        sweep_command(*args), capture_output=True, text=True, env=env(), timeout=DEADLINE_S * 2
    )
    assert done.returncode == 2, done.stderr
    assert "line 7: the budget table is missing" in done.stderr
    assert "Traceback" not in done.stderr and "Compute Failed" not in done.stderr
    assert "algorithm=bad limit=5" in done.stderr  # the point it stopped at


def test_a_bad_value_inside_a_task_is_one_message_and_exit_2(tmp_path, capsys, monkeypatch):
    from simulator.sweeps import studies

    real = studies.STUDIES["burst"]

    def refuses(point):
        raise ConfigError("burst.first_s: the bursts overlap")

    monkeypatch.setitem(studies.STUDIES, "burst", real.__class__(real.name, real.axes, refuses))
    args = ["sweep", str(spec_file(tmp_path)), "--scheduler", "serial", "--out-dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error: sweep b: task" in err and "the bursts overlap" in err


# --- a result is what the disk gives back ---------------------------------------------------------


def damage(path: Path) -> None:
    """Flip bytes inside the first column's data page; the footer stays intact."""
    import pyarrow.parquet as pq

    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    end = column.data_page_offset + column.total_compressed_size
    data = bytearray(path.read_bytes())
    for i in range(end - 6, end - 2):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_damaged_file_is_not_finished_and_is_computed_again(tmp_path):
    import pyarrow.parquet as pq

    spec = parse_spec(BURST)
    first = run_sweep(spec, tmp_path, "serial", out=quiet)
    whole = read_dataset(first.folder, first.tasks)
    path = task_path(first.folder, first.tasks[1])
    damage(path)
    assert pq.read_schema(path) is not None  # the footer still reads: it looks finished
    lines: list[str] = []
    again = run_sweep(spec, tmp_path, "serial", out=lines.append)
    assert (again.skipped, again.done, again.broken) == (2, 1, 1)
    assert "1 whose file does not read whole (run again)" in lines[0]
    pd.testing.assert_frame_equal(read_dataset(first.folder, first.tasks), whole)


# --- a scheduler without workers ------------------------------------------------------------------


@pytest.mark.slow
def test_a_scheduler_without_workers_is_said_and_ends_the_sweep_with_exit_2(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        args = [str(spec_file(tmp_path)), "--out-dir", str(tmp_path), "--no-workers-timeout", "2"]
        done = subprocess.run(
            sweep_command(*args, "--scheduler", cluster.scheduler_address),
            capture_output=True,
            text=True,
            env=env(),
            timeout=DEADLINE_S,
        )
    assert done.returncode == 2, done.stderr
    assert f"no workers on the scheduler {cluster.scheduler_address} for" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "b" / LOCK_NAME).exists()


# --- one sweep per folder -------------------------------------------------------------------------


def test_a_second_sweep_into_a_folder_in_use_is_refused_naming_the_folder(tmp_path, capsys):
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / LOCK_NAME).write_text(f"{os.getpid()}\n")  # a live process holds it
    args = ["sweep", str(spec_file(tmp_path)), "--scheduler", "serial", "--out-dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"output folder {folder}: another sweep (process {os.getpid()})" in err
    assert err.count("\n") == 1 and not list(folder.glob("*.parquet"))
    assert (folder / LOCK_NAME).read_text() == f"{os.getpid()}\n"  # not ours to remove


def test_a_lock_left_by_a_dead_sweep_is_taken_over(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=DEADLINE_S)
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / LOCK_NAME).write_text(f"{gone.pid}\n")
    outcome = run_sweep(parse_spec(BURST), tmp_path, "serial", out=quiet)
    assert outcome.done == 3 and not (folder / LOCK_NAME).exists()


# --- the accuracy column --------------------------------------------------------------------------


def test_the_accuracy_column_is_admitted_pct_and_old_folders_read_with_it(tmp_path):
    grid = {"algorithm": ["sliding_counter", "fixed_window"], "client_count": 4}
    spec = parse_spec({"name": "acc", "study": "accuracy", "grid": grid | {"duration_s": 30}})
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    frame = read_dataset(outcome.folder, outcome.tasks)
    assert "admitted_pct" in frame and "counter_admitted_pct" not in frame
    assert frame["algorithm"].tolist() == ["sliding_counter", "fixed_window"]
    old = task_path(outcome.folder, outcome.tasks[0])  # as an older version wrote it
    pd.read_parquet(old).rename(columns={"admitted_pct": "counter_admitted_pct"}).to_parquet(old)
    pd.testing.assert_frame_equal(read_dataset(outcome.folder, outcome.tasks), frame)


# --- the window of tasks out, and the watch on the workers ---------------------------------------


class FakeFuture:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value

    def release(self):
        pass


class FakeClient:
    """Runs nothing: a task is done when the fake ``wait`` hands it back (oldest first)."""

    def __init__(self, threads: int) -> None:
        self.threads, self.out, self.most_out = threads, [], 0
        self.scheduler = type("S", (), {"address": "tcp://127.0.0.1:1"})()

    def nthreads(self):
        return {f"w{i}": 1 for i in range(self.threads)}

    def submit(self, fn, arg, pure):
        future = FakeFuture(fn(arg))
        self.out.append(future)
        self.most_out = max(self.most_out, len(self.out))
        return future

    def cancel(self, futures):
        pass


def test_only_a_window_of_tasks_is_out_and_the_items_are_taken_as_it_moves(monkeypatch):
    import distributed

    from simulator.engine.workers import run_tasks

    client = FakeClient(threads=2)

    def wait(futures, timeout, return_when):
        first = client.out.pop(0)
        return {first}, set(futures) - {first}

    monkeypatch.setattr(distributed, "wait", wait)
    taken = []

    def items():
        for i in range(1_000):
            taken.append(i)
            yield i

    results = run_tasks(client, lambda x: x * 2, items())
    for n, (i, result, exc) in enumerate(results):
        assert exc is None and result == 2 * i
        assert len(taken) <= n + 1 + 8  # never more than the window ahead of the results
        if n == 99:
            break
    results.close()
    assert client.most_out == 8  # four per worker thread, at least 8
    assert len(taken) < 120


def test_a_scheduler_without_workers_is_said_every_30_s_and_given_up_at_the_limit(monkeypatch):
    from simulator.engine import workers

    now = [1000.0]
    monkeypatch.setattr(workers.time, "monotonic", lambda: now[0])
    said: list[str] = []
    watch = workers._WorkerWatch(FakeClient(threads=0), 100.0, said.append)
    for _ in range(99):
        watch.check()
        now[0] += 1
    assert said == [
        "no workers on the scheduler tcp://127.0.0.1:1 for 30 s; waiting for one",
        "no workers on the scheduler tcp://127.0.0.1:1 for 60 s; waiting for one",
        "no workers on the scheduler tcp://127.0.0.1:1 for 90 s; waiting for one",
    ]
    now[0] += 1
    with pytest.raises(workers.NoWorkers, match="for 100 s"):
        watch.check()
    forever = workers._WorkerWatch(FakeClient(threads=0), None, said.append)
    for _ in range(10_000):
        forever.check()
        now[0] += 1
    assert len(said) == 3 + 333  # it keeps saying, and never gives up


def test_ctrl_c_while_the_local_cluster_starts_stops_it_whole(monkeypatch):
    """Interrupted half-way, a cluster is left for Dask's exit clean-up, which then fails with a
    traceback; held until the cluster is up, Ctrl-C stops it whole."""
    import distributed
    from distributed.core import Status

    from simulator.engine.workers import dask_client

    made = []

    class Interrupted(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C as the cluster starts
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(distributed, "LocalCluster", Interrupted)
    with pytest.raises(KeyboardInterrupt), dask_client("local", workers=1):
        pytest.fail("the command's work should not start after Ctrl-C")
    assert len(made) == 1 and made[0].status == Status.closed
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
