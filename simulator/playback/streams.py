"""A trace file as a stream of text lines: plain, gzip or zstd, never decompressed to disk.

Logs are kept compressed: a day of an ALB's log arrives as ``.gz`` files, a log shipper writes
``.zst``. Both are read here as they stand, decompressed as the lines are read (the ``gzip``
module, the ``zstandard`` library), so a 40 GB log in a 2 GB file never lands on disk whole.
The kind is told by the file's first bytes, not by its name. Other compressed kinds (bzip2, xz,
zip) are refused with one line, and so is a binary file (a NUL byte in its first 8 KiB, after
decompression): its bytes quoted as a bad header would help nobody.

Every line is at most :data:`MOST_LINE_CHARS` characters: a line without an end (``/dev/zero``
compressed, a binary blob) is refused after reading that much, never held whole. Bytes that are
not UTF-8 stay what they were (lone surrogates, ``surrogateescape``), so distinct ids stay
distinct and are written back out as the very bytes read.
"""

from __future__ import annotations

import functools
import gzip
import io
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, BinaryIO, NamedTuple

import zstandard

from simulator.playback.files import open_regular

__all__ = [
    "TraceError",
    "Requests",
    "CHUNK_REQUESTS",
    "MOST_LINE_CHARS",
    "open_text",
    "text_lines",
]

#: Requests per chunk handed out by the readers.
CHUNK_REQUESTS = 65_536
#: The longest line read (characters); the csv module's own limit on a field is 128 KiB.
MOST_LINE_CHARS = 1 << 20


class TraceError(ValueError):
    """A trace file could not be read; the message names the file and line."""


class Requests(NamedTuple):
    """Some requests of a trace: their positions in it (from 0, in file order), times, clients,
    and their costs (None: every request costs 1, as in a trace without a ``cost`` column)."""

    positions: Sequence[int]
    t_ms: list[int]
    clients: list[str]
    costs: list[int] | None = None

    def part(self, lo: int, hi: int | None = None) -> Requests:
        """Requests ``lo`` to ``hi`` of these."""
        costs = None if self.costs is None else self.costs[lo:hi]
        return Requests(self.positions[lo:hi], self.t_ms[lo:hi], self.clients[lo:hi], costs)


#: The first bytes of the compressed files a trace is often kept in.
_COMPRESSED = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
}
#: The kinds read as a stream.
STREAMED = ("gzip", "zstd")
_SNIFF_BYTES = 8192
#: What a damaged or cut compressed stream raises while it is read.
_BROKEN = (OSError, EOFError, zlib.error, zstandard.ZstdError)


def _kind(head: bytes) -> str | None:
    return next((kind for magic, kind in _COMPRESSED.items() if head.startswith(magic)), None)


def _refuse_binary(path: Path, head: bytes, inside: str = "") -> None:
    """A file of a compressed kind not streamed, or a binary one, is not read as text (its bytes
    would be quoted as a header): one message saying what it is."""
    kind = _kind(head)
    if kind in STREAMED and not inside:
        return  # its bytes are looked at once decompressed
    if kind is not None:
        raise TraceError(
            f"{path}: is {kind}-compressed{inside}, not a text trace; decompress it first "
            f"(a trace is a CSV or a log as plain text, or gzip- or zstd-compressed)"
        )
    nul = head.find(b"\x00")
    if nul >= 0:
        raise TraceError(
            f"{path}: is a binary file (a NUL byte at byte {nul:,}{inside}), not a text "
            "trace (a CSV or a log as plain text, or gzip- or zstd-compressed)"
        )


def _decompressed(raw: BinaryIO, kind: str) -> BinaryIO:
    """The bytes of ``raw`` (at its start) as ``kind`` decompresses them, read as they come."""
    raw.seek(0)
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    decompressor = zstandard.ZstdDecompressor()
    return decompressor.stream_reader(raw, read_across_frames=True, closefd=False)  # type: ignore[return-value]


def _binary(path: Path) -> BinaryIO:
    """The trace's bytes, decompressed if it is gzip or zstd, its first ones sniffed."""
    raw = open_regular(path, "trace", TraceError)
    try:
        head = raw.read(_SNIFF_BYTES)
        _refuse_binary(path, head)
        kind = _kind(head)
        if kind is None:
            raw.seek(0)
            return raw
        with _decompressed(raw, kind) as sniffed:
            try:
                inner = sniffed.read(_SNIFF_BYTES)
            except _BROKEN as exc:
                raise TraceError(f"{path}: the {kind} data is damaged ({_said(exc)})") from None
        _refuse_binary(path, inner, f" inside its {kind} compression")
        return _Closing(_decompressed(raw, kind), raw)
    except OSError as exc:
        raw.close()
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except BaseException:
        raw.close()
        raise


class _Closing(io.BufferedReader):
    """A decompressing reader that also closes the file beneath it."""

    def __init__(self, stream: BinaryIO, raw: BinaryIO) -> None:
        super().__init__(stream)  # type: ignore[arg-type]
        self._raw_file = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw_file.close()


def _said(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def open_text(path: Path) -> IO[str]:
    """The trace as text: a regular file only (``/dev/zero`` would never end, a FIFO would
    block), its first bytes sniffed for a compressed or binary file, gzip and zstd decompressed
    as it is read."""
    # Bytes that are not UTF-8 stay what they were (lone surrogates that encode back to the
    # same bytes): replacing them with U+FFFD would merge distinct clients into one. A
    # byte-order mark at the start (as some editors on Windows write) is not data.
    return io.TextIOWrapper(
        _binary(path), newline="", encoding="utf-8-sig", errors="surrogateescape"
    )


def text_lines(path: Path, fh: IO[str]) -> Iterator[str]:
    """The lines of ``fh``, none longer than :data:`MOST_LINE_CHARS` (a 200 MB line without an
    end is refused after reading that much, not held whole); a compressed stream that is
    damaged or cut short is refused naming the line it stopped at."""
    read = functools.partial(fh.readline, MOST_LINE_CHARS)
    number = 0
    while True:
        try:
            line = read()
        except _BROKEN as exc:
            raise TraceError(
                f"{path}:{number + 1}: the compressed data is damaged or cut short "
                f"({_said(exc)}); the {number:,} lines before it were read"
            ) from None
        if not line:
            return
        number += 1
        if len(line) == MOST_LINE_CHARS and not line.endswith("\n"):
            raise TraceError(
                f"{path}:{number}: the line is longer than {MOST_LINE_CHARS:,} characters "
                "(a trace's line is a time and a client); is this a trace?"
            )
        yield line
