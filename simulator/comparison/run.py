"""Which limiter for this traffic? Candidates replayed over a real log and scored side by side.

:func:`compare` reads the trace once (every line checked, its time resolution found), deals it by
client into shards, replays the baseline over every shard (the real Lua script, on a fake server
of each shard's own, or on the run's real server), then every candidate over every shard beside
the baseline's decisions and the exact log, and puts the shards' parts together. The tasks run
here one after another, or on Dask (``scheduler``): candidates x shards at once. Either way the
scorecard and the per-client table are the same, to the last figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.backends.specs import BackendSpec
from simulator.checks import ConfigError, check_int
from simulator.comparison.memory import MEMORY_SOURCE
from simulator.comparison.own_server import on_own_server
from simulator.comparison.score import (
    Part,
    Task,
    merge_parts,
    score_shard,
)
from simulator.comparison.scorecard import (
    CLIENT_COLUMNS,
    SCORE_COLUMNS,
    client_table,
    score_row,
    time_notes,
    timeline_frame,
)
from simulator.comparison.server import on_server
from simulator.comparison.spec import Candidate, resolve_candidates
from simulator.comparison.split import MAX_SHARDS, SplitTrace, split_trace
from simulator.engine.realtime import runs_on_real_time
from simulator.playback.spool import work_folder
from simulator.playback.traces import TraceFormat

__all__ = ["compare", "Listeners", "SCORE_COLUMNS", "CLIENT_COLUMNS", "time_notes"]


def _run(
    tasks: list[Task],
    client: Any,
    backend: Any,
    on_task: Callable[[Part], None],
) -> list[Part]:
    """Every task's part, in the tasks' order: on ``backend`` here, or each on a fake server of
    its own (here, or on the Dask ``client``'s workers), or on a server of its own started from
    ``backend`` when that is a BackendSpec."""
    parts: list[Part] = [None] * len(tasks)  # type: ignore[list-item]
    fn: Callable[[Task], Part] = score_shard
    if isinstance(backend, BackendSpec):
        fn = partial(on_own_server, backend)
    elif backend is not None and not backend.virtual_time:
        for i, task in enumerate(tasks):
            parts[i] = on_server(task, backend)
            on_task(parts[i])
        return parts
    todo = list(range(len(tasks)))
    for attempt in range(1, TASK_ATTEMPTS + 1):
        lost = _run_some(tasks, todo, client, parts, on_task, attempt == TASK_ATTEMPTS, fn)
        if not lost:
            break
        todo = lost  # their workers died: each runs again, on the workers left
    return parts


def _run_some(
    tasks: list[Task],
    todo: list[int],
    client: Any,
    parts: list[Part],
    on_task: Callable[[Part], None],
    last: bool,
    fn: Callable[[Task], Part] = score_shard,
) -> list[int]:
    """The tasks ``todo`` run into ``parts``; those whose worker was lost on the way (to run
    again). A lost scheduler, or no workers for :data:`NO_WORKERS_S`, is one ConfigError."""
    from simulator.engine.workers import run_tasks

    lost: list[int] = []
    chosen = [tasks[i] for i in todo]
    results = run_tasks(
        client,
        fn,
        chosen,
        scatter=client is not None,
        no_workers_s=None if client is None else NO_WORKERS_S,
    )
    try:
        for j, part, exc in results:
            i = todo[j]
            if exc is not None and client is not None and _worker_lost(exc):
                if not last:
                    lost.append(i)
                    continue
                raise ConfigError(
                    f"shard {tasks[i].shard_file} ({tasks[i].candidate.name}): its worker was "
                    f"lost {TASK_ATTEMPTS} times over; run the same command again"
                )
            if isinstance(exc, OSError) and client is not None and not _worker_lost(exc):
                raise ConfigError(
                    f"shard {tasks[i].shard_file}: a Dask worker could not read it ({exc}); "
                    "the workers must see this machine's temporary folder (TMPDIR on a disk "
                    "they share)"
                ) from exc
            if exc is not None:
                raise exc
            parts[i] = part
            on_task(part)
    except (OSError, TimeoutError) as exc:  # the client lost its scheduler
        if client is None:
            raise
        raise ConfigError(
            f"the Dask scheduler {getattr(client.scheduler, 'address', '?')} was lost "
            f"({type(exc).__name__}: {exc}); run the same command again when it is back"
        ) from None
    finally:
        results.close()
    return lost


def _worker_lost(exc: BaseException) -> bool:
    """True for what a task's future says when its worker died (the task itself did nothing
    wrong): Dask's KilledWorker, or a connection closed under it."""
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    return isinstance(exc, KilledWorker | CommClosedError)


#: How often a task whose worker died is run (Dask reruns it itself a few times first).
TASK_ATTEMPTS = 3
#: How long a run waits while the scheduler has no workers before it gives up.
NO_WORKERS_S = 120.0


@dataclass(frozen=True)
class Listeners:
    """Who hears of a comparison as it runs: ``on_progress`` how many more requests were read, a
    chunk at a time, as the trace is split; ``on_task`` each task's part as it finishes, ``on_row`` each
    configuration's scorecard row as soon as all its shards are done (the baseline's first)."""

    on_progress: Callable[[int], None] | None = None
    on_task: Callable[[Part], None] | None = None
    on_row: Callable[[dict[str, Any]], None] | None = None


def compare(
    trace: str | Path | pd.DataFrame,
    baseline: str | Candidate,
    candidates: Sequence[str | Candidate],
    *,
    fmt: TraceFormat = "csv",
    shards: int = 1,
    scheduler: Any = None,
    backend: Any = None,
    workdir: str | Path | None = None,
    listeners: Listeners = Listeners(),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay ``baseline`` and every candidate (SPEC strings ``ALGORITHM:limit=N,window=S,...``
    or :class:`~simulator.comparison.spec.Candidate`) over ``trace`` (a file, ``fmt`` csv or
    clf, or a frame with ``t_ms``, ``client`` and optionally ``cost``).

    Returns ``(scorecard, clients)``: one row per configuration (the baseline first) with
    :data:`SCORE_COLUMNS`, and one row per client a candidate decided differently from the
    baseline with :data:`CLIENT_COLUMNS` (most flips first). ``scorecard.attrs`` holds the
    trace's facts (``trace``: requests, clients, resolution, span) and the timeline
    (``timeline``: per bucket and configuration, flips each way and clients holding state).

    ``shards``: the trace dealt by client into that many shards, each replayed on a fake server
    of its own; ``scheduler``: None (here, one task after another), ``"local"`` (a Dask
    LocalCluster), ``"tcp://HOST:PORT"`` or a ``distributed.Client`` (the shard files must be
    readable by every worker: ``workdir`` on a shared folder). ``backend``: ``"auto"`` for the
    fastest that decides as the fake server does, as the command line chooses
    (:mod:`simulator.comparison.fastest`; ``scorecard.attrs["backend"]`` says which and why), a
    real server to replay on instead (the tasks then run here, one after another, each candidate's keys
    deleted after it), or a :class:`~simulator.backends.specs.BackendSpec` (each task starts a
    server of its own from it, here or on the Dask workers). ``listeners`` hear of the run as it goes (:class:`Listeners`), so a caller
    shows progress and keeps what was finished if the run is stopped.
    """
    base, others = resolve_candidates(baseline, candidates)
    shards = check_int("compare", "shards", shards, 1, MAX_SHARDS)
    everyone = [base, *others]
    if isinstance(backend, str) and backend == "auto":
        from simulator.comparison.fastest import on_fastest

        def run(chosen: Any, heard: Listeners) -> tuple[pd.DataFrame, pd.DataFrame]:
            return compare(
                trace, base, others, fmt=fmt, shards=shards, scheduler=scheduler,
                backend=chosen, workdir=workdir, listeners=heard,
            )  # fmt: skip

        return on_fastest(run, everyone, listeners, spread=scheduler is not None)
    _check_runnable(everyone, shards, backend)
    from simulator.engine.workers import check_scheduler

    check_scheduler(scheduler)
    with work_folder("compare-", workdir) as folder:  # its owner named: a later run clears it
        if isinstance(trace, pd.DataFrame):
            path, fmt = _frame_to_csv(trace, Path(folder) / "trace.csv"), "csv"
        else:
            path = Path(trace)
        split = split_trace(path, fmt, folder, shards, listeners.on_progress)
        timeline = split.timeline(max(c.window_ms for c in everyone))
        merged = _replay_all(everyone, split, timeline, scheduler, backend, listeners)
    scorecard = pd.DataFrame(
        [
            score_row(c, p, split, i == 0)
            for i, (c, p) in enumerate(zip(everyone, merged, strict=True))
        ],
        columns=list(SCORE_COLUMNS),
    )
    clients = client_table(merged[1:])
    scorecard.attrs["trace"] = {
        "path": str(path) if not isinstance(trace, pd.DataFrame) else "(frame)",
        "requests": split.requests,
        "clients": split.clients,
        "resolution_ms": split.resolution_ms,
        "t_min_ms": split.t_min_ms,
        "t_max_ms": split.t_max_ms,
        "shards": shards,
        "memory_source": MEMORY_SOURCE,
    }
    scorecard.attrs["timeline"] = timeline_frame(merged, timeline)
    if split.coverage is not None:
        scorecard.attrs["coverage"] = split.coverage
        scorecard.attrs["trace"]["covered_share"] = split.coverage.share
        scorecard.attrs["trace"]["coverage"] = split.coverage.line()
        scorecard.attrs["trace"]["coverage_warning"] = split.coverage.warning(
            max(c.window_ms for c in everyone)
        )
    return scorecard, clients


def _check_runnable(everyone: Sequence[Candidate], shards: int, backend: Any) -> None:
    """ConfigError for a candidate that cannot run as asked: sharded while it does not decide
    per client, or on a real server while its window is the key's TTL."""
    if shards > 1:
        from simulator.engine.shards import not_per_client

        for c in everyone:
            why = not_per_client(c.policy.algorithm)
            if why is not None:
                raise ConfigError(f"compare.shards: {why}")
    if backend is not None:
        for c in everyone:
            if runs_on_real_time(backend, c.policy):
                raise ConfigError(
                    f"{c.name}: {c.algorithm}'s window is the key's TTL, so on a real server it "
                    "runs on real time; compare it on fakeredis (the virtual clock)"
                )


def _replay_all(
    everyone: Sequence[Candidate],
    split: SplitTrace,
    timeline: tuple[int, int, int],
    scheduler: Any,
    backend: Any,
    listeners: Listeners,
) -> list[Part]:
    """Every configuration's shards replayed (the baseline's first: the others are scored
    against its decisions) and merged, in ``everyone``'s order."""
    from simulator.engine.workers import SERIAL, dask_client
    from simulator.userscripts.shipping import shipped

    base, others = everyone[0], everyone[1:]

    def tasks_for(c: Candidate, bits: np.ndarray | None) -> list[Task]:
        return [
            Task(
                c,
                k,
                str(f),
                bits,
                split.requests,
                timeline,
                shipped(c.algorithm),
                len(split.shard_files),
            )
            for k, f in enumerate(split.shard_files)
            if split.shard_requests[k]
        ]

    names = {c.name: c for c in everyone}
    expected = {c.name: len(tasks_for(c, None)) for c in everyone}
    finished: dict[str, list[Part]] = {}
    merged_by_name: dict[str, Part] = {}

    def take(part: Part) -> None:
        if listeners.on_task is not None:
            listeners.on_task(part)
        got = finished.setdefault(part.candidate, [])
        got.append(part)
        if len(got) == expected[part.candidate]:
            whole = merged_by_name[part.candidate] = merge_parts(got)
            del finished[part.candidate]
            if listeners.on_row is not None:
                c = names[part.candidate]
                listeners.on_row(score_row(c, whole, split, c is base))

    real = backend is not None and not backend.virtual_time and not isinstance(backend, BackendSpec)
    with dask_client(SERIAL if scheduler is None or real else scheduler) as client:
        _run(tasks_for(base, None), client, backend, take)
        bits = merged_by_name[base.name].bits
        _run([t for c in others for t in tasks_for(c, bits)], client, backend, take)
    return [merged_by_name[c.name] for c in everyone]


def _frame_to_csv(frame: pd.DataFrame, path: Path) -> Path:
    """A trace frame as a CSV trace file (client ids kept byte for byte)."""
    import csv

    missing = [c for c in ("t_ms", "client") if c not in frame.columns]
    if missing:
        raise ConfigError(f"trace: the frame lacks {', '.join(missing)}")
    from simulator.playback.traces import exact_t_ms

    t_ms = exact_t_ms(frame["t_ms"].to_numpy()).tolist()
    clients = [c if type(c) is str else str(c) for c in frame["client"].tolist()]
    cost = frame["cost"].tolist() if "cost" in frame.columns else None
    with path.open("w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
        w = csv.writer(fh)
        w.writerow(["t_ms", "client"] + (["cost"] if cost is not None else []))
        for i, (t, c) in enumerate(zip(t_ms, clients, strict=True)):
            w.writerow([t, c] + ([cost[i]] if cost is not None else []))
    return path
