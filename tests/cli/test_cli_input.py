"""Bad input on the command line: one message naming the field, exit status 2, nothing written.

Each case here was a traceback (exit 1) or a silent wrong answer once: a window that rounds to
0 ms, a limit or a window past what a Lua number holds exactly, a chart job that does not exist,
and a SIGTERM that ended ``charts`` without a word.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_main as run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--window", "0.0001", "one millisecond"),
        ("--window", "1e18", "<= 1,125,899,906,843"),
        ("--window", "nan", "must be a number > 0"),
        ("--limit", "100000000000000000000", "from 1 to 1,125,899,906,842,624"),
        ("--limit", "0", "from 1 to"),
    ],
)
def test_replay_refuses_a_bad_limit_or_window_before_writing(tmp_path, option, value, says):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n")
    out_csv = tmp_path / "out.csv"
    args = {"--limit": "10", "--window": "1", option: value}
    out = run(
        "replay",
        str(trace),
        "--algorithm",
        "fixed_window",
        *(x for kv in args.items() for x in kv),
        "--out",
        str(out_csv),
    )
    assert out.returncode == 2, out.stderr
    assert f"argument {option}: " in out.stderr and says in out.stderr
    assert "Traceback" not in out.stderr
    assert not out_csv.exists()  # refused before the output file was opened


@pytest.mark.parametrize(
    "args",
    [("--window", "0.0004"), ("--limit", "1" + "0" * 20), ("--first", "1e300")],
)
def test_burst_refuses_values_the_scripts_cannot_hold(args):
    out = run("burst", *args)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"argument {args[0]}" in out.stderr


def test_the_smallest_window_runs():
    out = run("burst", "--limit", "1", "--window", "0.001", "--first", "0", "--second", "0.001")
    assert out.returncode == 0, out.stderr
    assert re.search(r"fixed_window +2 of 2", out.stdout)  # one per 1 ms window


def test_charts_only_refuses_an_unknown_job_and_names_the_valid_ones(tmp_path):
    out = run("charts", "--out-dir", str(tmp_path), "--only", "nosuchword")
    assert out.returncode == 2
    assert "nosuchword" in out.stderr
    for job in ("burst", "accuracy", "queue", "memory"):
        assert job in out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a real process, interrupted once its first chart is drawn: 5 to 10 s
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_charts_says_it_was_interrupted(tmp_path, sig):
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "charts", "--out-dir", str(tmp_path), "--full"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A process started with SIGINT ignored keeps ignoring it (as a shell's background job
        # does); the test runner may be one, so the child gets the default disposition back.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    # the first job's files are written once the package is loaded and the handlers are in place
    first = proc.stdout.readline()
    assert first.startswith("wrote "), first
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, stderr
    assert f"charts: interrupted ({signal.Signals(sig).name})" in stderr
    assert "Traceback" not in stderr


# --- the edges: out-dir, seed, sizes that do not fit, parameter values ---------------------------


@pytest.mark.parametrize("command", ["memory", "charts"])
@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_out_dir_that_is_a_file_is_refused_before_anything_runs(tmp_path, command, where):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    out_dir = afile if where == "a file" else afile / "sub"
    extra = ["--bigkey-only"] if command == "memory" else ["--only", "burst"]
    out = run(command, "--out-dir", str(out_dir), *extra)
    assert out.returncode == 2, out.stderr
    assert "argument --out-dir" in out.stderr and "is a file, not a folder" in out.stderr
    assert "Traceback" not in out.stderr
    assert afile.read_text() == "not a folder\n" and sorted(tmp_path.iterdir()) == [afile]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder of mode 0500")
def test_out_dir_that_cannot_be_written_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    out = run("charts", "--out-dir", str(locked), "--only", "burst")
    assert out.returncode == 2, out.stderr
    assert "argument --out-dir" in out.stderr and "cannot be written" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a file system nobody writes")
def test_out_dir_on_a_file_system_nobody_writes_is_refused():
    out = run("charts", "--out-dir", "/proc/no-such-folder", "--only", "burst")
    assert out.returncode == 2, out.stderr
    assert "argument --out-dir: /proc/no-such-folder: cannot be written" in out.stderr
    assert "Traceback" not in out.stderr


def test_check_refuses_a_negative_seed(tmp_path):
    script = tmp_path / "mine.lua"
    script.write_text("return {1, 0, 0}\n")
    out = run("check", str(script), "--as", "fixed_window", "--seed", "-1")
    assert out.returncode == 2, out.stderr
    assert "argument --seed: must be an integer from 0 to" in out.stderr and "'-1'" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args, names",
    [
        (("--limit", "100000000"), "--limit 100,000,000"),
        (("--per-burst", "1000", "--users", "100000"), "--per-burst 1,000: 2 bursts x 100,000"),
        (("--users", "1000000"), "2 bursts x 1,000,000 users x 100 ="),
        (("--users", "100000000"), "argument --users: must be an integer from 1 to"),
        (("--per-burst", "100000000"), "argument --per-burst: must be an integer from 1 to"),
        (("--shards", "100000000"), "argument --shards: must be an integer from 1 to 1,000,000"),
        (("--workers", "100000000"), "argument --workers: must be an integer from 1 to"),
    ],
)
def test_burst_refuses_up_front_what_does_not_fit_in_memory(args, names):
    out = run("burst", *args)
    assert out.returncode == 2, out.stderr
    assert names in out.stderr and "Traceback" not in out.stderr
    assert "MemoryError" not in out.stderr
    assert out.stdout == ""  # nothing ran


def test_burst_help_says_how_many_requests_fit():
    out = run("burst", "--help")
    assert "on this machine" in out.stdout and "bytes per decision" in out.stdout


@pytest.mark.parametrize(
    "args, names",
    [
        (("--decisions", "100000000"), "argument --decisions: must be an integer from 1 to"),
        (("--budget", "100000"), "--budget 100000: the embedded server may grow to"),
    ],
)
def test_memory_refuses_up_front_what_does_not_fit_in_memory(tmp_path, args, names):
    out = run("memory", "--bigkey-only", "--out-dir", str(tmp_path), *args)
    assert out.returncode == 2, out.stderr
    assert names in out.stderr and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1e300", "-1e300", "1" + "0" * 300])
def test_a_huge_parameter_value_is_shown_by_its_size_not_its_digits(value):
    out = run("burst", "--param", f"burst={value}")
    assert out.returncode == 2, out.stderr
    assert "params['burst']: must be an integer from 1 to" in out.stderr
    assert "1e+300" in out.stderr and "0" * 30 not in out.stderr
    assert len(out.stderr) < 300 and "Traceback" not in out.stderr


def test_a_typed_value_is_quoted_in_bounded_form():
    out = run("check", "x.lua", "--as", "fixed_window", "--seed", "9" * 5000)
    assert out.returncode == 2 and "argument --seed" in out.stderr
    assert "(5,000 characters)" in out.stderr and len(out.stderr) < 1500
