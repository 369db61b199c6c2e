"""The replay's output: one CSV row per request, in input order, written while the run goes.

Decisions are made in time order. For a trace already in time order that is the input order
too, and each pipeline's rows go to the file as soon as they are made: if the run stops (a dead
server, Ctrl-C), every decision made is on disk. For a trace out of order the rows go to sorted
runs in a temporary folder instead (:class:`~simulator.playback.spool.Spool`) and are merged into the file
in input order at the end - also when the run stops early, so what was decided is never lost;
memory stays bounded either way.

Before anything is computed, :func:`check_output` refuses an ``--out`` that cannot be written
(a missing folder, a folder, a read-only file) or that is the trace itself, without touching
it. A write that fails later (a full disk) cuts the file back to the rows written whole and
stops the run with an :class:`OutputError` saying how many there are.

Client ids keep the bytes they were read with (undecodable ones as lone surrogates) and are
encoded with the same error handler, so they come out as the very bytes that came in.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from simulator.playback.lines import (
    HEADER,
    HEADER_FIELDS,
    HeaderColumns,
    _columns,
    _line,
    _line_with_cost,
)
from simulator.playback.spool import Spool, work_folder
from simulator.records import Decisions, Row

__all__ = [
    "HEADER",
    "HEADER_FIELDS",
    "HeaderColumns",
    "OutputError",
    "check_output",
    "DecisionCsv",
    "StopCheck",
]

#: Rows written per system call.
ROWS_PER_WRITE = 1000
#: Decisions sorted in memory at a time when a trace out of order is put back in input order.
DECISION_RUN_ROWS = 65_536


class OutputError(ValueError):
    """The replay's output cannot be written (or must not be); the message names the file."""


class StopCheck(Protocol):
    """Anything with a ``check()`` that raises to stop the run (``runs.StopFlag``)."""

    def check(self) -> None: ...


def check_output(out: Path | None, trace: Path) -> None:
    """Refuse an ``--out`` that cannot be written, before anything is computed.

    The file is only looked at, never truncated: a refused run leaves it as it was (a file that
    does not exist yet is created to see that it can be, and removed again).
    """
    if out is None or str(out) == "-":
        return
    where = f"--out {out}"
    try:
        same = os.path.samefile(out, trace)  # the same inode: also through a link
    except OSError:
        same = False
    if same:
        raise OutputError(
            f"{where}: is the trace itself ({trace}); the replay would overwrite the "
            "requests it reads - choose another file"
        )
    if out.is_dir():
        raise OutputError(f"{where}: is a folder; name a file (e.g. {out / 'decisions.csv'})")
    if not out.parent.is_dir():
        raise OutputError(f"{where}: the folder {out.parent} does not exist")
    try:
        if out.is_file():
            os.close(os.open(out, os.O_WRONLY))  # no O_TRUNC: the file stays as it is
        elif not out.exists():
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                os.write(fd, b"\n")  # a full disk (or a file size limit) says so now
            finally:
                os.close(fd)
                out.unlink()
    except OSError as exc:
        raise OutputError(f"{where}: cannot be written ({exc.strerror})") from None


class DecisionCsv:
    """The replay's CSV (a file, or standard output for ``None`` or ``-``).

    Call it with each pipeline's rows, in decision order; ``in_input_order`` says whether that
    is the input order too (else the rows are sorted back on disk under ``workdir``, a folder
    of the caller's, or a temporary one of its own). :meth:`close` writes what is kept.
    """

    def __init__(
        self,
        out: Path | None,
        in_input_order: bool,
        stop: StopCheck | None = None,
        workdir: str | Path | None = None,
        costs: bool = False,
        headers: HeaderColumns | None = None,
    ) -> None:
        self.stop = stop
        self._costs, self._headers = costs, headers
        # A trace with a cost column gets one in the output too, after the client.
        to_line = _line_with_cost if costs else _line
        header = (*HEADER[:3], "cost", *HEADER[3:]) if costs else HEADER
        if headers is not None:
            header = (*header, *headers.names())
            self._to_line: Any = lambda row: to_line(row) + headers.values(row)
        else:
            self._to_line = to_line
        self.path = None if out is None or str(out) == "-" else out
        self.where = "standard output" if self.path is None else str(self.path)
        if self.path is None:
            sys.stdout.flush()  # what the program printed before goes first
            self._fd = sys.stdout.fileno()
        else:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            except OSError as exc:
                raise OutputError(
                    f"--out {self.path}: cannot be written ({exc.strerror})"
                ) from None
        self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
        self._text = io.StringIO()
        self._csv = csv.writer(self._text, lineterminator="\n")
        self._own_dir: tempfile.TemporaryDirectory[str] | None = None
        self._spool: Spool | None = None
        if not in_input_order:
            if workdir is None:
                self._own_dir = work_folder()
                workdir = self._own_dir.name
            self._spool = Spool(workdir, DECISION_RUN_ROWS)
        self._good_bytes = 0  # the file's size after the last complete write
        self._broken = False
        self.written = 0
        self._csv.writerow(header)
        self._flush(0)

    def _flush(self, rows: int) -> None:
        data = memoryview(self._text.getvalue().encode("utf-8", "surrogateescape"))
        self._text.seek(0)
        self._text.truncate()
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except BrokenPipeError:
            if self.path is not None:
                raise self._failed(OSError(errno.EPIPE, os.strerror(errno.EPIPE))) from None
            # The reader of standard output has gone (``| head``): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(141) from None
        except OSError as exc:
            raise self._failed(exc) from None
        self._good_bytes = os.lseek(self._fd, 0, os.SEEK_CUR) if self._regular else 0
        self.written += rows

    def _failed(self, exc: OSError) -> OutputError:
        """Cut the file back to its whole rows; the error to stop the run with."""
        self._broken = True
        if self._regular:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._good_bytes)
        return OutputError(
            f"--out {self.where}: cannot be written ({exc.strerror}); the replay stopped, "
            f"and the {self.written} decisions written before are in it"
        )

    def _write(self, lines: list[tuple[Any, ...]]) -> None:
        for start in range(0, len(lines), ROWS_PER_WRITE):
            part = lines[start : start + ROWS_PER_WRITE]
            self._csv.writerows(part)
            self._flush(len(part))

    def _write_columns(self, columns: list[list[Any]]) -> None:
        n = len(columns[0])
        for start in range(0, n, ROWS_PER_WRITE):
            end = min(n, start + ROWS_PER_WRITE)
            part = columns if (start, end) == (0, n) else [c[start:end] for c in columns]
            self._csv.writerows(zip(*part, strict=True))  # one row at a time, in C
            self._flush(end - start)

    def _texts(self, lines: Iterable[tuple[Any, ...]]) -> list[str]:
        """Each line as the CSV text the writer makes of it, one string per line (what is
        kept to be sorted: one object per row, written out as it is)."""
        lengths = list(map(self._csv.writerow, lines))  # each write's length, in characters
        text = self._text.getvalue()
        self._text.seek(0)
        self._text.truncate()
        ends = list(accumulate(lengths))
        return list(map(text.__getitem__, map(slice, [0, *ends[:-1]], ends)))

    def _write_texts(self, texts: Sequence[str]) -> None:
        for start in range(0, len(texts), ROWS_PER_WRITE):
            part = texts[start : start + ROWS_PER_WRITE]
            self._text.write("".join(part))
            self._flush(len(part))

    def __call__(self, rows: Sequence[Row]) -> None:
        """Write (or keep, out of order) one batch: a :class:`~simulator.records.Decisions`
        is written from its columns; anything else row by row."""
        if isinstance(rows, Decisions) and self._headers is None:
            columns = _columns(rows, self._costs)
            if self._spool is None:
                self._write_columns(columns)
            else:
                positions = np.asarray(rows.positions, dtype=np.int64).tolist()
                texts = self._texts(zip(*columns, strict=True))
                self._spool.add(positions, positions, texts)
        else:
            lines = list(map(self._to_line, rows))
            if self._spool is None:
                self._write(lines)
            else:
                positions = [row[0] for row in rows]
                self._spool.add(positions, positions, self._texts(lines))
        if self.stop is not None:
            self.stop.check()

    def close(self, complete: bool = True) -> None:
        """Write what is kept, in input order (with gaps if the run stopped early), and close.

        Idempotent; after a failed write nothing more is written.
        """
        spool, self._spool = self._spool, None
        try:
            if spool is not None and not self._broken:
                for block in spool.merged():
                    self._write_texts(block.items)
        finally:
            if spool is not None:
                spool.close()
            if self._own_dir is not None:
                self._own_dir.cleanup()
                self._own_dir = None
            if self.path is not None and self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
