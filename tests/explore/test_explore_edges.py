"""What the explorer's page lets in from outside: the trace box reads only a regular file of a
bounded size, and a plain GET of the served page (no browser, no connection) starts a kernel
but none of the explorer's worker processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from simulator.backends.process import free_port
from simulator.checks import ConfigError
from simulator.explore import Runner, Settings, tracebox
from simulator.explore.serve import descendants, stop_served, voila_argv

ROOT = Path(__file__).resolve().parents[2]
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0


def test_a_fifo_in_the_trace_box_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"^trace file: .* is not a regular file"):
        Runner().run(Settings(algorithms=("fixed_window",), trace=str(fifo)))


def test_a_device_in_the_trace_box_is_refused_unread():
    with pytest.raises(ConfigError, match=r"^trace file: /dev/zero is not a regular file"):
        Runner().run(Settings(algorithms=("fixed_window",), trace="/dev/zero"))


def test_a_trace_past_the_bound_is_refused_naming_the_box_and_the_bound(tmp_path, monkeypatch):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i},a\n" for i in range(100)))
    monkeypatch.setattr(tracebox, "MOST_TRACE_BYTES", 200)
    with pytest.raises(ConfigError, match=r"^trace file: .* is [\d,]+ bytes, at most 200 here"):
        Runner().run(Settings(algorithms=("fixed_window",), trace=str(trace)))
    monkeypatch.setattr(tracebox, "MOST_TRACE_BYTES", 10_000)
    outcome = Runner().run(Settings(algorithms=("fixed_window",), trace=str(trace)))
    assert outcome.decisions == 100


def _children_running(pid: int, word: bytes) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if word in cmdline and state != "Z":
            found.append(child)
    return found


@pytest.mark.slow
def test_plain_gets_of_the_page_start_no_worker_processes(tmp_path):
    pytest.importorskip("voila")
    shutil.copytree(
        ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("0[1-9]*")
    )
    jupyter = tmp_path / ".jupyter"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(jupyter),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("SIMULATOR_EXPLORER_WORKERS", None)  # the page's own default: workers on 2 cores
    port = free_port(False)
    argv = voila_argv("notebooks/00_explorer.ipynb", port)
    log = tmp_path / "voila.log"
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        gets = 3
        for _ in range(gets):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT_S) as page:
                body = page.read().decode("utf-8", "replace")
            assert "explorer" in body  # the page was made: the notebook ran in its kernel
        kernels = _children_running(server.pid, b"ipykernel")
        assert 1 <= len(kernels) <= gets, kernels
        workers = _children_running(server.pid, b"multiprocessing")
        assert workers == [], "a page that never connected started worker processes"
    finally:
        stop_served(server)
