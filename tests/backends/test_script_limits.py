"""Nothing a script does can hang a run: a time budget per call, a heap cap, and Ctrl-C/SIGTERM
that reach a script stuck in a loop.

The command-line tests run the program in a subprocess, bounded by the test's own timeout: before
the budget existed they hung there, and the bound turns that into a failure instead of a stuck
test run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

from simulator.algorithms.scripts import add
from simulator.backends import FakeRedisBackend, ScriptLimitError
from simulator.checks import ConfigError

ROOT = Path(__file__).resolve().parents[2]
#: Bounds a subprocess that should end in about a second; only reached when it hangs.
BOUND_S = 60

HEADER = """--[[ ratelimit
keys = ["rl:spin:{client}"]
argv = ["now_ms"]
reply = { allowed = 1 }
]]
"""
# Loops from the first call after t_ms=0 on, so that a replay has one decision to keep.
LOOP = HEADER + "if tonumber(ARGV[1]) > 0 then while true do end end\nreturn {1}\n"
# A loop that catches every error it meets: the stop must get past pcall.
PCALL_LOOP = HEADER + "while true do pcall(function() while true do end end) end\nreturn {1}\n"
HOG = HEADER + (
    "local t = {}\nfor i = 1, 1e9 do t[i] = string.rep('x', 100) .. i end\nreturn {1}\n"
)

# Runs the program as ``python -m simulator`` does, saying on stderr when the first script call
# starts, so that a test can send its signal while the call runs.
DRIVER = """
import runpy, sys
from simulator.backends import fake
plain = fake.FakeRedisBackend.call
def call(self, *args):
    print("calling the script", file=sys.stderr, flush=True)
    return plain(self, *args)
fake.FakeRedisBackend.call = call
runpy.run_module("simulator", run_name="__main__")
"""


def _env(**limits: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMULATOR_SCRIPT_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env | limits


def _run(args: list[str], cwd: Path, **limits: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=_env(**limits), timeout=BOUND_S)


@pytest.fixture
def loop(tmp_path):
    path = tmp_path / "spin.lua"
    path.write_text(LOOP)
    return path


# replay in the fast run (it keeps the decision before the loop too); the others in make test
@pytest.mark.parametrize(
    "command",
    ["replay", *(pytest.param(c, marks=pytest.mark.slow) for c in ("burst", "check", "charts"))],
)
def test_a_looping_script_is_stopped_after_its_budget_with_one_message(command, loop, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n")
    out = tmp_path / "decisions.csv"
    args = {
        "burst": ["burst", "--script", f"spin={loop}"],
        "replay": [
            *("replay", str(trace), "--script", f"spin={loop}", "--algorithm", "spin"),
            *("--limit", "5", "--window", "10", "--out", str(out)),
        ],
        "check": ["check", str(loop), "--as", "fixed_window"],
        "charts": [
            *("charts", "--only", "burst", "--script", f"spin={loop}"),
            *("--out-dir", str(tmp_path / "charts")),
        ],
    }[command]
    done = _run(args, tmp_path, SIMULATOR_SCRIPT_TIME_S="1")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert str(loop) in done.stderr and "ran longer than 1 s on keys" in done.stderr
    if command == "replay":
        assert pd.read_csv(out)["t_ms"].tolist() == [0]  # the decision before the loop is kept


@pytest.mark.slow  # filling 32 MiB of Lua strings, in a program of its own
def test_a_script_that_fills_the_heap_is_stopped_naming_the_cap(tmp_path):
    hog = tmp_path / "hog.lua"
    hog.write_text(HOG)
    # the time budget out of the way: on a busy machine filling 32 MiB can outlast the default
    limits = {"SIMULATOR_SCRIPT_MEMORY_MIB": "32", "SIMULATOR_SCRIPT_TIME_S": "600"}
    done = _run(["burst", "--script", f"hog={hog}"], tmp_path, **limits)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(hog) in done.stderr and "used more than 32 MiB of Lua memory" in done.stderr


@pytest.mark.parametrize("command", ["burst", "replay"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_end_a_run_stuck_in_a_script(signum, command, loop, tmp_path):
    # replay lets the pipeline in flight finish before it stops: the script loops in it.
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n2,b\n")
    out = tmp_path / "decisions.csv"
    args = {
        "burst": ["burst", "--script", f"spin={loop}"],
        "replay": [
            *("replay", str(trace), "--script", f"spin={loop}", "--algorithm", "spin"),
            *("--limit", "5", "--window", "10", "--out", str(out)),
        ],
    }[command]
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        cwd=tmp_path,
        env=_env(SIMULATOR_SCRIPT_TIME_S="3600"),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "calling the script"
        proc.send_signal(signum)
        code = proc.wait(timeout=BOUND_S)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()  # only the process this test started, by its own handle
            proc.wait()
    assert code == 128 + signum, err
    assert f"interrupted ({signal.Signals(signum).name})" in err and "Traceback" not in err
    if command == "replay":
        assert pd.read_csv(out)["t_ms"].tolist()[:1] == [0]  # the decision before it is kept


def test_the_fake_backend_stops_a_script_that_catches_errors_and_runs_on_afterwards():
    backend = FakeRedisBackend(script_time_s=0.2)
    spin, hog = add("test:pcall_loop", PCALL_LOOP), add("test:hog", HOG)
    fine = add("test:fine", "return redis.call('INCR', KEYS[1])")
    with pytest.raises(ScriptLimitError, match=r"test:pcall_loop ran longer than 0\.2 s"):
        backend.call(spin, ["rl:spin:{a}"], [0])
    assert backend.call(fine, ["k"], []) == 1  # the runtime is armed again, nothing left over
    backend = FakeRedisBackend(script_time_s=600, script_memory_mib=16)
    with pytest.raises(ScriptLimitError, match="test:hog used more than 16 MiB"):
        backend.call(hog, ["rl:spin:{a}"], [0])
    assert backend.call(fine, ["k"], []) == 1  # the heap collected, room again


def test_a_budget_from_the_environment_is_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMULATOR_SCRIPT_TIME_S", "soon")
    with pytest.raises(ConfigError, match="SIMULATOR_SCRIPT_TIME_S='soon'"):
        FakeRedisBackend()
    done = _run(["burst"], tmp_path, SIMULATOR_SCRIPT_MEMORY_MIB="-1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "SIMULATOR_SCRIPT_MEMORY_MIB='-1': expected a positive number of MiB" in done.stderr


@pytest.mark.parametrize("command", ["replay", "burst"])
@pytest.mark.server
def test_a_looping_script_does_not_meet_a_server_the_program_did_not_start(command, tmp_path):
    from simulator.backends.embedded import EmbeddedValkey

    loop = tmp_path / "spin.lua"
    loop.write_text(LOOP)
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n2,b\n3,c\n")
    out = tmp_path / "decisions.csv"
    with EmbeddedValkey() as server:  # stopped by its own handle (its pid) on the way out
        owner = server.client(socket_timeout=30)
        owner.set("someone-elses-key", "kept")
        args = {
            "replay": [
                *("replay", str(trace), "--script", f"spin={loop}", "--algorithm", "spin"),
                *("--limit", "5", "--window", "10", "--out", str(out)),
            ],
            "burst": ["burst", "--script", f"spin={loop}"],
        }[command]
        done = _run([*args, "--backend", server.url], tmp_path)
        # Right after the run: the server answers at once, not BUSY with the script.
        assert owner.ping() is True
        assert owner.get("someone-elses-key") == b"kept"
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and str(loop) in done.stderr
    # refused before the server runs it (tests/backends/test_foreign_server.py: with the flag, the
    # rehearsal on the fake server stops the loop; on a server the program started, SCRIPT KILL)
    assert "--run-script-on-foreign-server" in done.stderr


@pytest.mark.server
def test_a_script_that_wrote_before_it_looped_cannot_be_killed_and_says_so(tmp_path):
    wrote = tmp_path / "wrote.lua"
    wrote.write_text(HEADER + "redis.call('SET', KEYS[1], 1)\nwhile true do end\nreturn {1}\n")
    done = _run(["burst", "--script", f"wrote={wrote}", "--backend", "valkey"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and str(wrote) in done.stderr
    assert "refused SCRIPT KILL (the script had written); it is stopped on exit" in done.stderr
    pid = int(re.search(r"valkey-server pid (\d+)", done.stderr).group(1))  # type: ignore[union-attr]
    with pytest.raises(ProcessLookupError):  # the server the program started is gone
        os.kill(pid, 0)
