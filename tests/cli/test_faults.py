"""When the server dies: one clear message, every decision made already on disk, exit status 1.

The command line is driven as a user would drive it, in a subprocess. It announces the server
it started (``backend valkey: valkey-server pid N ...`` on stderr); the test kills that pid in
the middle of the replay, as a crash would, and checks what the user is left with.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from simulator.algorithms import REFERENCES
from simulator.algorithms.scripts import load
from simulator.backends import Backend, BackendError, RedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.cli import main
from simulator.cli.runs import stop_between_calls
from simulator.engine.clients import register_process
from simulator.engine.run import simulate
from simulator.engine.scenario import ClientSpec, ConstantRate, Scenario

pytestmark = [pytest.mark.server, pytest.mark.usefixtures("no_server_left_behind")]
ROOT = Path(__file__).resolve().parents[2]
LIMIT, WINDOW_S = 5, 60


def write_trace(path: Path, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    trace = pd.DataFrame(
        {"t_ms": np.sort(rng.integers(0, n // 20, n)), "client": rng.integers(0, 500, n)}
    )
    trace["client"] = "c" + trace["client"].astype(str)
    trace.to_csv(path, index=False)
    return trace


def expected_allowed(trace: pd.DataFrame, algorithm: str, rows: int) -> list[int]:
    """The oracle's decisions for the first ``rows`` requests (the trace is in time order)."""
    ref = REFERENCES[algorithm](LIMIT, WINDOW_S * 1000)
    head = trace.head(rows)
    return [
        int(ref.decide(c, t).allowed) for t, c in zip(head["t_ms"], head["client"], strict=True)
    ]


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def rows_on_disk(path: Path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def start_cli(*args: str, announced: bool = True, **env: str) -> tuple[subprocess.Popen, str]:
    """``python -m simulator ARGS`` in the background (no progress bars, stderr piped) and, if
    ``announced`` (a run on a real server), the first line it writes: which server it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", *args],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TQDM_DISABLE": "1", **env},
    )
    assert proc.stderr is not None
    return proc, proc.stderr.readline() if announced else ""


def start_replay(tmp_path: Path, *extra: str, n: int = 400_000):
    trace_csv, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace = write_trace(trace_csv, n)
    args = ["replay", str(trace_csv), "--algorithm", "sliding_log", "--limit", str(LIMIT)]
    args += ["--window", str(WINDOW_S), "--backend", "valkey", "--out", str(out_csv), *extra]
    proc, status = start_cli(*args)
    match = re.match(r"backend valkey: valkey-server pid (\d+) on 127\.0\.0\.1:\d+/0", status)
    assert match, status
    return proc, int(match.group(1)), trace, out_csv


def password_beside(socket_path: str) -> str:
    """The password of the server whose socket this is, from its config file. The test runs as
    the same user as the program, and a process of the same user can read it: that is the
    stated limit of the password's protection."""
    conf = (Path(socket_path).parent / "secrets.conf").read_text()
    return next(line.split()[1] for line in conf.splitlines() if line.startswith("requirepass"))


def wait_until(condition: Callable[[], object], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` until it holds; fail saying ``what`` did not happen within the time.

    The deadline is only there so that a broken program fails the test instead of hanging it:
    it is far longer than anything here takes, even on a busy machine."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.005)  # polling interval


def still_running(proc: subprocess.Popen, what: str) -> bool:
    assert proc.poll() is None, f"the program ended before {what}"
    return True


def wait_for_rows(proc: subprocess.Popen, out_csv: Path, rows: int) -> None:
    wait_until(
        lambda: still_running(proc, "the test could act") and rows_on_disk(out_csv) >= rows,
        f"{rows} rows in {out_csv}",
    )


@pytest.mark.parametrize("pipeline", [[], ["--pipeline", "1"]], ids=["pipelined", "one-by-one"])
def test_server_killed_mid_replay(tmp_path, pipeline):
    proc, pid, trace, out_csv = start_replay(tmp_path, *pipeline)
    wait_for_rows(proc, out_csv, 2000)
    os.kill(pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    failures = [line for line in stderr.splitlines() if "failed:" in line]
    assert len(failures) == 1, stderr
    message = failures[0]
    assert "backend valkey failed" in message and "stopped at simulated t_ms=" in message
    done = int(re.search(r"after (\d+) of 400000 decisions", message).group(1))
    assert f"the {done} decisions made are in {out_csv}" in message

    out = pd.read_csv(out_csv)
    assert len(out) == done >= 2000
    assert out["line"].tolist() == list(range(1, done + 1))
    assert out["allowed"].tolist() == expected_allowed(trace, "sliding_log", done)
    t_reached = int(re.search(r"t_ms=(\d+)", message).group(1))
    assert t_reached == trace["t_ms"].iloc[done]  # the first request left undecided
    assert pid_gone(pid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_replay_stops_its_server(tmp_path, sig):
    proc, pid, trace, out_csv = start_replay(tmp_path, n=200_000)
    wait_for_rows(proc, out_csv, 1000)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=180)  # its way out, on a busy machine
    assert proc.returncode == 128 + sig and "interrupted" in stderr and "Traceback" not in stderr
    wait_until(lambda: pid_gone(pid), f"valkey-server {pid} gone after the program")
    out = pd.read_csv(out_csv)
    assert out["allowed"].tolist() == expected_allowed(trace, "sliding_log", len(out))


def test_script_error_on_a_url_backend(tmp_path):
    trace_csv = tmp_path / "trace.csv"
    trace_csv.write_text("t_ms,client\n0,alice\n1,bob\n2,alice\n")
    with EmbeddedValkey() as server:
        server.client().set("rl:fw:{bob}:0", "not a counter")
        args = ["replay", str(trace_csv), "--algorithm", "fixed_window", "--limit", "5"]
        args += ["--window", "1", "--backend", server.url, "--out", str(tmp_path / "o.csv")]
        args += ["--reuse-keys"]  # the wrong-type key is left there on purpose
        out = subprocess.run(
            [sys.executable, "-m", "simulator", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert server.client().ping()  # a server the program did not start is left alone
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "script fixed_window failed on keys ['rl:fw:{bob}:0']" in out.stderr
    assert "after 1 of 3 decisions" in out.stderr
    assert pd.read_csv(tmp_path / "o.csv")["client"].tolist() == ["alice"]


@dataclass(frozen=True)
class Crash(ClientSpec):
    """Test-only client: kills the server at ``at_ms`` of simulated time."""

    at_ms: float = 0.0


def test_server_killed_mid_simulation():
    with EmbeddedValkey() as server:

        def crash(env, spec, ask, rng):
            yield env.timeout(spec.at_ms)
            server.kill()

        register_process(Crash, crash)
        backend = RedisBackend(server.client(retry=Retry(NoBackoff(), 0)), "valkey")
        rows: list = []
        scenario = Scenario(
            "fixed_window", 3, 1000, 10_000.0, (ConstantRate("a", 100.0), Crash("x", 2500.5))
        )
        with pytest.raises(BackendError) as err:
            simulate(scenario, backend, on_rows=rows.extend)
        backend.close()
    message = str(err.value)
    assert "backend valkey failed" in message and "t_ms=2510" in message
    assert f"after {len(rows)} decisions" in message and len(rows) == 251


def test_leftover_keys_on_a_url_backend_refuse_the_run(tmp_path, capsys):
    trace_csv, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace_csv.write_text("t_ms,client\n0,alice\n1,bob\n2,alice\n")
    with EmbeddedValkey() as server:
        args = ["replay", str(trace_csv), "--algorithm", "fixed_window", "--limit", "1"]
        # a window of an hour: the first run's counters outlive the test however slow it goes
        args += ["--window", "3600", "--backend", server.url, "--out", str(out_csv)]
        assert main(args) == 0
        first = pd.read_csv(out_csv)
        out_csv.unlink()
        capsys.readouterr()

        assert main(args) == 2  # the same run again: the first one's counters are still there
        error = capsys.readouterr().err
        assert "2 of the 2 keys this run uses already exist" in error
        assert "rl:fw:{alice}:0" in error and "--reuse-keys" in error
        assert not out_csv.exists()  # refused before the output was touched

        assert main([*args, "--reuse-keys"]) == 0  # asked for: runs on the old counters
        assert pd.read_csv(out_csv)["allowed"].sum() < first["allowed"].sum()

        server.client().set("rl:sl:{user}", "left")  # a burst on the same server
        burst = ["burst", "--limit", "3", "--backend", server.url]
        assert main(burst) == 2
        # every algorithm the server can run counts its keys: how many depends on the registry
        said = capsys.readouterr().err
        assert re.search(
            r"1 of the \d+ keys this run uses already exist \(e\.g\. rl:sl:\{user\}\)", said
        )
        assert server.client().ping()  # a server the program did not start is left running


def test_burst_interrupted_on_a_real_server_stops_its_server():
    args = ["burst", "--limit", "100000", "--backend", "valkey"]  # 200000 calls, one at a time
    proc, status = start_cli(*args)
    match = re.match(r"backend valkey: valkey-server pid (\d+) on .* and (\S+), password", status)
    assert match, status
    pid, socket_path = int(match.group(1)), match.group(2)
    client = redis.Redis(unix_socket_path=socket_path, password=password_beside(socket_path))
    wait_until(
        lambda: still_running(proc, "the burst began") and client.exists("rl:fw:{user}:0"),
        "the burst under way",
    )
    client.close()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=180)  # its way out, on a busy machine
    assert proc.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    wait_until(lambda: pid_gone(pid), f"valkey-server {pid} gone after the program")


class SignalInCall(Backend):
    """Test-only backend: a signal arrives while each call is on the server."""

    name = "slow"
    client = None

    def __init__(self) -> None:
        self.completed = 0

    def call(self, script, keys, args):
        os.kill(os.getpid(), signal.SIGINT)
        self.completed += 1  # the reply came in after the signal
        return [1, 0, 5, 4, 1000, 0]

    def close(self) -> None:
        pass


def test_a_signal_during_a_call_stops_the_run_after_it():
    backend = SignalInCall()
    with pytest.raises(KeyboardInterrupt), stop_between_calls(backend):
        backend.call(load("fixed_window"), ["k"], [0])
        pytest.fail("the run went on after the call")  # pragma: no cover
    assert backend.completed == 1
    assert backend.call.__func__ is SignalInCall.call  # the wrapper is gone
    with pytest.raises(KeyboardInterrupt), stop_between_calls(backend):
        os.kill(os.getpid(), signal.SIGINT)  # between calls: at once
        wait_until(lambda: False, "a signal between calls stopping the run at once")


def test_cluster_node_killed_mid_replay(tmp_path):
    """One master of the cluster dies: the decisions the others made are on disk, and the
    message says how many there are and which requests went to the dead node."""
    trace_csv, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace = write_trace(trace_csv, 400_000)
    args = ["replay", str(trace_csv), "--algorithm", "fixed_window", "--limit", str(LIMIT)]
    args += ["--window", str(WINDOW_S), "--backend", "cluster", "--out", str(out_csv)]
    proc, status = start_cli(*args)
    match = re.match(r"backend cluster: valkey-server pids (\d+), (\d+), (\d+) on ", status)
    assert match, status
    pids = [int(p) for p in match.groups()]
    wait_for_rows(proc, out_csv, 2000)
    os.kill(pids[1], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr
    failures = [line for line in stderr.splitlines() if "failed:" in line]
    assert len(failures) == 1, stderr
    message = failures[0]
    assert re.search(r"the outcome of \d+ calls sent to node 127\.0\.0\.1:\d+ is unknown", message)
    done = int(re.search(r"after (\d+) of 400000 decisions", message).group(1))
    assert f"the {done} decisions made are in {out_csv}" in message
    out = pd.read_csv(out_csv)
    assert len(out) == done >= 2000
    ref = REFERENCES["fixed_window"](LIMIT, WINDOW_S * 1000)
    expected = [
        int(ref.decide(c, t).allowed) for t, c in zip(trace["t_ms"], trace["client"], strict=True)
    ]
    assert out["allowed"].tolist() == [expected[line - 1] for line in out["line"]]
    assert all(pid_gone(pid) for pid in pids)


def test_server_killed_mid_replay_of_a_trace_out_of_order(tmp_path):
    """Out of order, the decisions are sorted back into input order on disk as they are made;
    when the server dies, every decision made so far still reaches the output, in input order."""
    trace_csv, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    ordered = write_trace(tmp_path / "ordered.csv", 400_000)
    rng = np.random.default_rng(4)
    shuffled = ordered.iloc[np.argsort(ordered["t_ms"] + rng.integers(0, 500, len(ordered)))]
    shuffled.to_csv(trace_csv, index=False)
    args = ["replay", str(trace_csv), "--algorithm", "sliding_log", "--limit", str(LIMIT)]
    args += ["--window", str(WINDOW_S), "--backend", "valkey", "--out", str(out_csv)]
    proc, status = start_cli(*args)
    match = re.match(r"backend valkey: valkey-server pid (\d+) on .* and (\S+), password", status)
    assert match, status
    pid, socket_path = int(match.group(1)), match.group(2)
    client = redis.Redis(unix_socket_path=socket_path, password=password_beside(socket_path))

    def evalsha_calls() -> int:
        return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    # The replay is under way: with two pipelines of 1000 calls in flight, a server that has run
    # 5000 calls has had the first pipelines' replies read (the output fills only at the end).
    wait_until(
        lambda: still_running(proc, "the replay began") and evalsha_calls() >= 5000,
        "5000 script calls run on the server",
        timeout_s=120,
    )
    client.close()
    os.kill(pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr
    done = int(re.search(r"after (\d+) of 400000 decisions", stderr).group(1))
    assert f"the {done} decisions made are in {out_csv}" in stderr
    out = pd.read_csv(out_csv)
    assert len(out) == done > 0
    in_time = np.argsort(shuffled["t_ms"].to_numpy(), kind="stable")[:done]  # what was decided
    assert out["line"].tolist() == sorted(in_time + 1)  # all of it, in input order
    ref = REFERENCES["sliding_log"](LIMIT, WINDOW_S * 1000)
    first = shuffled.iloc[in_time]
    decided = {
        i: int(ref.decide(c, t).allowed)
        for i, t, c in zip(in_time, first["t_ms"], first["client"], strict=True)
    }
    assert out["allowed"].tolist() == [decided[line - 1] for line in out["line"]]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_replay_leaves_no_temporary_files(tmp_path, sig):
    """A trace out of order is sorted in runs under TMPDIR; however the run ends, they go."""
    tmp, trace_csv = tmp_path / "tmp", tmp_path / "trace.csv"
    tmp.mkdir()
    ordered = write_trace(tmp_path / "ordered.csv", 400_000)
    ordered.iloc[::-1].to_csv(trace_csv, index=False)  # newest first: every chunk out of order
    args = ["replay", str(trace_csv), "--algorithm", "fixed_window", "--limit", "5"]
    args += ["--window", "1", "--out", str(tmp_path / "out.csv")]
    proc, _ = start_cli(*args, announced=False, TMPDIR=str(tmp))
    deadline = time.monotonic() + 120
    while not list(tmp.glob("*/run-*")):  # the first sorted run is on disk
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode in (130, 128 + sig) and "interrupted" in stderr, stderr
    assert "Traceback" not in stderr
    assert list(tmp.iterdir()) == []
