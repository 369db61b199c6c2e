"""Request traces to replay: a CSV of ``t_ms,client`` or a web server's access log.

A trace is a list of requests in file order, each a time ``t_ms`` (whole milliseconds, any
origin) and a ``client`` (any string). Access logs in the Apache/Nginx combined (or common)
format are read with the remote host as the client and the request time as ``t_ms`` (ms since
the Unix epoch), so a real log can be replayed. A malformed line stops the read with a message
naming file and line. Those two readers are here; a log in any other format, or keyed by
anything but its remote host, is described by a :class:`TraceSource` and read by
:mod:`simulator.playback.formats` (:func:`iter_trace` takes either). gzip and zstd files are
read as streams (:mod:`simulator.playback.streams`).

A log may hold fifty million lines, so the readers hand the requests out in chunks of at most
:data:`CHUNK_REQUESTS` (:func:`iter_trace`); :func:`read_trace` gathers them into a frame for
those who want one in memory, and :mod:`simulator.playback.scan` reads a file once and then again
in time order, however long it is.

Times are read exactly: an integer as the integer it spells, a decimal (``12.5``, ``1.5e3``)
floored to its millisecond without passing through a float. A script computes with times as
Lua numbers, so a time must lie in ``0 <= t_ms <= MAX_T_MS`` (2^52 - 1); one outside is
refused, in both formats alike (an access log's date before 1970 too). Bytes that are not UTF-8
are kept as lone surrogates (``surrogateescape``), so distinct ids stay distinct and are written
back out as the very bytes read; a byte-order mark at the start is dropped.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.checks import MAX_LIMIT, MAX_T_MS, ConfigError
from simulator.playback.formats import TraceSource, iter_source
from simulator.playback.streams import CHUNK_REQUESTS, MOST_LINE_CHARS, Requests, TraceError
from simulator.playback.streams import open_text as _open
from simulator.playback.streams import text_lines as _lines
from simulator.records import CLIENT_DTYPE

__all__ = [
    "TraceError",
    "Requests",
    "TraceSource",
    "TraceFormat",
    "CHUNK_REQUESTS",
    "MOST_LINE_CHARS",
    "parse_t_ms",
    "exact_t_ms",
    "iter_trace",
    "iter_csv_trace",
    "iter_clf_trace",
    "read_trace",
    "read_csv_trace",
    "read_clf_trace",
]

_RANGE = f"must be from 0 to {MAX_T_MS:,} ms"
#: How a trace is read: ``"csv"``, ``"clf"``, or a :class:`TraceSource` (any format, key, time).
TraceFormat = str | TraceSource


def parse_t_ms(text: str) -> int:
    """The millisecond ``text`` names, exactly, or a ValueError saying what is wrong with it."""
    try:
        t_ms = int(text)
    except ValueError:
        try:
            exact = Decimal(text)
        except InvalidOperation:
            raise ValueError("is not a number") from None
        if not exact.is_finite():
            raise ValueError("is not a finite number") from None
        if exact < 0 or exact >= MAX_T_MS + 1:  # compared before flooring: 1e400 stays cheap
            raise ValueError(f"is out of range: {_RANGE}") from None
        return int(exact.to_integral_value(rounding=ROUND_FLOOR))
    if t_ms < 0 or t_ms > MAX_T_MS:
        raise ValueError(f"is out of range: {_RANGE}")
    return t_ms


def exact_t_ms(values: Iterable[object] | np.ndarray, what: str = "trace.t_ms") -> np.ndarray:
    """Times of a frame as int64 milliseconds (floats floored), or ConfigError naming the row."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        bad = (array < 0) | (array > MAX_T_MS)
        exact = array
    elif array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (array < 0) | (array >= MAX_T_MS + 1)
        exact = np.floor(np.where(bad, 0, array))  # exact: every float here is below 2^53
    else:  # Python objects: ints of any size, Decimals, ...
        ints = []
        for i, value in enumerate(array.tolist()):
            try:
                ints.append(parse_t_ms(str(value)))
            except ValueError as exc:
                raise ConfigError(f"{what}: row {i}: {value!r} {exc}") from None
        return np.array(ints, dtype="int64")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"{what}: row {i}: {array[i]!r} {_RANGE}")
    return exact.astype("int64")


def _cost(path: Path, line: int, text: str) -> int:
    try:
        cost = int(text)
    except ValueError:
        cost = 0
    if not 1 <= cost <= MAX_LIMIT:
        raise TraceError(
            f"{path}:{line}: cost {text!r} must be a whole number from 1 to {MAX_LIMIT:,}"
        )
    return cost


def _csv_columns(path: Path, header: list[str] | None) -> tuple[int, int, int | None, int]:
    """Where ``t_ms``, ``client`` and ``cost`` (None: no such column) stand, and how many fields
    a row has; TraceError for a header without the first two or with one of them twice."""
    if header is None:
        raise TraceError(f"{path}: empty file; expected a header with t_ms,client")
    names = [h.strip() for h in header]
    missing = [c for c in ("t_ms", "client") if c not in names]
    if missing:
        raise TraceError(f"{path}:1: header lacks {', '.join(missing)} (found {header})")
    for name in ("t_ms", "client", "cost"):
        if names.count(name) > 1:
            raise TraceError(
                f"{path}:1: the header holds column {name!r} {names.count(name)} times "
                f"(found {header}); which one is meant?"
            )
    ik = names.index("cost") if "cost" in names else None
    return names.index("t_ms"), names.index("client"), ik, len(names)


def _slow_t_ms(path: Path, line: int, text: str) -> int:
    """A time that is not a plain whole number of milliseconds in range: parsed, or refused."""
    try:
        return parse_t_ms(text)
    except ValueError as exc:
        raise TraceError(f"{path}:{line}: t_ms {text!r} {exc}") from None


def iter_csv_trace(path: str | Path, chunk: int | None = None) -> Iterator[Requests]:
    """CSV with a header holding ``t_ms`` and ``client`` (in any column order), in chunks; an
    optional ``cost`` column gives each request's cost (a whole number >= 1)."""
    path, chunk = Path(path), chunk or CHUNK_REQUESTS
    with _open(path) as fh:
        reader = csv.reader(_lines(path, fh))
        try:
            yield from _csv_chunks(path, reader, chunk)
        except csv.Error as exc:
            raise TraceError(
                f"{path}:{reader.line_num}: not a CSV row the reader accepts ({exc}; a field "
                f"is at most {csv.field_size_limit():,} characters)"
            ) from None


def _csv_chunks(path: Path, reader: Any, chunk: int) -> Iterator[Requests]:
    """The rows of ``reader`` (its header first) as requests, ``chunk`` at a time."""
    it, ic, ik, width = _csv_columns(path, next(reader, None))
    start, t_ms, clients = 0, list[int](), list[str]()
    costs: list[int] | None = None if ik is None else []
    for row in reader:
        if len(row) != width:
            if not row:
                continue
            raise TraceError(f"{path}:{reader.line_num}: expected {width} fields, got {len(row)}")
        text = row[it]
        try:
            t = int(text)  # the usual case, and the quick one
        except ValueError:
            t = -1
        if t < 0 or t > MAX_T_MS:
            t = _slow_t_ms(path, reader.line_num, text)
        t_ms.append(t)
        clients.append(row[ic])
        if costs is not None:
            text = row[ik]  # type: ignore[index]
            costs.append(1 if text == "1" else _cost(path, reader.line_num, text))
        if len(t_ms) == chunk:
            yield Requests(range(start, start + chunk), t_ms, clients, costs)
            start, t_ms, clients = start + chunk, [], []
            costs = None if costs is None else []
    if t_ms:
        yield Requests(range(start, start + len(t_ms)), t_ms, clients, costs)


# host ident authuser [dd/Mon/yyyy:HH:MM:SS +zzzz] "request" status bytes ...
_CLF = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "')
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _clf_t_ms(path: Path, line_no: int, when: str) -> int:
    try:
        moment = datetime.strptime(when, "%d/%b/%Y:%H:%M:%S %z")
    except ValueError:
        raise TraceError(f"{path}:{line_no}: bad time [{when}]") from None
    t_ms = (moment - _EPOCH) // _MS  # integer arithmetic: exact
    if t_ms < 0:
        raise TraceError(
            f"{path}:{line_no}: time [{when}] is before 1970-01-01 UTC (t_ms {_RANGE} "
            "since the Unix epoch)"
        )
    return t_ms


def iter_clf_trace(path: str | Path, chunk: int | None = None) -> Iterator[Requests]:
    """Apache/Nginx common or combined log format (client = remote host), in chunks."""
    path, chunk = Path(path), chunk or CHUNK_REQUESTS
    seen: dict[str, int] = {}  # a log's lines share their second with their neighbours
    with _open(path) as fh:
        start, t_ms, clients = 0, list[int](), list[str]()
        for line_no, line in enumerate(_lines(path, fh), start=1):
            m = _CLF.match(line)
            if m is None:
                if not line.strip():
                    continue
                raise TraceError(f"{path}:{line_no}: not a common/combined log line: {line[:80]!r}")
            host, when = m.group(1, 2)
            t = seen.get(when)
            if t is None:
                if len(seen) > 4096:
                    seen.clear()
                t = seen[when] = _clf_t_ms(path, line_no, when)
            t_ms.append(t)
            clients.append(host)
            if len(t_ms) == chunk:
                yield Requests(range(start, start + chunk), t_ms, clients)
                start, t_ms, clients = start + chunk, [], []
        if t_ms:
            yield Requests(range(start, start + len(t_ms)), t_ms, clients)


def iter_trace(
    path: str | Path | TraceSource, fmt: TraceFormat = "csv", chunk: int | None = None
) -> Iterator[Requests]:
    """The requests of a trace file in file order, ``chunk`` (:data:`CHUNK_REQUESTS`) at a time.

    ``fmt`` is ``"csv"``, ``"clf"`` or a :class:`TraceSource` (read at ``path``); ``path`` may
    itself be the :class:`TraceSource`, read where it says. A CSV, and a common/combined log
    keyed by its remote host, are read by the quick readers above; every other format and key
    by :func:`simulator.playback.formats.iter_source`.
    """
    if isinstance(path, TraceSource):
        return iter_trace(path.path, path, chunk)
    if isinstance(fmt, TraceSource):
        if not fmt.plain:
            return iter_source(fmt, Path(path), chunk)
        fmt = fmt.format
    if fmt == "csv":
        return iter_csv_trace(path, chunk)
    if fmt == "clf":
        return iter_clf_trace(path, chunk)
    raise TraceError(f"format: unknown {fmt!r} (csv or clf)")


def _frame(chunks: Iterable[Requests]) -> pd.DataFrame:
    """The requests as a frame: ``t_ms``, ``client`` and, if the trace has costs, ``cost``."""
    t_ms: list[int] = []
    clients: list[str] = []
    costs: list[int] = []
    for part in chunks:
        t_ms += part.t_ms
        clients += part.clients
        if part.costs is not None:
            costs += part.costs
    frame = pd.DataFrame(
        {"t_ms": np.array(t_ms, dtype="int64"), "client": pd.array(clients, dtype=CLIENT_DTYPE)}
    )
    if costs:
        frame["cost"] = np.array(costs, dtype="int64")
    return frame


def read_csv_trace(path: str | Path) -> pd.DataFrame:
    """A CSV trace as a frame (``t_ms`` int64, ``client`` Python strings)."""
    return _frame(iter_csv_trace(path))


def read_clf_trace(path: str | Path) -> pd.DataFrame:
    """An access log as a frame (``t_ms`` int64 ms since the epoch, ``client`` = remote host)."""
    return _frame(iter_clf_trace(path))


def read_trace(path: str | Path | TraceSource, fmt: TraceFormat = "csv") -> pd.DataFrame:
    return _frame(iter_trace(path, fmt))
