"""The queue-budget studies: what the model shows, measured, at CI size or full size.

Each study is a handful of :class:`~simulator.queue_budget.QueueScenario` runs and a table:

* ``basic``: one queue, 4 workers, demand three times the budget. Throughput per window never
  goes above max; the backlog waits, and every wait is a dequeue that put the job back.
* ``pad``: deferring by exactly the PTTL wakes the job at the very millisecond the counter
  expires, when the key still exists (Redis deletes a key only once now is *past* its expiry):
  the read says 0, the admit refuses (retry after 1 ms), and the job costs one more dequeue. One extra ms
  removes that dequeue.
* ``global_vs_local``: K workers each holding an in-process counter let K times the budget
  through; the server counter holds max for every K.
* ``fairness``: one room floods at 50x the others. One shared queue and budget: quiet rooms wait
  behind the flood and are dropped as stale. One queue + budget per room: they are untouched.
* ``crash``: a worker dies between INCR and PEXPIRE of a non-atomic admit; the counter has no
  expiry and the budget never comes back. The atomic script has no such point.

The measures are pure functions of the frames a run returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from simulator.algorithms import EchoMQ, echomq_keys
from simulator.backends import FakeRedisBackend, ScriptError
from simulator.studies.queue_budget import QueueRun, QueueScenario, Room, run_many, sweep

__all__ = [
    "admitted_per_window",
    "budget_windows",
    "job_summary",
    "dequeue_summary",
    "window_table",
    "fairness_table",
    "crash_table",
    "no_max_answers",
    "basic_scenario",
    "pad_study",
    "global_vs_local",
    "fairness",
    "crash",
    "FLOOD_ROOM",
    "WORKER_COUNTS",
]

_RUN = ["run_id", "label", "design", "limiter", "workers"]
FLOOD_ROOM = "flood"
WORKER_COUNTS = (1, 2, 4, 8)


# --- measures: frames in, frames out ----------------------------------------------------------
def admitted_per_window(dequeues: pd.DataFrame, window_ms: int, until_ms: int) -> pd.DataFrame:
    """Admitted jobs per clock-aligned window [k*W, (k+1)*W) of each run, empty windows included."""
    n_windows = -(-until_ms // window_ms)
    out = []
    for ident, part in dequeues.groupby(_RUN, sort=False):
        t = part.loc[part["action"] == "admit", "t_ms"].to_numpy(dtype="int64")
        counts = np.bincount(t // window_ms, minlength=n_windows)[:n_windows]
        frame = pd.DataFrame({"window": np.arange(n_windows, dtype="int64"), "admitted": counts})
        for k, v in zip(_RUN, ident, strict=True):
            frame[k] = v
        out.append(frame)
    if not out:
        return pd.DataFrame(columns=[*_RUN, "window", "start_s", "admitted"])
    frame = pd.concat(out, ignore_index=True)
    frame["start_s"] = frame["window"] * window_ms / 1000
    return frame[[*_RUN, "window", "start_s", "admitted"]].astype({"admitted": "int64"})


def budget_windows(dequeues: pd.DataFrame) -> pd.DataFrame:
    """Admitted jobs per budget window as its counter saw it (local counters: per worker).

    A window is named by the moment its counter expires; a counter without expiry (the crash of
    the non-atomic admit) gives one window that never ends (``window_end_ms`` <NA>).
    """
    adm = dequeues[dequeues["action"] == "admit"].copy()
    adm["owner"] = np.where(adm["limiter"] == "local", adm["worker"], -1)
    keys = [*_RUN, "queue", "owner", "window_end_ms"]
    out = adm.groupby(keys, sort=False, dropna=False).size().rename("admitted").reset_index()
    return out.astype({"admitted": "int64", "owner": "int64"})


def job_summary(jobs: pd.DataFrame, by: Sequence[str] = ("label",)) -> pd.DataFrame:
    """Per group: jobs, how they ended, latency percentiles of done jobs (ms), mean deferrals."""
    g = jobs.groupby(list(by), sort=False)
    out = g.agg(jobs=("job_id", "size"), deferrals_per_job=("deferrals", "mean"))
    for name in ("done", "dropped", "lost"):
        out[name] = g["outcome"].agg(lambda o, name=name: int((o == name).sum()))
    out["unfinished"] = out["jobs"] - out["done"] - out["dropped"] - out["lost"]
    out["dropped_share"] = out["dropped"] / out["jobs"]
    lat = jobs[jobs["outcome"] == "done"].groupby(list(by), sort=False)["latency_ms"]
    for q in (50, 99):
        out[f"p{q}_ms"] = lat.quantile(q / 100).astype("float64")
    out["max_ms"] = lat.max().astype("float64")
    return out


def dequeue_summary(dequeues: pd.DataFrame, by: Sequence[str] = ("label",)) -> pd.DataFrame:
    """Per group: dequeues, admitted, deferrals and the wasted ones (dequeued, then put back)."""
    a = dequeues["action"]
    frame = dequeues.assign(
        admitted=a == "admit",
        defer_ttl=a == "defer_ttl",
        defer_admit=a == "defer_admit",
        dropped=a == "drop",
    )
    out = frame.groupby(list(by), sort=False).agg(
        dequeues=("action", "size"),
        admitted=("admitted", "sum"),
        defer_ttl=("defer_ttl", "sum"),
        defer_admit=("defer_admit", "sum"),
        dropped=("dropped", "sum"),
    )
    out["wasted"] = out["defer_ttl"] + out["defer_admit"]
    out["wasted_per_admit"] = out["wasted"] / out["admitted"].where(out["admitted"] > 0)
    return out


def window_table(result: QueueRun) -> pd.DataFrame:
    """Per run: most and mean admitted per aligned window and per budget window, vs max."""
    s = result.scenario
    per = admitted_per_window(result.dequeues, s.window_ms, s.duration_ms)
    budget = budget_windows(result.dequeues)
    out = per.groupby(["limiter", "workers"], sort=False)["admitted"].agg(["max", "mean"])
    out.columns = ["most_per_window", "mean_per_window"]
    out["most_per_budget_window"] = budget.groupby(["limiter", "workers"], sort=False)[
        "admitted"
    ].max()
    out["ratio_to_max"] = out["most_per_window"] / s.max_per_window
    return out


def crash_table(result: QueueRun) -> pd.DataFrame:
    """Per limiter: admitted before the crash and after the window it hit, workers lost, and
    budget windows that never end (a counter left without expiry)."""
    s = result.scenario
    crash_ms = s.crash_at_ms if s.crash_at_ms is not None else s.duration_ms
    d = result.dequeues
    admits = d[d["action"] == "admit"]
    t = admits["t_ms"]
    out = pd.DataFrame(
        {
            "admitted_before_crash": (t < crash_ms).groupby(admits["limiter"], sort=False).sum(),
            "admitted_one_window_later": (t >= crash_ms + s.window_ms)
            .groupby(admits["limiter"], sort=False)
            .sum(),
        }
    )
    out["workers_lost"] = (d["action"] == "lost").groupby(d["limiter"], sort=False).sum()
    windows = budget_windows(d)
    out["windows_never_ending"] = (
        windows["window_end_ms"].isna().groupby(windows["limiter"], sort=False).sum()
    )
    return out.astype("int64")


def fairness_table(jobs: pd.DataFrame, flood_room: str = FLOOD_ROOM) -> pd.DataFrame:
    """Per design and room kind (the flood room vs every quiet room): latency and drops."""
    kind = jobs["room"].where(jobs["room"] == flood_room, "quiet").rename("room_kind")
    table = job_summary(jobs.assign(room_kind=kind), by=["design", "room_kind"])
    return table[["jobs", "done", "dropped", "dropped_share", "unfinished", "p50_ms", "p99_ms"]]


# --- the corner of the read script ------------------------------------------------------------
def no_max_answers(queue: str = "room:nomax") -> dict[str, object]:
    """What the two scripts answer when the meta hash has no ``max`` and the caller passes 0.

    The read (``echomq_ttl``) answers 0: no budget is configured, so there is nothing to wait
    for. The admit (``echomq_admit``) will not count against a budget it does not know: it fails
    with an error naming the meta key, raised by the backend as :class:`ScriptError`, and
    writes nothing.
    """
    backend = FakeRedisBackend(lambda: 0)
    limiter = EchoMQ(backend, 1, 1000)
    counter, meta = echomq_keys(queue)
    answers: dict[str, object] = {
        "meta_key": meta,
        "meta_has_max": bool(backend.client.exists(meta)),
    }
    answers["ttl_read"] = limiter.rate_limit_ttl(queue, 0, 0)
    try:
        backend.call(limiter.script, (counter, meta), (0, 0, 1000))
        answers["admit"] = "admitted"
    except ScriptError as exc:
        answers["admit"] = f"ScriptError: {exc}"
    answers["counter_exists"] = bool(backend.client.exists(counter))
    return answers


# --- the studies ------------------------------------------------------------------------------
def basic_scenario(full: bool = False) -> QueueScenario:
    """One queue, 30 jobs/s, 4 workers, budget 10 per 1 s: demand is three times the budget."""
    return QueueScenario(
        (Room("room", 30.0),),
        workers=4,
        max_per_window=10,
        window_ms=1000,
        service_ms=20,
        duration_ms=60_000 if full else 10_000,
        stale_after_ms=5_000,
        drain_ms=6_000,
    )


def pad_study(full: bool = False) -> QueueRun:
    """Deferral by exactly the PTTL (pad 0) vs the PTTL + 1 ms."""
    return run_many(sweep(basic_scenario(full), defer_pad_ms=[0, 1]))


def global_vs_local(full: bool = False, workers: Sequence[int] = WORKER_COUNTS) -> QueueRun:
    """The same workload, K workers sharing the server counter vs each with its own counter."""
    base = QueueScenario(
        (Room("room", 100.0),),
        max_per_window=10,
        window_ms=1000,
        service_ms=10,
        duration_ms=30_000 if full else 10_000,
        stale_after_ms=3_000,
        defer_pad_ms=1,
    )
    return run_many(sweep(base, limiter=["server", "local"], workers=list(workers)))


def fairness(full: bool = False, quiet_rooms: int = 9, flood_factor: float = 50.0) -> QueueRun:
    """One room floods at ``flood_factor`` x the quiet rooms; one shared queue vs one per room.

    Both designs have the same total budget: 20 per 1 s on the shared queue, 2 per 1 s on each of
    the 10 room queues.
    """
    quiet_rate_per_s = 0.5
    rooms = (Room(FLOOD_ROOM, quiet_rate_per_s * flood_factor),) + tuple(
        Room(f"room{i}", quiet_rate_per_s) for i in range(1, quiet_rooms + 1)
    )
    shared = QueueScenario(
        rooms,
        workers=4,
        max_per_window=20,
        window_ms=1000,
        service_ms=20,
        duration_ms=60_000 if full else 20_000,
        stale_after_ms=5_000,
        drain_ms=6_000,
        defer_pad_ms=1,
    )
    per_room = replace(shared, design="per_room", max_per_window=20 // len(rooms), label="")
    return run_many([shared, per_room])


def crash(full: bool = False) -> QueueRun:
    """A worker dies right after its admit step's INCR at 2 s: atomic script vs split commands."""
    base = QueueScenario(
        (Room("room", 30.0),),
        workers=4,
        max_per_window=10,
        window_ms=1000,
        service_ms=20,
        duration_ms=30_000 if full else 8_000,
        stale_after_ms=2_000,
        crash_at_ms=2_000,
        min_defer_ms=100,
        defer_pad_ms=1,
    )
    return run_many(sweep(base, limiter=["server", "split"]))
