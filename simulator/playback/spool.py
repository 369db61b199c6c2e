"""Sorting more rows than memory holds: sorted runs on disk, merged a block at a time.

A replay puts a trace in time order and its decisions back in input order. An access log of fifty
million lines does not fit in memory as Python objects, so both sorts are external: rows come in,
every :data:`RUN_ROWS` of them are sorted and written to a temporary file (a *run*) in pickled
blocks of :data:`BLOCK_ROWS`, and :meth:`Spool.merged` hands them all back in order.

The merge works on blocks, not rows: it holds one block of each run, takes from all of them
every row up to the smallest of their last keys (all of those rows are final: no run can hold a
smaller one later), sorts that slice with numpy and hands it out. Memory stays at about one block
per run; when there are more than :data:`FAN_IN` runs, the first ones are merged into a bigger
run first, so that stays bounded too, however many rows there are.

Each row has two integer keys, ``major`` then ``minor``, unique together (a request's time and its
position in the trace; a decision's position twice), and an item of any picklable kind.

The runs live in a folder of the replay's own, ``$TMPDIR/replay-<pid>-<random>`` (:func:`work_folder`),
removed when the replay ends; ``compare`` keeps its shards in ``compare-<pid>-<random>``. A run
killed outright (SIGKILL, the machine's OOM killer) cannot remove its folder, and it may weigh
gigabytes, so each folder holds an owner file (the pid and when that process started) and every
new folder first removes those of this user's runs whose owner is gone
(:func:`remove_dead_folders`): named so, with that file, and nothing else.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Block",
    "Spool",
    "SpoolError",
    "merge_blocks",
    "work_folder",
    "remove_dead_folders",
    "RUN_ROWS",
    "BLOCK_ROWS",
    "FAN_IN",
    "FOLDER_PREFIX",
    "PREFIXES",
    "OWNER_FILE",
]

#: Rows sorted in memory before they are written out as one run.
RUN_ROWS = 262_144
#: Rows per pickled block (what the merge holds of each run).
BLOCK_ROWS = 4096
#: Runs merged at once.
FAN_IN = 32
#: A replay's folder under ``$TMPDIR``: this, the pid of the process that made it, ``-``, random.
FOLDER_PREFIX = "replay-"
#: Every kind of run folder a later run may remove once its owner is gone.
PREFIXES = ("replay-", "compare-")
#: The file in a run folder that names its owner: ``<pid> <start time, s since the epoch>``.
OWNER_FILE = "owner"


def _started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if it is gone."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _owner_gone(folder: Path, pid: int) -> bool:
    """True when the folder's owner file names ``pid`` and that process is gone (or the pid now
    belongs to a process started at another time). A folder without a readable owner file, or
    one naming another pid, is not ours to judge: False."""
    try:
        owner = folder / OWNER_FILE
        info = os.lstat(owner)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 100:
            return False
        text = owner.read_text(encoding="ascii").split()
        recorded_pid, recorded_start = int(text[0]), float(text[1])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return False
    if recorded_pid != pid:
        return False
    started = _started(pid)
    return started is None or abs(started - recorded_start) > 1.0


def remove_dead_folders(
    root: str | Path | None = None, prefixes: Sequence[str] = PREFIXES
) -> list[Path]:
    """Remove the run folders under ``root`` (default ``$TMPDIR``) of this user whose owner is
    gone; return them. A folder is one only if it is named ``<prefix><pid>-...`` and holds an
    owner file naming that pid and its start time (a pid used again by a later process does
    not keep it); a folder of another user, of a live process, or named otherwise stays."""
    removed = []
    folder = Path(root if root is not None else tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for prefix in prefixes:
            for entry in folder.glob(f"{prefix}*"):
                pid, sep, _ = entry.name.removeprefix(prefix).partition("-")
                if not (sep and pid.isascii() and pid.isdigit()):
                    continue
                try:
                    info = os.lstat(entry)
                except OSError:
                    continue  # gone meanwhile
                if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                    continue  # a symlink, a file, or somebody else's
                if _owner_gone(entry, int(pid)):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
    return removed


def work_folder(
    prefix: str = FOLDER_PREFIX, root: str | Path | None = None
) -> tempfile.TemporaryDirectory[str]:
    """A new folder for a run's files, ``<prefix><pid>-<random>`` holding an owner file (this
    pid and its start time), once the folders of dead runs are gone (a context manager: the
    folder goes with it)."""
    remove_dead_folders(root)
    made = tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-", dir=root)
    try:
        owner = Path(made.name) / OWNER_FILE
        writing = owner.with_name(f".{OWNER_FILE}")  # renamed whole: a kill never leaves it empty
        writing.write_text(f"{os.getpid()} {_started(os.getpid())!r}\n", encoding="ascii")
        os.replace(writing, owner)
    except BaseException:
        made.cleanup()
        raise
    return made


class SpoolError(RuntimeError):
    """A run could not be written or read back (a full disk); the message names the folder."""


class Block(NamedTuple):
    """Rows in key order: ``major`` and ``minor`` int64 arrays and one item per row."""

    major: np.ndarray
    minor: np.ndarray
    items: list[Any]

    def __len__(self) -> int:  # type: ignore[override]  # rows, not fields
        return len(self.items)

    def rows(self, start: int, stop: int | None = None) -> Block:
        return Block(self.major[start:stop], self.minor[start:stop], self.items[start:stop])


def _sorted(major: np.ndarray, minor: np.ndarray, items: list[Any]) -> Block:
    order = np.lexsort((minor, major))
    return Block(major[order], minor[order], list(map(items.__getitem__, order.tolist())))


def _rows_up_to(block: Block, major: int, minor: int) -> int:
    """How many rows of ``block`` have keys ``<= (major, minor)``."""
    lo = int(np.searchsorted(block.major, major, "left"))
    hi = int(np.searchsorted(block.major, major, "right"))
    return lo + int(np.searchsorted(block.minor[lo:hi], minor, "right"))


def merge_blocks(sources: Iterable[Iterable[Block]]) -> Iterator[Block]:
    """The rows of several sorted block streams as one sorted block stream."""
    heads: list[tuple[Block, Iterator[Block]]] = []
    for source in sources:
        blocks = (b for b in source if len(b))
        first = next(blocks, None)
        if first is not None:
            heads.append((first, blocks))
    while len(heads) > 1:
        # Every row up to the smallest last key is final: no stream can still hold a smaller one.
        last = min((int(b.major[-1]), int(b.minor[-1])) for b, _ in heads)
        taken: list[Block] = []
        following: list[tuple[Block, Iterator[Block]]] = []
        for block, rest in heads:
            n = _rows_up_to(block, *last)
            if n:
                taken.append(block.rows(0, n))
            if n < len(block):
                following.append((block.rows(n), rest))
            else:
                refill = next(rest, None)
                if refill is not None:
                    following.append((refill, rest))
        heads = following
        yield _sorted(
            np.concatenate([b.major for b in taken]),
            np.concatenate([b.minor for b in taken]),
            list(itertools.chain.from_iterable(b.items for b in taken)),
        )
    if heads:
        block, rest = heads[0]
        yield block
        yield from rest


def _read_run(path: Path) -> Iterator[Block]:
    try:
        with path.open("rb") as fh:
            while True:
                try:
                    block = pickle.load(fh)
                except EOFError:
                    return
                yield block
    except OSError as exc:
        raise SpoolError(f"temporary file {path}: cannot be read back ({exc.strerror})") from None


class Spool:
    """Rows added in any order, handed back sorted by (major, minor); temp files in ``directory``."""

    def __init__(
        self,
        directory: str | Path,
        run_rows: int | None = None,
        block_rows: int | None = None,
        fan_in: int | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.run_rows = run_rows or RUN_ROWS
        self.block_rows = block_rows or BLOCK_ROWS
        self.fan_in = max(2, fan_in or FAN_IN)
        self._runs: list[Path] = []
        self._major: list[int] = []
        self._minor: list[int] = []
        self._items: list[Any] = []
        self._made = 0  # run files made, for their names
        self.rows = 0

    def add(self, major: Sequence[int], minor: Sequence[int], items: Sequence[Any]) -> None:
        self._major += major
        self._minor += minor
        self._items += items
        self.rows += len(items)
        if len(self._items) >= self.run_rows:
            self._spill()

    def _new_run(self, blocks: Iterable[Block]) -> Path:
        self._made += 1
        path = self.directory / f"run-{id(self):x}-{self._made}.pickle"
        try:
            with path.open("wb") as fh:
                for block in blocks:
                    for start in range(0, len(block), self.block_rows):
                        piece = block.rows(start, start + self.block_rows)
                        pickle.dump(piece, fh, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink()
            raise SpoolError(
                f"temporary files in {self.directory}: cannot be written ({exc.strerror}); "
                "make room there, or point TMPDIR to a folder that has some"
            ) from None
        return path

    def _sorted_buffer(self) -> Block:
        block = _sorted(
            np.array(self._major, dtype="int64"), np.array(self._minor, dtype="int64"), self._items
        )
        self._major, self._minor, self._items = [], [], []
        return block

    def _spill(self) -> None:
        if self._items:
            self._runs.append(self._new_run([self._sorted_buffer()]))

    def merged(self, *also: Iterable[Block]) -> Iterator[Block]:
        """Every row added (and those of the sorted streams ``also``), in key order, once."""
        if not self._runs:  # it all fits in memory: no file at all
            if self._items:
                sources = [*also, [self._sorted_buffer()]]
            else:
                sources = list(also)
            yield from merge_blocks(sources)
            return
        self._spill()
        if len(also) >= self.fan_in:
            raise ValueError(f"also: at most {self.fan_in - 1} streams, got {len(also)}")
        while len(self._runs) + len(also) > self.fan_in:  # bounded: at most fan_in at once
            first, self._runs = self._runs[: self.fan_in], self._runs[self.fan_in :]
            self._runs.append(self._new_run(merge_blocks([_read_run(p) for p in first])))
            for path in first:
                path.unlink()
        yield from merge_blocks([*also, *(_read_run(p) for p in self._runs)])

    def close(self) -> None:
        """Remove the run files (the directory is the caller's)."""
        for path in self._runs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._runs = []

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
