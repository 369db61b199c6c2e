"""The served explorer page as its tests start it: a copy of the explorer's notebook under a
temporary folder, Voilà on a free port with Jupyter's folders of its own, stopped by its own
handle; and the processes it started that are still running."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simulator.backends.process import free_port
from simulator.explore.serve import descendants, stop_served, voila_argv

ROOT = Path(__file__).resolve().parents[2]
#: Debian's Chromium, the browser the browser tests drive (never a downloaded one).
CHROMIUM = Path("/usr/bin/chromium")
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0


@contextlib.contextmanager
def served(tmp_path: Path, **options: Any) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """The explorer served from ``tmp_path`` (``voila_argv`` ``options``), once its port
    answers: the server, its port and its log."""
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
    argv = voila_argv("notebooks/00_explorer.ipynb", port, **options)
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
                time.sleep(0.5)  # polling interval, not a correctness wait
        yield server, port, log
    finally:
        stop_served(server)


def children_running(pid: int, word: bytes) -> list[int]:
    """The processes below ``pid`` whose command line holds ``word``, not yet reaped."""
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


def need_chromium() -> None:
    """Skip the calling test module, with one line saying what to install, without Chromium."""
    import pytest

    if not CHROMIUM.exists():
        pytest.skip(
            "browser tests need Debian's Chromium: apt-get install -y chromium fonts-dejavu",
            allow_module_level=True,
        )
