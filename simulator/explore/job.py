"""One algorithm's run in the explorer: what it is given, how it is decided, what it says.

A :class:`Job` is one algorithm's share of an explorer run: its :class:`~simulator.policy.Policy`
(resolved once, where the settings came in) and the requests - a traffic mix for some seconds, or
a trace's requests. :func:`decide` makes its decision log on a backend, asking ``cancelled()``
between decisions and stopping with :class:`Cancelled`; :func:`summarise` says what the log
means against the exact sliding log given the same requests. The runner (in this process) and
the worker processes (:mod:`simulator.explore.pool`) both run jobs through these, so both import
this module and it imports neither.

The summary line per algorithm: *admitted A of N, most one client got in any window M
(M/limit x), wrongly admitted X, wrongly refused Y*, where M is the most one client got admitted
in any trailing window (t - W, t], and X and Y compare each decision with the exact sliding log
given the same requests: admitted where the log would refuse, refused where it would admit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from simulator.engine.model import scenario_run_id, simulate_whole
from simulator.engine.run import simulate
from simulator.engine.scenario import Scenario
from simulator.fastref import decide_bulk
from simulator.metrics import rolling_admitted
from simulator.playback.run import replay
from simulator.policy import Policy

__all__ = [
    "EXACT", "Cancelled", "Job", "Summary", "decide", "merged", "summarise", "summary_line",
]  # fmt: skip

#: The algorithm every other is compared with: the exact log of admitted times.
EXACT = "sliding_log"
#: Decisions between two progress reports.
_EVERY = 250


class Cancelled(Exception):
    """The run was overtaken by a newer one and stopped."""


@dataclass(frozen=True)
class Job:
    """One algorithm's run: its policy, and the requests - a traffic mix (``traffic``,
    ``duration_s``, ``seed``) or a trace's requests (``trace``). A job sent to a worker also
    carries the sha of each of the policy's scripts as the sender has them (a worker holding
    others refuses it) and its run's number (for cancelling)."""

    policy: Policy
    traffic: Any = None
    duration_s: float = 0.0
    seed: int = 0
    trace: pd.DataFrame | None = None
    scripts: tuple[str, ...] = ()
    run: int = field(default=0, compare=False)
    #: The positions (in the traffic's clients) of the only clients to decide, each with the
    #: random generator and the run id it has in the run of them all; empty: every client.
    only: tuple[int, ...] = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # To a worker: the policy as its parts (its frozen parameters do not pickle), the
        # class by reference; the worker checks them again as it makes the policy.
        p = self.policy
        parts = (p.algorithm, p.limit, p.window_ms, dict(p.params))
        rest = (self.traffic, self.duration_s, self.seed, self.trace, self.scripts, self.run)
        return _job, (parts, *rest, self.only)


def _job(parts: tuple[Any, ...], *rest: Any) -> Job:
    return Job(Policy(*parts), *rest)


@dataclass(frozen=True)
class Summary:
    """One algorithm's run in numbers (see the module's docstring)."""

    algorithm: str
    requests: int
    admitted: int
    most_in_window: int
    limit: int
    wrongly_admitted: int
    wrongly_refused: int

    @property
    def ratio(self) -> float:
        return self.most_in_window / self.limit

    @property
    def differs_from_exact(self) -> int:
        """Decisions the exact log, given the same requests, would have made the other way."""
        return self.wrongly_admitted + self.wrongly_refused


def decide(
    job: Job,
    backend: Any,
    cancelled: Callable[[], bool],
    progress: Callable[[int], None] | None = None,
    instants: list[float] | None = None,
) -> pd.DataFrame:
    """The decision log of ``job`` on ``backend`` (emptied by the caller), stopped by
    :class:`Cancelled` as soon as ``cancelled()`` between decisions. ``instants`` (a traffic
    mix on the virtual clock) gets each decision's exact simulated instant: how a log of some
    clients is put into the log of all (:func:`merged`)."""
    seen = [0]

    def on_rows(rows: Any) -> None:  # a list, or a replay's Decisions batch
        seen[0] += len(rows)
        if cancelled():
            raise Cancelled()
        if progress is not None and seen[0] % _EVERY < len(rows):
            progress(seen[0])

    p = job.policy
    params = dict(p.params)
    if job.trace is not None:
        # In time order (ties in the trace's order), as the requests were decided: an access
        # log's lines may be a little out of order, and the time bar steps in this order.
        frame = (
            replay(job.trace, p.name, p.limit, p.window_ms, backend, on_rows=on_rows, params=params)
            .sort_values("t_ms", kind="stable")
            .reset_index(drop=True)
        )
    else:
        scenario = Scenario(
            p.name,
            limit=p.limit,
            window_ms=p.window_ms,
            duration_ms=job.duration_s * 1000,
            clients=job.traffic.clients(),
            seed=job.seed,
            params=params,
        )
        if job.only or instants is not None:
            some = replace(scenario, clients=tuple(scenario.clients[i] for i in job.only))
            frame = simulate_whole(
                some if job.only else scenario, backend, on_rows,
                run_id=scenario_run_id(scenario), indices=job.only or None, instants=instants,
            )  # fmt: skip
        else:
            frame = simulate(scenario, backend, on_rows=on_rows)
    if progress is not None:
        progress(len(frame))
    return frame


def merged(
    whole: tuple[pd.DataFrame, np.ndarray],
    some: tuple[pd.DataFrame, np.ndarray],
    names: list[str],
    clients: tuple[Any, ...],
) -> tuple[pd.DataFrame, np.ndarray]:
    """The log of a run of all ``clients`` (the specs, in order) made of the log of an earlier
    run of all of them, ``whole``, and a new run of the clients ``names`` only, ``some``
    (each log with its decisions' instants): the other clients' rows as they were, in time
    order, ties in client order, as one run of them all orders them (as the engine's shards are
    put together); every row with the new run's id."""
    frame, at = whole
    keep = ~frame["client"].isin(names).to_numpy(dtype=bool)
    both = pd.concat([frame[keep], some[0]], ignore_index=True)
    instants = np.concatenate([at[keep], some[1]])
    first: dict[str, int] = {}
    for i, spec in enumerate(clients):
        first.setdefault(spec.name, i)
    position = both["client"].map(first).to_numpy(dtype="int64")
    order = np.lexsort((np.arange(len(both)), position, instants))
    both = both.take(order).reset_index(drop=True)
    ids = some[0]["run_id"]
    if len(ids):
        both["run_id"] = pd.Series(ids.iloc[0], index=both.index, dtype=ids.dtype)
    both.attrs = dict(some[0].attrs)
    return both, instants[order]


def summarise(frame: pd.DataFrame, algorithm: str, limit: int, window_ms: int) -> Summary:
    """The summary of one algorithm's log (its own requests also given to the exact log)."""
    allowed = frame["allowed"].to_numpy(dtype=bool)
    if len(frame) == 0:
        return Summary(algorithm, 0, 0, 0, limit, 0, 0)
    codes, _ = pd.factorize(frame["client"], sort=False)
    t_ms = frame["t_ms"].to_numpy(dtype="int64")
    cost = frame["cost"].to_numpy(dtype="int64") if "cost" in frame else None
    exact = decide_bulk(EXACT, codes, t_ms, limit, window_ms, cost=cost)
    return Summary(
        algorithm=algorithm,
        requests=len(frame),
        admitted=int(allowed.sum()),
        most_in_window=int(rolling_admitted(frame, window_ms).max()),
        limit=limit,
        wrongly_admitted=int((allowed & ~exact.allowed).sum()),
        wrongly_refused=int((~allowed & exact.allowed).sum()),
    )


def summary_of(frame: pd.DataFrame, policy: Policy) -> Summary:
    """:func:`summarise` of a log that ``policy`` decided."""
    return summarise(frame, policy.name, policy.limit, policy.window_ms)


def summary_line(s: Summary) -> str:
    """``name: admitted A of N, most one client got in any window M (R× the limit), wrongly
    admitted X, wrongly refused Y`` - the line a reader (or a test) reads."""
    return (
        f"{s.algorithm}: admitted {s.admitted:,} of {s.requests:,}, most one client got in any "
        f"window {s.most_in_window:,} ({s.ratio:.2f}× the limit), wrongly admitted "
        f"{s.wrongly_admitted:,}, wrongly refused {s.wrongly_refused:,}"
    )
