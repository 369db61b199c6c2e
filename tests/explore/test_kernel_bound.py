"""A loop of plain GETs of the served explorer cannot start kernels without end: past the
bound (two here) a GET is answered with HTTP 503 and one line saying why, and no kernel starts;
the command that ``make explore`` runs names the bounded manager so Voilà can import it."""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from simulator.backends.process import free_port
from simulator.explore import serve
from simulator.explore.serve import descendants, stop_served, voila_argv

ROOT = Path(__file__).resolve().parents[2]
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0


def _kernels_running(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"ipykernel" in cmdline and state != "Z":
            found.append(child)
    return found


@pytest.mark.slow
def test_gets_past_the_bound_are_refused_with_503_and_start_no_kernel(tmp_path):
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
    port = free_port(False)
    argv = voila_argv("notebooks/00_explorer.ipynb", port, most_kernels=2)
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
        statuses, refusals = [], []
        for _ in range(4):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT_S) as page:
                    statuses.append(page.status)
                    assert "explorer" in page.read().decode("utf-8", "replace")
            except urllib.error.HTTPError as refused:
                statuses.append(refused.code)
                refusals.append((refused.reason, refused.read().decode("utf-8", "replace")))
        assert statuses == [200, 200, 503, 503], (statuses, log.read_text()[-3000:])
        for reason, body in refusals:
            assert reason == "2 explorer kernels already running; try again later"
            assert reason in body  # Voilà's error page says it too
        kernels = _kernels_running(server.pid)
        assert 1 <= len(kernels) <= 2, kernels
        assert server.poll() is None  # a refusal leaves the server serving
    finally:
        stop_served(server)


def test_the_command_names_the_bounded_manager_by_an_importable_path(monkeypatch):
    ran: list[list[str]] = []
    monkeypatch.setattr(serve.os, "execv", lambda _path, argv: ran.append(argv))
    serve.main(["--port", "8866", "--most-kernels", "3"])
    (argv,) = ran
    (named,) = [a.split("=", 1)[1] for a in argv if "multi_kernel_manager_class=" in a]
    module, _, name = named.rpartition(".")
    assert getattr(importlib.import_module(module), name) is serve.BoundedKernelManager
    assert "--BoundedKernelManager.most_kernels=3" in argv


def test_a_bound_below_one_kernel_is_refused_with_status_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        serve.main(["--most-kernels", "0"])
    assert stopped.value.code == 2
    assert "--most-kernels must be at least 1 kernel, not 0" in capsys.readouterr().err
