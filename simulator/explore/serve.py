"""Serve the explorer as a web page (Voilà), with each visitor's kernel ended when it is left.

Every page load starts a kernel (about 250 MB), which makes the page and its first run. The
explorer's worker processes (two, about 170 MB each; :mod:`simulator.explore.pool`) start only
with the first change the page sends, so a plain GET that never connects - a crawler, a loop of
requests - costs a kernel and no workers. A kernel whose page was closed or reloaded has no
connection left; Voilà's kernel manager ends it after ``idle_s`` seconds idle, checked every
``every_s`` seconds, and a kernel ends the processes it started with it (an embedded Valkey and
the workers die with their parent). An open page is never culled, however idle.

``python -m simulator.explore.serve [--port N] [--idle-s S]`` is what ``make explore`` runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["voila_argv", "descendants", "stop_served", "main", "NOTEBOOK", "IDLE_S", "EVERY_S"]

#: The explorer's notebook (Voilà shows its outputs and prose, never its code).
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "00_explorer.ipynb"
#: Seconds a kernel without a page may stay idle before it is ended.
IDLE_S = 120
#: Seconds between two checks for such kernels.
EVERY_S = 30


def voila_argv(
    notebook: str | Path = NOTEBOOK,
    port: int = 8866,
    *,
    idle_s: float = IDLE_S,
    every_s: float = EVERY_S,
) -> list[str]:
    """The command that serves ``notebook`` on 127.0.0.1:``port``, culling left kernels."""
    manager = "--MappingKernelManager"
    return [
        sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
        "--Voila.ip=127.0.0.1",
        f"{manager}.cull_idle_timeout={idle_s:g}",
        f"{manager}.cull_interval={every_s:g}",
        f"{manager}.cull_connected=False",  # a page still open keeps its kernel
    ]  # fmt: skip


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the kernels a server started, theirs), read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


def stop_served(server: subprocess.Popen[bytes]) -> None:
    """Stop a server started with :func:`voila_argv` (or JupyterLab) by its own handle: SIGTERM
    to its pid, then to every process it started that is still running, by theirs."""
    below = descendants(server.pid)  # read first: once the server is gone they are orphans
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    for pid in below:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m simulator.explore.serve", description=__doc__)
    parser.add_argument("--port", type=int, default=8866, help="port on 127.0.0.1 (8866)")
    parser.add_argument(
        "--idle-s", type=float, default=IDLE_S, help=f"seconds before a left kernel ends ({IDLE_S})"
    )
    args = parser.parse_args(argv)
    if args.idle_s <= 0 or not 0 < args.port < 65536:
        parser.error("--idle-s must be > 0 and --port a port number")
    command = voila_argv(NOTEBOOK, args.port, idle_s=args.idle_s, every_s=min(EVERY_S, args.idle_s))
    print(f"The explorer: http://127.0.0.1:{args.port}/ (Ctrl-C stops it)", flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
