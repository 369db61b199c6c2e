"""A sweep's results on disk: one parquet file per finished task, all of them one dataset.

A task's file is ``<folder>/<task id>.parquet``, where the id is made from the study and the grid
point (the same parameters, the same id, on any machine). It is written whole or not at all (a
temporary file in the same folder, read back whole, then a rename), so a sweep stopped at any
moment leaves only whole files, and running it again skips them. Every page carries a checksum:
a file damaged afterwards (a bad disk, a copy cut short) does not read whole, and a sweep run
again says so and computes that task again instead of counting it finished. Each file records
the fingerprint of the code that made it (a hash of the package's Python and Lua sources) in its
metadata: a task made by other code is not finished for this code and runs again. The dataset
reads with ``pandas.read_parquet(folder)`` as well (the rows of every task ever written there),
as long as the folder holds the sweep's files only: a sweep refuses to write into a folder that
holds a ``*.parquet`` named otherwise (:func:`foreign_files`), and :func:`read_dataset` reads
task files only, whatever else lies there.

The accuracy study's share of requests the algorithm admitted is ``admitted_pct`` (the
``algorithm`` column says which one); folders written when it was ``counter_admitted_pct`` read
with the new name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "task_id",
    "code_fingerprint",
    "write_task",
    "finished",
    "read_dataset",
    "task_path",
    "task_state",
    "is_task_file",
    "foreign_files",
    "DONE",
    "STALE",
    "BROKEN",
]

_CODE_KEY = b"simulator.code"
#: What a task's file on disk is: finished by this code, made by other code, or not whole.
DONE, STALE, BROKEN = "done", "stale", "broken"
#: Columns renamed since folders were first written: old name -> the name read.
_RENAMED = {"counter_admitted_pct": "admitted_pct"}
#: A task file's stem: the first 16 hex digits of a SHA-1 (:func:`task_id`).
_TASK_NAME = re.compile(r"[0-9a-f]{16}")


def task_id(study: str, point: dict[str, Any]) -> str:
    """A short id for one grid point of a study (deterministic across runs and machines)."""
    text = json.dumps([study, sorted(point.items())], sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@functools.cache
def code_fingerprint() -> str:
    """A hash of every ``.py`` and ``.lua`` file of the package, as this process imports it."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".lua")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def task_path(folder: Path, task: str) -> Path:
    return Path(folder) / f"{task}.parquet"


def write_task(folder: Path, task: str, rows: pd.DataFrame, code: str) -> Path:
    """Write one task's rows atomically (temporary file, read back whole, then rename); its
    path. A write that fails (a full disk) raises OSError and leaves no file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(rows, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _CODE_KEY: code})
    final = task_path(folder, task)
    fd, tmp = tempfile.mkstemp(prefix=f".{task}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            pq.write_table(table, f, write_page_checksum=True)
            f.flush()
            os.fsync(f.fileno())
        if _read_whole(Path(tmp)) != code:  # what the disk holds is what was written
            raise OSError(f"{final}: the file written does not read back whole")
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def _read_whole(path: Path) -> str | None:
    """The code fingerprint of a task file read whole, every page's checksum verified; None if
    it does not read whole (OSError, or ValueError from pyarrow's checks)."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, page_checksum_verification=True)
    except (OSError, ValueError):
        return None
    code = (table.schema.metadata or {}).get(_CODE_KEY)
    return code.decode() if code else ""


def task_state(path: Path, code: str) -> str:
    """:data:`DONE` (read whole, made by ``code``), :data:`STALE` (other code) or :data:`BROKEN`."""
    made_by = _read_whole(path)
    if made_by is None:
        return BROKEN
    return DONE if made_by == code else STALE


def finished(folder: Path, tasks: Iterable[str], code: str) -> tuple[set[str], set[str], set[str]]:
    """Of ``tasks``: those finished by this ``code``, those whose file other code made, and those
    whose file does not read whole (all but the first run again). Only the files there are read,
    so a big grid over an empty folder costs one listing."""
    folder = Path(folder)
    there = {p.stem for p in folder.glob("*.parquet")} if folder.is_dir() else set()
    states: dict[str, set[str]] = {DONE: set(), STALE: set(), BROKEN: set()}
    if not there:
        return states[DONE], states[STALE], states[BROKEN]
    for task in tasks:
        if task in there:
            states[task_state(task_path(folder, task), code)].add(task)
    return states[DONE], states[STALE], states[BROKEN]


def is_task_file(path: Path) -> bool:
    """A file named as a sweep names its task files: ``<16 hex digits>.parquet``."""
    return path.suffix == ".parquet" and _TASK_NAME.fullmatch(path.stem) is not None


def foreign_files(folder: Path) -> list[Path]:
    """The ``*.parquet`` files in ``folder`` that are not a sweep's task files (a copy, an
    export, another program's): ``pandas.read_parquet(folder)`` would read them too."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.parquet") if not is_task_file(p))


def read_dataset(folder: Path, tasks: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows of ``tasks`` (in that order; those not written are left out), or of every task
    file in ``folder`` (files named otherwise are not the sweep's: left out)."""
    folder = Path(folder)
    paths = (
        sorted(p for p in folder.glob("*.parquet") if is_task_file(p))
        if tasks is None
        else [p for p in (task_path(folder, t) for t in tasks) if p.exists()]
    )
    if not paths:
        return pd.DataFrame()
    frames = [pd.read_parquet(p).rename(columns=_RENAMED) for p in paths]
    return pd.concat(frames, ignore_index=True)
