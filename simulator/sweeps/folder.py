"""A sweep's folder: checked before any task runs, and held by one sweep at a time.

The folder must be a folder this process can write into: a path that is a file (``/dev/full``),
or under a place no one can write (``/proc``), is one message before anything is computed, not
an error at the first result. While a sweep runs it holds ``<folder>/.lock``, made with
``O_EXCL`` and holding its process id: a second sweep into the same folder stops at once with
one message naming the folder, instead of computing every task a second time. A lock left by a
sweep that died without removing it (its process is gone) is taken over. A folder holding a
``*.parquet`` that is not a task file (named otherwise) is refused: the results read as one
dataset with ``pandas.read_parquet(folder)`` only while the folder holds nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from simulator.checks import ConfigError

__all__ = ["LOCK_NAME", "check_folder", "holding"]

LOCK_NAME = ".lock"


def check_folder(folder: Path) -> Path:
    """Make ``folder`` (and its parents) if needed; one ConfigError if it cannot hold results."""
    folder = Path(folder)
    for place in (folder, *folder.parents):
        if place.exists() and not place.is_dir():
            raise ConfigError(f"output folder {folder}: {place} is a file, not a folder")
        if place.exists():
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"output folder {folder}: cannot make it ({_why(exc)})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"output folder {folder}: cannot write into it (permission denied)")
    from simulator.sweeps.dataset import foreign_files

    stray = foreign_files(folder)
    if stray:
        more = f" (and {len(stray) - 1:,} more)" if len(stray) > 1 else ""
        raise ConfigError(
            f"output folder {folder}: holds {stray[0].name}{more}, not a task file of a sweep; "
            "pandas.read_parquet(folder) would read it with the results: move it out, or "
            "give another --out-dir"
        )
    return folder


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _holder(lock: Path) -> int | None:
    """The pid written in ``lock`` if that process is alive; None for a stale or empty lock."""
    try:
        text = lock.read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return None
    pid = int(text) if text.isdigit() else 0
    return pid if pid > 0 and _alive(pid) else None


@contextlib.contextmanager
def holding(folder: Path) -> Iterator[Path]:
    """Hold ``folder``'s lock for the block (see the module text); the lock file's path."""
    lock = Path(folder) / LOCK_NAME
    for _ in range(3):  # a stale lock is removed and taken; a race for it is retried
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pid = _holder(lock)
            if pid is not None:
                raise ConfigError(
                    f"output folder {folder}: another sweep (process {pid}) is writing into it; "
                    f"wait for it to end, or stop it, then run this again (if no sweep runs "
                    f"there, process {pid} is another program: remove {lock})"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # its process is gone: the lock is stale
            continue
        except OSError as exc:
            raise ConfigError(
                f"output folder {folder}: cannot write into it ({_why(exc)})"
            ) from None
        try:
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError as exc:
            os.close(fd)
            lock.unlink(missing_ok=True)
            if exc.errno == errno.ENOSPC:
                raise ConfigError(f"output folder {folder}: the disk is full") from None
            raise ConfigError(
                f"output folder {folder}: cannot write into it ({_why(exc)})"
            ) from None
        os.close(fd)
        break
    else:
        raise ConfigError(f"output folder {folder}: cannot take its lock {lock}")
    try:
        yield lock
    finally:
        if _holder(lock) == os.getpid():  # never remove a lock another sweep took over
            lock.unlink(missing_ok=True)
