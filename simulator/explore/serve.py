"""Serve the explorer as a web page (Voilà), with each visitor's kernel ended when it is left.

Every page load starts a kernel (about 250 MB), which makes the page and its first run. The
explorer's worker processes (two, about 170 MB each; :mod:`simulator.explore.pool`) start only
with the first change the page sends, so a plain GET that never connects - a crawler, a loop of
requests - costs a kernel and no workers. A kernel whose page was closed or reloaded has no
connection left; Voilà's kernel manager ends it after ``idle_s`` seconds idle, checked every
``every_s`` seconds, and a kernel ends the processes it started with it (an embedded Valkey and
the workers die with their parent). An open page is never culled, however idle.

A loop of GETs can start kernels faster than the cull ends them, so at most ``most_kernels``
live at once (:class:`BoundedKernelManager`): a GET past the bound is answered with HTTP 503 and
one line saying so, never a new kernel, until a kernel ends and frees its room.

A kernel takes seconds to start and import the package, so ``make explore`` keeps one
*preheated* (Voilà's ``preheat_kernel``): started with the notebook run - the explorer made,
its first run in the cache - and waiting for the page that takes it, whose address it then
reads (:meth:`simulator.explore.app.Explorer.refresh`). A page load takes that kernel and
draws at once; the next one is started :data:`FILL_S` seconds later. The kernel kept ready
counts toward ``most_kernels``, is never culled, starts no workers (no page has changed
anything yet) and ends with the server.

``python -m simulator.explore.serve [--port N] [--idle-s S] [--most-kernels N]`` is what
``make explore`` runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer

__all__ = [
    "voila_argv", "descendants", "stop_served", "main", "BoundedKernelManager",
    "NOTEBOOK", "IDLE_S", "EVERY_S", "MOST_KERNELS",
]  # fmt: skip

#: The explorer's notebook (Voilà shows its outputs and prose, never its code).
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "00_explorer.ipynb"
#: Seconds a kernel without a page may stay idle before it is ended.
IDLE_S = 120
#: Seconds between two checks for such kernels.
EVERY_S = 30
#: Kernels alive at once (about 250 MB each) before a page load is refused.
MOST_KERNELS = 8


class BoundedKernelManager(AsyncMappingKernelManager):  # type: ignore[misc]
    """Voilà's kernel manager with a bound: the kernel past ``most_kernels`` is refused, not started.

    Kernels still starting count too (a kernel joins ``list_kernel_ids`` only once it runs), so a
    burst of concurrent GETs cannot slip past the bound while the first ones start.
    """

    most_kernels = Integer(MOST_KERNELS, min=1, config=True, help="kernels alive at once")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._starting = 0

    async def start_kernel(self, **kwargs: Any) -> str:  # type: ignore[override]  # async here
        if len(self.list_kernel_ids()) + self._starting >= self.most_kernels:
            busy = f"{self.most_kernels} explorer kernels already running; try again later"
            raise HTTPError(503, busy, reason=busy)  # the status line and the error page say it
        self._starting += 1
        try:
            kernel_id: str = await super().start_kernel(**kwargs)
        finally:
            self._starting -= 1
        return kernel_id


def voila_argv(
    notebook: str | Path = NOTEBOOK,
    port: int = 8866,
    *,
    idle_s: float = IDLE_S,
    every_s: float = EVERY_S,
    most_kernels: int = MOST_KERNELS,
    preheat: bool = False,
) -> list[str]:
    """The command that serves ``notebook`` on 127.0.0.1:``port``, culling left kernels and
    refusing a page load past ``most_kernels`` kernels alive; with ``preheat``, one kernel
    is kept started with the notebook run, for the next page (see the module's docstring)."""
    manager = "--MappingKernelManager"
    # By name, not __module__: run as ``python -m`` this module is ``__main__`` to itself.
    bounded = "simulator.explore.serve.BoundedKernelManager"
    return [
        sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
        "--Voila.ip=127.0.0.1",
        f"--VoilaConfiguration.multi_kernel_manager_class={bounded}",
        f"--BoundedKernelManager.most_kernels={most_kernels}",
        f"{manager}.cull_idle_timeout={idle_s:g}",
        f"{manager}.cull_interval={every_s:g}",
        f"{manager}.cull_connected=False",  # a page still open keeps its kernel
        *(_PREHEAT if preheat else ()),
    ]  # fmt: skip


#: One kernel kept ready, its notebook run up to the page's address (which it waits for:
#: :meth:`simulator.explore.app.Explorer.refresh`); the next one started FILL_S seconds after
#: a page took it, so that page's first changes do not share the cores with a kernel starting.
FILL_S = 5
_PREHEAT = (
    "--VoilaConfiguration.preheat_kernel=True",
    "--VoilaConfiguration.default_pool_size=1",
    f"--VoilaKernelManager.fill_delay={FILL_S}",
)


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
    parser.add_argument(
        "--most-kernels",
        type=int,
        default=MOST_KERNELS,
        help=f"kernels alive at once; a page load past them gets HTTP 503 ({MOST_KERNELS})",
    )
    args = parser.parse_args(argv)
    if args.idle_s <= 0 or not 0 < args.port < 65536:
        parser.error("--idle-s must be > 0 and --port a port number")
    if args.most_kernels < 1:
        parser.error(f"--most-kernels must be at least 1 kernel, not {args.most_kernels}")
    every_s = min(EVERY_S, args.idle_s)
    command = voila_argv(
        NOTEBOOK,
        args.port,
        idle_s=args.idle_s,
        every_s=every_s,
        most_kernels=args.most_kernels,
        preheat=True,
    )
    print(f"The explorer: http://127.0.0.1:{args.port}/ (Ctrl-C stops it)", flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
