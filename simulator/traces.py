"""Request traces to replay: a CSV of ``t_ms,client`` or a web server's access log.

A trace is a frame with ``t_ms`` (milliseconds, any origin) and ``client`` (any string), one row
per request in file order. Access logs in the Apache/Nginx combined (or common) format are read
with the remote host as the client and the request time as ``t_ms`` (ms since the Unix epoch), so a
real log can be replayed. A malformed line stops the read with a message naming file and line.
"""

from __future__ import annotations

import csv
import math
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

from simulator.records import CLIENT_DTYPE

__all__ = ["TraceError", "read_trace", "read_csv_trace", "read_clf_trace"]


class TraceError(ValueError):
    """A trace file could not be read; the message names the file and line."""


def read_csv_trace(path: str | Path) -> pd.DataFrame:
    """CSV with a header holding ``t_ms`` and ``client`` (in any column order)."""
    path = Path(path)
    t_ms: list[float] = []
    clients: list[str] = []
    with _open(path) as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise TraceError(f"{path}: empty file; expected a header with t_ms,client")
        names = [h.strip() for h in header]
        missing = [c for c in ("t_ms", "client") if c not in names]
        if missing:
            raise TraceError(f"{path}:1: header lacks {', '.join(missing)} (found {header})")
        it, ic = names.index("t_ms"), names.index("client")
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != len(names):
                raise TraceError(f"{path}:{line}: expected {len(names)} fields, got {len(row)}")
            try:
                t = float(row[it])
            except ValueError:
                raise TraceError(f"{path}:{line}: t_ms {row[it]!r} is not a number") from None
            if not math.isfinite(t) or t < 0:
                raise TraceError(f"{path}:{line}: t_ms {row[it]!r} must be finite and >= 0")
            t_ms.append(t)
            clients.append(row[ic])
    return pd.DataFrame({"t_ms": t_ms, "client": pd.array(clients, dtype=CLIENT_DTYPE)})


# host ident authuser [dd/Mon/yyyy:HH:MM:SS +zzzz] "request" status bytes ...
_CLF = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "')


def read_clf_trace(path: str | Path) -> pd.DataFrame:
    """Apache/Nginx common or combined log format: client = remote host."""
    path = Path(path)
    t_ms: list[float] = []
    clients: list[str] = []
    with _open(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            m = _CLF.match(line)
            if m is None:
                raise TraceError(f"{path}:{line_no}: not a common/combined log line: {line[:80]!r}")
            try:
                when = datetime.strptime(m.group(2), "%d/%b/%Y:%H:%M:%S %z")
            except ValueError:
                raise TraceError(f"{path}:{line_no}: bad time [{m.group(2)}]") from None
            t_ms.append(when.timestamp() * 1000.0)
            clients.append(m.group(1))
    return pd.DataFrame({"t_ms": t_ms, "client": pd.array(clients, dtype=CLIENT_DTYPE)})


def read_trace(path: str | Path, fmt: str = "csv") -> pd.DataFrame:
    if fmt == "csv":
        return read_csv_trace(path)
    if fmt == "clf":
        return read_clf_trace(path)
    raise TraceError(f"format: unknown {fmt!r} (csv or clf)")


def _open(path: Path):  # type: ignore[no-untyped-def]
    try:
        # Bytes that are not UTF-8 stay what they were (lone surrogates that encode back to the
        # same bytes): replacing them with U+FFFD would merge distinct clients into one.
        return path.open(newline="", encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror})") from None
