"""compare's output files are checked before the run, as replay's are: one that cannot be
written, or two options naming one file, is refused before anything is computed; a disk that
fills after the run is one message, the scorecard already printed."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, one_message, run_main

SPECS = ("--baseline", "fixed_window:limit=3,window=1", "--candidate", "gcra:limit=3,window=1")
SPECS += ("--backend", "fakeredis")  # the default would start a valkey-server for each


def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("t_ms,client\n" + "".join(f"{i * 100},c{i % 3}\n" for i in range(40)))
    return path


@pytest.mark.parametrize("other", ["same", "dot", "link"])
def test_out_and_clients_out_naming_one_file_are_refused_up_front(tmp_path, other):
    out = tmp_path / "x.csv"
    second = {"same": out, "dot": tmp_path / "." / "x.csv", "link": tmp_path / "l.csv"}[other]
    if other == "link":
        second.symlink_to(out)
    done = run_main("compare", trace(tmp_path), *SPECS, "--out", out, "--clients-out", second)
    one_message(done, "--clients-out", "same file")
    assert not out.exists()


def test_out_on_a_full_device_is_one_message_after_the_scorecard(tmp_path):
    done = run_main("compare", trace(tmp_path), *SPECS, "--out", "/dev/full")
    one_message(done, "--out /dev/full", "cannot be written")
    assert "gcra" in done.stdout  # the scorecard was printed before the write


def _no_room() -> None:  # a file size limit of 0 bytes: as a full disk, every write fails
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


@pytest.mark.parametrize("option", ["--out", "--clients-out"])
def test_an_output_that_cannot_take_a_byte_is_refused_before_the_run(tmp_path, option):
    path = trace(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "compare", str(path), *SPECS, option,
         str(tmp_path / "new.csv")],
        capture_output=True, text=True, cwd=ROOT, preexec_fn=_no_room, timeout=600,
    )  # fmt: skip
    one_message(done, f"{option} {tmp_path / 'new.csv'}", "cannot be written")
    assert not (tmp_path / "new.csv").exists() and done.stdout == ""


def test_charts_makes_its_folder(tmp_path):
    charts = tmp_path / "new" / "charts"
    done = run_main("compare", trace(tmp_path), *SPECS, "--charts", charts)
    assert done.returncode == 0, done.stderr
    assert (charts / "compare_scorecard.png").is_file()


def test_charts_on_a_file_is_refused_up_front(tmp_path):
    path = trace(tmp_path)
    one_message(run_main("compare", path, *SPECS, "--charts", path), "--charts", "not a folder")
