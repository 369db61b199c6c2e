"""A sweep's results on disk: one parquet file per finished task, all of them one dataset.

A task's file is ``<folder>/<task id>.parquet``, where the id is made from the study and the grid
point (the same parameters, the same id, on any machine). It is written whole or not at all (a
temporary file in the same folder, then a rename), so a sweep stopped at any moment leaves only
whole files, and running it again skips them. Each file records the fingerprint of the code that
made it (a hash of the package's Python and Lua sources) in its metadata: a task made by other
code is not finished for this code and runs again. The dataset reads with
``pandas.read_parquet(folder)`` as well (the rows of every task ever written there).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["task_id", "code_fingerprint", "write_task", "finished", "read_dataset", "task_path"]

_CODE_KEY = b"simulator.code"


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
    """Write one task's rows atomically (temporary file, then rename); its path."""
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
            pq.write_table(table, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return final


def _code_of(path: Path) -> str | None:
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, ValueError):  # unreadable: not a finished task
        return None
    code = meta.get(_CODE_KEY)
    return code.decode() if code else None


def finished(folder: Path, tasks: Iterable[str], code: str) -> tuple[set[str], set[str]]:
    """Of ``tasks``: those finished by this ``code``, and those whose file other code made."""
    done, stale = set(), set()
    for task in tasks:
        path = task_path(folder, task)
        if not path.exists():
            continue
        if _code_of(path) == code:
            done.add(task)
        else:
            stale.add(task)
    return done, stale


def read_dataset(folder: Path, tasks: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows of ``tasks`` (in that order; those not written are left out), or of every task
    file in ``folder``."""
    folder = Path(folder)
    paths = (
        sorted(folder.glob("*.parquet"))
        if tasks is None
        else [p for p in (task_path(folder, t) for t in tasks) if p.exists()]
    )
    if not paths:
        return pd.DataFrame()
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
