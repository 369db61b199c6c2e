"""Which limiter for this traffic? Candidates replayed over a real log and scored side by side.

:func:`compare` reads the trace once (every line checked, its time resolution found), deals it by
client into shards, replays the baseline over every shard (the real Lua script, on a fake server
of each shard's own, or on the run's real server), then every candidate over every shard beside
the baseline's decisions and the exact log, and puts the shards' parts together. The tasks run
here one after another, or on Dask (``scheduler``): candidates x shards at once. Either way the
scorecard and the per-client table are the same, to the last figure.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.comparison.memory import MEMORY_SOURCE, bytes_per_active_client
from simulator.comparison.score import (
    Part,
    Task,
    merge_parts,
    percentile_ms,
    replay_shard,
    score_shard,
)
from simulator.comparison.spec import Candidate, resolve_candidates
from simulator.comparison.split import SplitTrace, split_trace
from simulator.records import CLIENT_DTYPE
from simulator.scenario import ConfigError, check_int

__all__ = ["compare", "SCORE_COLUMNS", "CLIENT_COLUMNS", "time_notes"]

#: The scorecard's columns, in order.
SCORE_COLUMNS = (
    "candidate",
    "role",
    "algorithm",
    "limit",
    "window_s",
    "params",
    "requests",
    "admitted",
    "refused",
    "flips_to_refused",
    "flips_to_admitted",
    "clients_affected",
    "wrongly_admitted",
    "wrongly_refused",
    "most_in_window",
    "most_in_window_ratio",
    "retry_after_p50_s",
    "retry_after_p99_s",
    "refused_never",
    "bytes_per_active_client",
    "bytes_per_client_on_server",
    "peak_active_clients",
    "peak_memory_bytes",
    "server_cpu_us_per_decision",
    "depends_on",
)
#: The per-client table's columns: each client a candidate decided differently from the baseline.
CLIENT_COLUMNS = (
    "candidate",
    "client",
    "requests",
    "flips",
    "flips_to_refused",
    "flips_to_admitted",
    "first_flip_t_ms",
    "last_flip_t_ms",
)
#: Algorithms whose decisions use the time between requests finer than a window's grid.
_CONTINUOUS = ("sliding_counter", "token_bucket", "gcra")


def time_notes(candidate: Candidate, resolution_ms: int) -> str:
    """What the candidate's decisions depend on beyond the requests themselves (empty: nothing).

    With a trace of whole seconds, requests of one second are decided in file order; a limiter
    that weighs the milliseconds between requests (the counter's interpolation, a bucket's
    refill) or a window that is not a whole number of the trace's steps decides on times
    rounded before it saw them. A limiter whose window is the key's TTL depends on the
    server's clock.
    """
    notes = []
    cls = ALGORITHMS[candidate.algorithm]
    if resolution_ms > 1 and (
        candidate.algorithm in _CONTINUOUS
        or candidate.window_ms % resolution_ms
        or candidate.algorithm not in ("fixed_window", "sliding_log", "echomq")
    ):
        step = f"{resolution_ms / 1000:g} s" if resolution_ms >= 1000 else f"{resolution_ms} ms"
        notes.append(f"trace resolution ({step})")
    if cls.uses_server_time:
        notes.append("server clock (the window is the key's TTL)")
    return "; ".join(notes)


def _run(
    tasks: list[Task],
    scheduler: Any,
    backend: Any,
    on_task: Callable[[Part], None],
) -> list[Part]:
    """Every task's part, in the tasks' order: on ``backend`` here, or each on a fake server of
    its own (here, or on Dask)."""
    from simulator.workers import SERIAL, dask_client, run_tasks

    parts: list[Part] = [None] * len(tasks)  # type: ignore[list-item]
    if backend is not None and not backend.virtual_time:
        for i, task in enumerate(tasks):
            parts[i] = _on_server(task, backend)
            on_task(parts[i])
        return parts
    with dask_client(SERIAL if scheduler is None else scheduler) as client:
        for i, part, exc in run_tasks(client, score_shard, tasks, scatter=client is not None):
            if exc is not None:
                raise exc
            parts[i] = part
            on_task(part)
    return parts


def _on_server(task: Task, backend: Any) -> Part:
    """A task on a real server: its keys checked absent first, and deleted after (they are
    this run's own; the next candidate of the same algorithm must start from nothing)."""
    from simulator.cli.runs import leftover_keys, run_keys
    from simulator.comparison.split import read_shard

    c = task.candidate

    def keys() -> list[str]:
        requests = (
            (cl, t)
            for part in read_shard(task.shard_file)
            for cl, t in zip(part.clients, part.t_ms, strict=True)
        )
        return run_keys(c.algorithm, c.limit, c.window_ms, requests, backend, c.params)

    problem = leftover_keys(backend, getattr(backend, "name", "server"), keys)
    if problem is not None:
        raise ConfigError(problem)
    try:
        part = replay_shard(task, backend)
        part.server_bytes, part.server_clients = _weigh(task, backend)
        return part
    finally:
        _forget(backend, keys())


#: Clients whose keys are weighed on a real server after each task.
WEIGHED_CLIENTS = 200


def _weigh(task: Task, backend: Any) -> tuple[int, int]:
    """The bytes the server holds for the last :data:`WEIGHED_CLIENTS` clients of the shard
    whose keys are still alive (``MEMORY USAGE`` of each key), and how many such clients."""
    from simulator.comparison.split import read_shard

    last: dict[str, int] = {}
    for part in read_shard(task.shard_file):
        for client, t in zip(part.clients, part.t_ms, strict=True):
            last.pop(client, None)
            last[client] = t  # the most recent at the end
            if len(last) > 4 * WEIGHED_CLIENTS:
                del last[next(iter(last))]
    c = task.candidate
    limiter = ALGORITHMS[c.algorithm](backend, c.limit, c.window_ms, **dict(c.params))
    total, clients = 0, 0
    for client, t in list(last.items())[-WEIGHED_CLIENTS:]:
        sizes = [backend.client.memory_usage(k, samples=0) for k in limiter.keys(client, t)]
        held = sum(size for size in sizes if size)
        if held:
            total, clients = total + held, clients + 1
    return total, clients


def _forget(backend: Any, keys: Sequence[str]) -> None:
    for lo in range(0, len(keys), 1000):
        pipe = backend.client.pipeline(transaction=False)
        for key in keys[lo : lo + 1000]:
            pipe.unlink(key)
        pipe.execute()


def compare(
    trace: str | Path | pd.DataFrame,
    baseline: str | Candidate,
    candidates: Sequence[str | Candidate],
    *,
    fmt: str = "csv",
    shards: int = 1,
    scheduler: Any = None,
    backend: Any = None,
    workdir: str | Path | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_task: Callable[[Part], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
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
    readable by every worker: ``workdir`` on a shared folder). ``backend``: a real server to
    replay on instead (the tasks then run here, one after another, each candidate's keys
    deleted after it). ``on_task`` gets each task's part as it finishes; ``on_row`` each
    configuration's scorecard row as soon as all its shards are done (the baseline's first), so
    a caller keeps what was finished if the run is stopped.
    """
    base, others = resolve_candidates(baseline, candidates)
    shards = check_int("compare", "shards", shards, 1, 100_000)
    everyone = [base, *others]
    if shards > 1:
        from simulator.shards import not_per_client

        for c in everyone:
            why = not_per_client(c.algorithm)
            if why is not None:
                raise ConfigError(f"compare.shards: {why}")
    if backend is not None and not backend.virtual_time:
        for c in everyone:
            if ALGORITHMS[c.algorithm].uses_server_time:
                raise ConfigError(
                    f"{c.name}: {c.algorithm}'s window is the key's TTL, so on a real server it "
                    "runs on real time; compare it on fakeredis (the virtual clock)"
                )
    from simulator.userscripts.shipping import shipped

    with tempfile.TemporaryDirectory(prefix="compare-", dir=workdir) as folder:
        if isinstance(trace, pd.DataFrame):
            path, fmt = _frame_to_csv(trace, Path(folder) / "trace.csv"), "csv"
        else:
            path = Path(trace)
        split = split_trace(path, fmt, folder, shards, on_progress)
        timeline = split.timeline(max(c.window_ms for c in everyone))

        def tasks_for(c: Candidate, bits: np.ndarray | None) -> list[Task]:
            return [
                Task(c, k, str(f), bits, split.requests, timeline, shipped(c.algorithm))
                for k, f in enumerate(split.shard_files)
                if split.shard_requests[k]
            ]

        names = {c.name: c for c in everyone}
        expected = {c.name: len(tasks_for(c, None)) for c in everyone}
        finished: dict[str, list[Part]] = {}
        merged_by_name: dict[str, Part] = {}

        def take(part: Part) -> None:
            if on_task is not None:
                on_task(part)
            got = finished.setdefault(part.candidate, [])
            got.append(part)
            if len(got) == expected[part.candidate]:
                whole = merged_by_name[part.candidate] = merge_parts(got)
                del finished[part.candidate]
                if on_row is not None:
                    c = names[part.candidate]
                    on_row(_row(c, whole, split, c is base))

        _run(tasks_for(base, None), scheduler, backend, take)
        bits = merged_by_name[base.name].bits
        _run([t for c in others for t in tasks_for(c, bits)], scheduler, backend, take)
    merged = [merged_by_name[c.name] for c in everyone]
    scorecard = pd.DataFrame(
        [_row(c, p, split, i == 0) for i, (c, p) in enumerate(zip(everyone, merged, strict=True))],
        columns=list(SCORE_COLUMNS),
    )
    clients = _clients(merged[1:])
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
    scorecard.attrs["timeline"] = _timeline(merged, timeline)
    return scorecard, clients


def _row(c: Candidate, p: Part, split: SplitTrace, is_baseline: bool) -> dict[str, Any]:
    retry = {v: n for v, n in p.retry_after_ms.items() if v >= 0}
    per_client = bytes_per_active_client(c.algorithm, c.limit)
    peak = int(p.active_t.max()) if p.active_t is not None and p.active_t.size else 0
    cpu = (
        float("nan")
        if p.server_cpu_s is None or not p.decided
        else p.server_cpu_s / p.decided * 1e6
    )
    return {
        "candidate": c.name,
        "role": "baseline" if is_baseline else "candidate",
        "algorithm": c.algorithm,
        "limit": c.limit,
        "window_s": c.window_s,
        "params": ",".join(f"{k}={v:g}" for k, v in c.params.items()),
        "requests": p.decided,
        "admitted": p.admitted,
        "refused": p.refused,
        "flips_to_refused": p.flips_to_refused,
        "flips_to_admitted": p.flips_to_admitted,
        "clients_affected": len(p.clients),
        "wrongly_admitted": p.wrongly_admitted,
        "wrongly_refused": p.wrongly_refused,
        "most_in_window": p.most_in_window,
        "most_in_window_ratio": p.most_in_window / c.limit,
        "retry_after_p50_s": percentile_ms(retry, 0.5) / 1000,
        "retry_after_p99_s": percentile_ms(retry, 0.99) / 1000,
        "refused_never": int(p.retry_after_ms.get(-1, 0)),
        "bytes_per_active_client": per_client,
        "bytes_per_client_on_server": (
            p.server_bytes / p.server_clients if p.server_clients else float("nan")
        ),
        "peak_active_clients": peak,
        "peak_memory_bytes": per_client * peak,
        "server_cpu_us_per_decision": cpu,
        "depends_on": time_notes(c, split.resolution_ms),
    }


def _clients(parts: list[Part]) -> pd.DataFrame:
    """One row per client a candidate flipped, most flips first (ties: first flipped first)."""
    rows = [
        (i, p.candidate, client, r[0], r[1] + r[2], r[1], r[2], r[3], r[4])
        for i, p in enumerate(parts)
        for client, r in p.clients.items()
    ]
    rows.sort(key=lambda r: (r[0], -r[4], r[7], r[2]))
    columns = list(zip(*rows, strict=True)) if rows else [()] * 9
    data: dict[str, Any] = {"candidate": list(columns[1])}
    # Python strings: an id with bytes that are not UTF-8 keeps them (lone surrogates).
    data["client"] = pd.array(list(columns[2]), dtype=CLIENT_DTYPE)
    for name, values in zip(CLIENT_COLUMNS[2:], columns[3:], strict=True):
        data[name] = np.array(values, dtype=np.int64)
    return pd.DataFrame(data, columns=list(CLIENT_COLUMNS))


def _timeline(parts: list[Part], timeline: tuple[int, int, int]) -> pd.DataFrame:
    t0_ms, bucket_ms, buckets = timeline
    frames = []
    for p in parts:
        frames.append(
            pd.DataFrame(
                {
                    "candidate": p.candidate,
                    "t_ms": t0_ms + bucket_ms * np.arange(buckets, dtype=np.int64),
                    "flips_to_refused": _or_zeros(p.flips_to_refused_t, buckets),
                    "flips_to_admitted": _or_zeros(p.flips_to_admitted_t, buckets),
                    "active_clients": _or_zeros(p.active_t, buckets),
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out.attrs["bucket_ms"] = bucket_ms
    return out


def _or_zeros(a: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64) if a is None else a


def _frame_to_csv(frame: pd.DataFrame, path: Path) -> Path:
    """A trace frame as a CSV trace file (client ids kept byte for byte)."""
    import csv

    missing = [c for c in ("t_ms", "client") if c not in frame.columns]
    if missing:
        raise ConfigError(f"trace: the frame lacks {', '.join(missing)}")
    from simulator.traces import exact_t_ms

    t_ms = exact_t_ms(frame["t_ms"].to_numpy()).tolist()
    clients = [c if type(c) is str else str(c) for c in frame["client"].tolist()]
    cost = frame["cost"].tolist() if "cost" in frame.columns else None
    with path.open("w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
        w = csv.writer(fh)
        w.writerow(["t_ms", "client"] + (["cost"] if cost is not None else []))
        for i, (t, c) in enumerate(zip(t_ms, clients, strict=True)):
            w.writerow([t, c] + ([cost[i]] if cost is not None else []))
    return path
