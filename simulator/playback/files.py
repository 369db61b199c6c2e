"""The files a run reads: regular files only, opened without waiting.

A trace, a candidates file or a sweep spec named on the command line could be anything the
path leads to: ``/dev/zero`` would be read for ever (a line that never ends fills memory), a
FIFO would block the open until some writer comes, a directory cannot be read at all. Each is
opened here without blocking (``O_NONBLOCK``, so a FIFO answers at once), looked at with
``fstat`` on the very descriptor that will be read (no race with a rename), and refused with one
message unless it is a regular file; the descriptor then reads as usual.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from simulator.checks import ConfigError

__all__ = ["open_regular", "read_regular", "KINDS"]

#: What a path that is not a regular file is, in the words of the message.
KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a file")


def open_regular(path: str | Path, what: str, error: type[ValueError] = ConfigError) -> BinaryIO:
    """``path`` opened for reading bytes, or ``error`` naming it: it must be a regular file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise error(f"{path}: cannot open the {what} ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: is not a regular file but {_kind(mode)}; a {what} is a file")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(
    path: str | Path, what: str, most_bytes: int, error: type[ValueError] = ConfigError
) -> bytes:
    """The bytes of a regular file of at most ``most_bytes``, or ``error`` naming it."""
    with open_regular(path, what, error) as fh:
        try:
            data = fh.read(most_bytes + 1)
        except OSError as exc:
            raise error(f"{path}: cannot read the {what} ({exc.strerror})") from None
    if len(data) > most_bytes:
        raise error(f"{path}: a {what} is at most {most_bytes:,} bytes; this one is larger")
    return data
