"""Inputs that are not what a trace or a candidates file should be: a device, a FIFO, a field
or a line past any sensible length. Each is one message naming the file (and line), exit 2,
no traceback, and nothing waits on a FIFO for a writer that never comes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import one_message, run_main

# The fake server, named: compare opens its backend before it reads the trace, and on the
# default one each of these refusals would start (and stop) a valkey-server first.
FAKE = ("--backend", "fakeredis")
FW = ("--algorithm", "fixed_window", "--limit", "10", "--window", "1", *FAKE)
COMPARE = (
    *("--baseline", "fixed_window:limit=10,window=1", "--candidate", "gcra:limit=10,window=1"),
    *FAKE,
)


def small_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n5,b\n")
    return trace


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_a_field_over_128_kib_is_one_message_with_its_line(tmp_path, command):
    trace = tmp_path / "long.csv"
    trace.write_text("t_ms,client\n0,a\n1," + "x" * 200_000 + "\n2,b\n")
    extra = FW if command == "replay" else COMPARE
    one_message(run_main(command, trace, *extra), f"{trace}:3:", "131,072")


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_a_200_mb_last_line_is_refused_without_holding_it(tmp_path, command):
    trace = tmp_path / "huge.csv"
    with trace.open("w") as fh:
        fh.write("t_ms,client\n0,a\n")
        block = "y" * (1 << 20)
        for _ in range(200):
            fh.write(block)
    extra = FW if command == "replay" else COMPARE
    one_message(run_main(command, trace, *extra), f"{trace}:3:", "longer than")


def test_a_long_access_log_line_is_refused_with_its_line(tmp_path):
    trace = tmp_path / "huge.log"
    trace.write_text('h - - [10/Oct/2000:13:55:36 -0700] "GET /' + "z" * (2 << 20) + '"\n')
    one_message(run_main("replay", trace, "--format", "clf", *FW), f"{trace}:1:", "longer than")


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_dev_zero_as_a_trace_is_refused(command):
    extra = FW if command == "replay" else COMPARE
    one_message(run_main(command, "/dev/zero", *extra, timeout=120), "/dev/zero", "regular file")


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_a_fifo_as_a_trace_is_refused_without_waiting(tmp_path, command):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    extra = FW if command == "replay" else COMPARE
    one_message(run_main(command, fifo, *extra, timeout=120), str(fifo), "FIFO")


def test_a_folder_as_a_trace_is_refused(tmp_path):
    one_message(run_main("replay", tmp_path, *FW), str(tmp_path), "folder")


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_candidates_must_be_a_regular_file(tmp_path, kind):
    path = Path(kind)
    if kind == "fifo":
        path = tmp_path / "c.toml"
        os.mkfifo(path)
    done = run_main(
        "compare", small_trace(tmp_path), "--baseline", "fixed_window:limit=10,window=1",
        "--candidates", path, timeout=120,
    )  # fmt: skip
    one_message(done, str(path), "regular file")


def test_a_sweep_spec_must_be_a_regular_file():
    done = run_main("sweep", "/dev/zero", "--scheduler", "serial", timeout=120)
    one_message(done, "/dev/zero", "regular file")
