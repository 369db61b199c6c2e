"""One pass over a trace file, and the file again in time order, in bounded memory.

A replay needs its requests in time order, and a trace may hold fifty million lines that are
mostly in order (a log is written as requests finish, not as they start). :func:`scan_trace`
reads the file once, checking every line, and keeps only what is out of order, in sorted runs on
disk (:mod:`simulator.playback.spool`); :meth:`TraceScan.in_time_order` then merges those runs with the
in-order start read again from the file. A file changed between the two reads is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.playback import spool as _spool
from simulator.playback.spool import Block, Spool
from simulator.playback.traces import Requests, TraceError, TraceFormat, iter_trace

__all__ = ["TraceScan", "scan_trace"]


def _stamp(path: Path) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class TraceScan:
    """What one pass over a trace file found, and the file again, in either order, on demand.

    The requests at the start that are in time order (``prefix`` of them; all, for most CSV
    traces) are read again from the file when wanted; the rest, if any, went into sorted runs on
    disk (a :class:`~simulator.playback.spool.Spool`) during the pass. Time order is then a merge of the
    two, and memory stays at a few blocks however long the trace.
    """

    path: Path
    fmt: TraceFormat
    requests: int = 0
    t_min_ms: int = 0
    t_max_ms: int = 0
    prefix: int = 0
    #: True when the trace gives each request a cost (a ``cost`` column).
    costs: bool = False
    spool: Spool | None = None
    stamp: tuple[int, ...] = ()

    @property
    def in_order(self) -> bool:
        return self.prefix == self.requests

    def in_file_order(self, chunk: int | None = None) -> Iterator[Requests]:
        if _stamp(self.path) != self.stamp:
            raise TraceError(
                f"{self.path}: changed since it was first read (still being written?); "
                "replay a copy"
            )
        return iter_trace(self.path, self.fmt, chunk)

    def in_time_order(self, chunk: int | None = None) -> Iterator[Requests]:
        """The requests in time order, ties in file order, in bounded chunks.

        In file order already: chunks of ``chunk`` (:data:`CHUNK_REQUESTS`); else the blocks of
        the merge (at most ``FAN_IN`` x ``BLOCK_ROWS`` requests each).
        """
        if self.spool is None:
            yield from self.in_file_order(chunk)
            return
        prefix = _first(self.in_file_order(_spool.BLOCK_ROWS), self.prefix)
        blocks = (
            Block(np.array(p.t_ms, "int64"), np.array(p.positions), _items(p)) for p in prefix
        )
        for block in self.spool.merged(blocks):
            if self.costs:  # the items are (client, cost) pairs
                clients, costs = (list(x) for x in zip(*block.items, strict=True))
                yield Requests(block.minor.tolist(), block.major.tolist(), clients, costs)
            else:
                yield Requests(block.minor.tolist(), block.major.tolist(), block.items)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()


def _items(part: Requests) -> list:
    """What the spool carries for each request: its client, or (client, cost)."""
    return part.clients if part.costs is None else list(zip(part.clients, part.costs, strict=True))


def _first(chunks: Iterable[Requests], n: int) -> Iterator[Requests]:
    """The first ``n`` requests of ``chunks``."""
    for part in chunks:
        if n <= 0:
            return
        if len(part.t_ms) > n:
            part = part.part(0, n)
        n -= len(part.t_ms)
        yield part


def scan_trace(
    path: str | Path,
    fmt: TraceFormat = "csv",
    workdir: str | Path | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    run_rows: int | None = None,
) -> TraceScan:
    """Read a trace once: check every line, count, find its time span and whether it is in
    order; requests from the first one out of order on go into sorted runs under ``workdir``
    (a temporary folder of the caller's; required only if the trace is out of order)."""
    path = Path(path)
    scan = TraceScan(path, fmt, stamp=_stamp(path))
    last = -1
    for part in iter_trace(path, fmt):
        scan.costs = part.costs is not None
        t = np.array(part.t_ms, dtype="int64")
        lo, hi = int(t.min()), int(t.max())
        scan.t_min_ms = lo if not scan.requests else min(lo, scan.t_min_ms)
        scan.t_max_ms = max(hi, scan.t_max_ms)
        scan.requests += len(t)
        if scan.spool is None:
            if t[0] >= last and (down := np.flatnonzero(t[1:] < t[:-1])).size == 0:
                scan.prefix += len(t)
                last = int(t[-1])
            else:
                first = 0 if t[0] < last else int(down[0]) + 1
                scan.prefix += first
                if workdir is None:
                    raise ValueError("workdir: needed to sort a trace that is out of order")
                scan.spool = Spool(workdir, run_rows)
                rest = part.part(first)
                scan.spool.add(rest.t_ms, rest.positions, _items(rest))
        else:
            scan.spool.add(part.t_ms, part.positions, _items(part))
        if on_progress is not None:
            on_progress(len(t))
    return scan
