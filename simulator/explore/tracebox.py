"""The explorer's trace box: which file it reads, how much of it, and what it says of a bad one.

The box takes a path typed on a page that someone else may be looking at, so it reads only a
regular file of at most :data:`MOST_TRACE_BYTES` - a device such as ``/dev/zero`` would be read
without end and a FIFO would block the run for ever - opened without waiting, and its messages
name the box, the file and what it expected, never the file's contents. A trace is read again
whenever its bytes change, and explored a span at a time (:func:`span_of`).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

import pandas as pd

from simulator.checks import ConfigError
from simulator.explore.settings import TRACE_FORMATS
from simulator.playback.traces import TraceError, read_trace

__all__ = ["MOST_TRACE_BYTES", "Traces", "span_of"]

#: The largest trace file the trace box reads (bytes): a log of some millions of lines, far
#: more than a span the explorer runs (:attr:`Runner.most_requests`).
MOST_TRACE_BYTES = 256 * 2**20


class Traces:
    """The last trace file read, as a frame, kept while its bytes stay the same."""

    def __init__(self) -> None:
        self._traces: dict[tuple[str, str, str, int], pd.DataFrame] = {}

    def read(self, path: str, fmt: str) -> tuple[str, pd.DataFrame]:
        """The trace's digest (of its bytes) and its frame; a ConfigError naming the trace box,
        never quoting the file (the page may be seen by someone who may not read it)."""
        if not path.strip():
            raise ConfigError("trace file: empty; give the path of a CSV or an access log")
        file = Path(path).expanduser()
        data = trace_bytes(file, path)
        digest = hashlib.sha1(data).hexdigest()
        key = (str(file.resolve()), fmt, digest, 0)
        if key not in self._traces:
            try:
                frame = read_trace(file, fmt)
            except (TraceError, ConfigError) as exc:
                raise ConfigError(unquoted(str(exc), path, fmt)) from None
            self._traces.clear()
            self._traces[key] = frame
        return digest, self._traces[key]


def trace_bytes(file: Path, path: str) -> bytes:
    """The bytes of the trace box's file: a regular file of at most :data:`MOST_TRACE_BYTES`,
    else a ConfigError naming the box (opened without waiting, so a FIFO cannot block)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigError(f"trace file: cannot read {path} ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"trace file: {path} is not a regular file (a CSV or an access log)")
        if info.st_size > MOST_TRACE_BYTES:
            raise ConfigError(
                f"trace file: {path} is {info.st_size:,} bytes, at most {MOST_TRACE_BYTES:,} "
                "here (give an excerpt of it)"
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MOST_TRACE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"trace file: cannot read {path} ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > MOST_TRACE_BYTES:  # it grew since
        raise ConfigError(
            f"trace file: {path} is over {MOST_TRACE_BYTES:,} bytes, at most that here"
        )
    return data


def span_of(trace: pd.DataFrame, from_s: float, span_s: float) -> pd.DataFrame:
    """The requests of ``trace`` from ``from_s`` seconds after its first request, for ``span_s``
    seconds (0: to the end)."""
    if not len(trace) or (from_s <= 0 and span_s <= 0):
        return trace
    first = int(trace["t_ms"].min())
    t = trace["t_ms"].to_numpy(dtype="int64")
    lo = first + round(from_s * 1000)
    keep = t >= lo
    if span_s > 0:
        keep &= t < lo + round(span_s * 1000)
    return trace[keep].reset_index(drop=True)


def unquoted(message: str, path: str, fmt: str) -> str:
    """A trace reader's message without the file's contents: where, and what it expected."""
    where = re.match(r"^(.*?:\d+):", message)
    label = TRACE_FORMATS.get(fmt, fmt)
    if where:
        line = where.group(1).rsplit(":", 1)[1]
        return f"trace file: line {line} of {path} is not a line of a {label} file"
    if "empty" in message:
        return f"trace file: {path} is empty"
    return f"trace file: {path} cannot be read as a {label} file"
