"""JupyterLab for a browser test: started over a folder of the test's own, stopped by its handle.

The lessons' drives (``tests/notebooks/``) and the explorer's class drive in JupyterLab
(``tests/explore/``) start it the same way: on a free port, with the project's settings folder
(the one ``make lab`` uses: no news, no update check), on that port or not at all (JupyterLab
would otherwise move to the next port and the test would wait on the wrong one), and ready once
it listens.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from simulator.backends.process import free_port
from simulator.explore.serve import stop_served

ROOT = Path(__file__).resolve().parents[1]
#: How long JupyterLab may take to listen on a busy 2-core machine.
START_S = 900.0


def start_lab(workdir: Path, drop: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], str]:
    """JupyterLab in ``workdir`` and its address, once it answers; its log is ``lab.log``.
    ``drop``: variables of this environment the server and its kernels must not see."""
    log = workdir / "lab.log"
    port = free_port(False)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(workdir / ".jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(workdir / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(workdir / ".jupyter" / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(workdir / ".jupyter" / "runtime"),
        "PYTHONPATH": str(ROOT),
    }
    for name in drop:
        env.pop(name, None)
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.token=", "--ServerApp.password=", "--ip", "127.0.0.1",
        "--port", str(port), "--ServerApp.port_retries=0", "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--ServerApp.root_dir={workdir}",
    ]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_S
    while True:
        if server.poll() is not None:
            raise AssertionError(f"JupyterLab exited: {log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return server, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                stop_served(server)
                raise AssertionError(
                    f"JupyterLab did not listen: {log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.5)  # polling a socket: the process gives nothing else to wait on


def lab_at(workdir: Path, drop: Sequence[str] = ()) -> Iterator[str]:
    """A fixture's body: JupyterLab in ``workdir`` for the fixture's life, stopped by its handle."""
    server, url = start_lab(workdir, drop)
    try:
        yield url
    finally:
        stop_served(server)
