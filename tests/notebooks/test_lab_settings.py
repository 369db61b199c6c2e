"""`make lab`'s JupyterLab shows no news toast: the project's settings folder says so, and a
JupyterLab started the way the Makefile starts it reads that setting back."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "lab-settings"
PLUGIN = "@jupyterlab/apputils-extension:notification"
START_S = 180  # a busy two-core machine can take a minute to start JupyterLab


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_makefile_points_lab_at_the_settings_folder():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(
        r'JUPYTERLAB_SETTINGS_DIR="\$\(CURDIR\)/lab-settings" \$\(PY\) -m jupyter lab', makefile
    )
    assert (
        SETTINGS / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    ).exists()


@pytest.mark.slow
def test_jupyterlab_reads_news_and_update_checks_off(tmp_path):
    port, token = _free_port(), "lab-settings-test"
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(SETTINGS),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ip", "127.0.0.1", "--port", str(port), "--ServerApp.port_retries=0", f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={ROOT / 'notebooks'}",
    ]  # fmt: skip
    with (tmp_path / "lab.log").open("wb") as log:
        server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/lab/api/settings/{PLUGIN}?token={token}"
        reply = _get(url, server, tmp_path / "lab.log")
        composite = reply["settings"]
        assert composite["fetchNews"] == "false", composite
        assert composite["checkForUpdates"] is False, composite
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _get(url: str, server: subprocess.Popen[bytes], log: Path) -> dict:
    """The JSON at ``url`` once the server answers (polled until it does, or has exited)."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as reply:
                return json.loads(reply.read())
        except (urllib.error.URLError, ConnectionError) as error:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"JupyterLab did not answer ({error}):\n{log.read_text()}"
                ) from error
            time.sleep(0.5)  # polling a port that is not open yet, not timing anything
