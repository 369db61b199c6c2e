"""What the explorer's page lets in from outside: the trace box reads only a regular file of a
bounded size, and a plain GET of the served page (no browser, no connection) starts a kernel
but none of the explorer's worker processes."""

from __future__ import annotations

import os
import urllib.request

import pytest
from served import WAIT_S, children_running, served

from simulator.checks import ConfigError
from simulator.explore import Runner, Settings, tracebox


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


@pytest.mark.slow
def test_plain_gets_of_the_page_start_no_worker_processes(tmp_path):
    pytest.importorskip("voila")
    with served(tmp_path) as (server, port, _log):
        gets = 3
        for _ in range(gets):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT_S) as page:
                body = page.read().decode("utf-8", "replace")
            assert "explorer" in body  # the page was made: the notebook ran in its kernel
        kernels = children_running(server.pid, b"ipykernel")
        assert 1 <= len(kernels) <= gets, kernels
        workers = children_running(server.pid, b"multiprocessing")
        assert workers == [], "a page that never connected started worker processes"
