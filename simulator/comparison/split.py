"""A trace read once, checked, and dealt by client into shard files in time order.

Every candidate is replayed over the same requests, and a client's decisions depend on its own
requests only (``per_client`` in the registry), so a trace can be split by client: every request
of one client lands in one shard (the CRC-32 of the client's bytes, modulo the number of shards,
the same in every process and on every machine), each shard in time order (ties in file order),
each request with its position in the trace. A shard is a file of pickled blocks under a folder
of the caller's; replaying it needs nothing else, so a shard can go to any worker that sees the
folder. One shard is the whole trace in time order.

While the trace is dealt, how much of its span it covers is found
(:mod:`~simulator.comparison.coverage`), and its time resolution: the coarsest of 1 s, 100 ms, 10 ms and
1 ms that divides every time (an access log's times are whole seconds). Nothing finer than that
can be known of the traffic, and a limiter whose decisions turn on the milliseconds between two
requests is decided on times that were rounded before it saw them.
"""

from __future__ import annotations

import math
import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from simulator.comparison.coverage import Coverage, CoverageCount
from simulator.playback.scan import scan_trace
from simulator.playback.spool import SpoolError
from simulator.playback.traces import Requests, TraceError, TraceFormat

__all__ = [
    "SplitTrace",
    "split_trace",
    "read_shard",
    "shard_of",
    "RESOLUTIONS_MS",
    "MAX_BUCKETS",
    "MAX_SHARDS",
]

#: The time resolutions a trace is tested for, coarsest first.
RESOLUTIONS_MS = (1000, 100, 10, 1)
#: Requests held for all the shards together before a shard's block is written.
BLOCK_REQUESTS = 65_536
#: The most shards a trace is split into (each is an open file while the trace is dealt).
MAX_SHARDS = 512
#: The most time buckets a timeline holds (a bucket is a whole number of seconds).
MAX_BUCKETS = 200_000


def shard_of(client: str, shards: int) -> int:
    """The shard of ``client``: the CRC-32 of its bytes modulo ``shards`` (stable everywhere)."""
    if shards == 1:
        return 0
    return zlib.crc32(client.encode("utf-8", "surrogateescape")) % shards


@dataclass
class SplitTrace:
    """What the read found, and where the shards are."""

    path: Path
    requests: int = 0
    clients: int = 0
    t_min_ms: int = 0
    t_max_ms: int = 0
    resolution_ms: int = 1000
    in_order: bool = True
    costs: bool = False
    shard_files: list[Path] = field(default_factory=list)
    shard_requests: list[int] = field(default_factory=list)
    #: how much of its span the trace covers (found while it is dealt)
    coverage: Coverage | None = None

    @property
    def span_s(self) -> float:
        return (self.t_max_ms - self.t_min_ms) / 1000

    def timeline(self, longest_window_ms: int) -> tuple[int, int, int]:
        """``(t0_ms, bucket_ms, buckets)`` of a timeline covering the trace and one window
        after its last request, in whole seconds, at most :data:`MAX_BUCKETS` buckets."""
        span = self.t_max_ms + longest_window_ms - self.t_min_ms + 1
        bucket_ms = 1000 * max(1, math.ceil(span / 1000 / MAX_BUCKETS))
        return self.t_min_ms, bucket_ms, math.ceil(span / bucket_ms) + 1


def split_trace(
    path: str | Path,
    fmt: TraceFormat,
    workdir: str | Path,
    shards: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> SplitTrace:
    """Read the trace at ``path`` (every line checked first: a bad one is refused naming its
    line, before any decision), then deal its requests into ``shards`` files under ``workdir``,
    each in time order. Memory holds one chunk of the trace and one block per shard."""
    path, workdir = Path(path), Path(workdir)
    scan = scan_trace(path, fmt, workdir, on_progress)
    if not scan.requests:
        raise TraceError(f"{path}: the trace holds no requests")
    out = SplitTrace(path, scan.requests, 0, scan.t_min_ms, scan.t_max_ms, in_order=scan.in_order)
    out.costs = scan.costs
    out.shard_files = [workdir / f"shard-{k:05d}.pickle" for k in range(shards)]
    out.shard_requests = [0] * shards
    try:
        files = [f.open("wb") for f in out.shard_files]
        try:
            out.resolution_ms, out.clients = _deal(scan.in_time_order(), out, files)
        finally:
            for f in files:
                f.close()
            scan.close()
    except OSError as exc:
        raise SpoolError(f"{workdir}: cannot write the shards ({exc.strerror or exc})") from None
    return out


def _deal(parts: Iterable[Requests], out: SplitTrace, files: Sequence[BinaryIO]) -> tuple[int, int]:
    """Deal the requests (in time order) into the shards' ``files``, a block at a time, counted
    in ``out.shard_requests``; returns the trace's time resolution (ms) and how many clients."""
    shards = len(files)
    resolutions = list(RESOLUTIONS_MS)
    seen: set[str] = set()
    buffers: list[list[Requests]] = [[] for _ in range(shards)]
    held = [0] * shards
    block = max(1024, BLOCK_REQUESTS // shards)
    covered = CoverageCount(out.t_min_ms, out.t_max_ms)
    for part in parts:
        covered.add(part.t_ms)
        while resolutions[0] > 1 and any(t % resolutions[0] for t in part.t_ms):
            resolutions.pop(0)
        seen.update(part.clients)
        for k, piece in _dealt(part, shards):
            out.shard_requests[k] += len(piece.t_ms)
            buffers[k].append(piece)
            held[k] += len(piece.t_ms)
            if held[k] >= block:
                pickle.dump(_joined(buffers[k]), files[k], pickle.HIGHEST_PROTOCOL)
                buffers[k], held[k] = [], 0
    for k, buffered in enumerate(buffers):
        if buffered:
            pickle.dump(_joined(buffered), files[k], pickle.HIGHEST_PROTOCOL)
    out.coverage = covered.result()
    return resolutions[0], len(seen)


def _dealt(part: Requests, shards: int) -> Iterator[tuple[int, Requests]]:
    if shards == 1:
        yield 0, Requests(list(part.positions), part.t_ms, part.clients, part.costs)
        return
    which = [shard_of(c, shards) for c in part.clients]
    for k in sorted(set(which)):
        at = [i for i, s in enumerate(which) if s == k]
        costs = None if part.costs is None else [part.costs[i] for i in at]
        yield (
            k,
            Requests(
                [part.positions[i] for i in at],
                [part.t_ms[i] for i in at],
                [part.clients[i] for i in at],
                costs,
            ),
        )


def _joined(parts: list[Requests]) -> tuple:
    positions: list[int] = []
    t_ms: list[int] = []
    clients: list[str] = []
    costs: list[int] | None = None if parts[0].costs is None else []
    for p in parts:
        positions += list(p.positions)
        t_ms += p.t_ms
        clients += p.clients
        if costs is not None and p.costs is not None:
            costs += p.costs
    return positions, t_ms, clients, costs


def read_shard(path: str | Path) -> Iterator[Requests]:
    """The requests of one shard file, in time order, a block at a time."""
    with Path(path).open("rb") as fh:
        while True:
            try:
                positions, t_ms, clients, costs = pickle.load(fh)
            except EOFError:
                return
            yield Requests(positions, t_ms, clients, costs)
