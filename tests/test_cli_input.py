"""Bad input on the command line: one message naming the field, exit status 2, nothing written.

Each case here was a traceback (exit 1) or a silent wrong answer once: a window that rounds to
0 ms, a limit or a window past what a Lua number holds exactly, a chart job that does not exist,
and a SIGTERM that ended ``charts`` without a word.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


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
    assert "fixed_window         2 of 2" in out.stdout  # one per 1 ms window


def test_charts_only_refuses_an_unknown_job_and_names_the_valid_ones(tmp_path):
    out = run("charts", "--out-dir", str(tmp_path), "--only", "nosuchword")
    assert out.returncode == 2
    assert "nosuchword" in out.stderr
    for job in ("burst", "accuracy", "queue", "memory"):
        assert job in out.stderr
    assert list(tmp_path.iterdir()) == []


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
