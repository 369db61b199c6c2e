"""One candidate replayed over one shard, decision for decision against the baseline and the
exact log; what it found, in parts that add up across shards.

The candidate's decisions are the real Lua script's, on a fake server of the shard's own (or on
the real server of the run). Each decision is set beside two others for the same request:

* the **baseline's** (what the current configuration decided: its decisions come in as one bit
  per request of the trace). A request the baseline admitted and the candidate refuses is a
  *flip to refused* - somebody who got through before and would not now; the reverse is a
  *flip to admitted*.
* the **exact sliding log of the candidate's own limit and window** (the ``sliding_log``
  reference, the pure-Python twin of its script): what a limiter that never errs would have
  said. A candidate that admits where the log refuses admitted *wrongly*, and the reverse.

A :class:`Part` holds only what adds up exactly when the shards are put together: counts,
per-client flip tallies, the Retry-After values as counts per value (percentiles exact),
the most any client got through in one window, and per-bucket timelines.
"""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.algorithms.sliding_log import SlidingLogRef
from simulator.checks import ConfigError
from simulator.comparison.spec import Candidate
from simulator.comparison.split import read_shard
from simulator.records import Decisions

__all__ = ["Task", "Part", "score_shard", "merge_parts", "replay_shard"]

#: Requests tallied between two prunings of the clients whose windows are empty.
PRUNE_EVERY = 65_536
#: What one client active at once weighs while its shard replays (its keys on the shard's fake
#: server, the exact log's deque, the window tally): the 2,600 B measured with a million
#: clients active at once (docs/compare.md), rounded up.
BYTES_PER_ACTIVE_CLIENT = 3000


def most_active_clients() -> int:
    """The most clients one shard may hold active at once: half this machine's memory."""
    from simulator.engine.sizes import machine_bytes

    return machine_bytes() // 2 // BYTES_PER_ACTIVE_CLIENT


@dataclass(frozen=True)
class Task:
    """One candidate over one shard: the shard file, the baseline's decisions (one bit per
    request of the trace, ``np.packbits``; None when this is the baseline itself), the trace's
    length, the timeline ``(t0_ms, bucket_ms, buckets)`` and the user's script, if it is one."""

    candidate: Candidate
    shard: int
    shard_file: str
    baseline_bits: np.ndarray | None
    requests: int
    timeline: tuple[int, int, int]
    script: Any = None
    #: How many shards the trace is split into (for the advice when one holds too many).
    shards: int = 1


@dataclass
class Part:
    """What one task found (see the module's story); parts of one candidate add up."""

    candidate: str
    decided: int = 0
    admitted: int = 0
    refused: int = 0
    #: clients refused at least once
    clients_refused: int = 0
    flips_to_refused: int = 0
    flips_to_admitted: int = 0
    wrongly_admitted: int = 0
    wrongly_refused: int = 0
    #: The most cost any one client got admitted within one window (its own length).
    most_in_window: int = 0
    #: Retry-After in ms of each refusal -> how many (a refusal that can never pass: -1).
    retry_after_ms: Counter = field(default_factory=Counter)
    #: client -> [requests, flips_to_refused, flips_to_admitted, first flip t_ms, last flip t_ms]
    clients: dict[str, list[int]] = field(default_factory=dict)
    #: per bucket of the timeline: flips each way, and clients holding state in it
    flips_to_refused_t: np.ndarray | None = None
    flips_to_admitted_t: np.ndarray | None = None
    active_t: np.ndarray | None = None
    #: the decisions, one bit per request of the trace (the baseline's only)
    bits: np.ndarray | None = None
    #: server CPU seconds spent on this task (a real server only)
    server_cpu_s: float | None = None
    #: on a real server: bytes its keys held for the clients weighed after the run, and how many
    server_bytes: int = 0
    server_clients: int = 0
    #: keys the task's own server expired on its wall clock (``INFO stats``; 0 elsewhere)
    server_keys_expired: int = 0
    #: the peak resident memory of the process that ran the task, in kB (0: not known)
    peak_rss_kb: int = 0


class _Tally:
    """Takes each pipeline's decisions as they come and keeps only what a :class:`Part` holds."""

    def __init__(self, task: Task) -> None:
        c = task.candidate
        self.part = Part(c.name)
        self.window_ms = c.window_ms
        self.log = SlidingLogRef(c.limit, c.window_ms)
        self.exact = self.log.decide
        self.since_prune = 0
        self.most_active = most_active_clients()
        self.shard, self.shards = task.shard, max(1, task.shards)
        self.base = (
            None
            if task.baseline_bits is None
            else np.unpackbits(task.baseline_bits, count=task.requests).astype(bool)
        )
        self.own = np.zeros(task.requests, dtype=bool) if task.baseline_bits is None else None
        self.t0_ms, self.bucket_ms, buckets = task.timeline
        self.flips_r = np.zeros(buckets, dtype=np.int64)
        self.flips_a = np.zeros(buckets, dtype=np.int64)
        self.active = np.zeros(buckets + 1, dtype=np.int64)  # differences; summed at the end
        self.spans: dict[str, list[int]] = {}
        self.windows: dict[str, deque[tuple[int, int]]] = {}
        self.in_window: dict[str, int] = {}
        self.requests: Counter = Counter()
        self.refused_clients: set[str] = set()

    def __call__(self, rows: Decisions) -> None:
        part, n = self.part, len(rows)
        positions = np.asarray(rows.positions, dtype=np.int64)
        allowed = np.asarray(rows.columns.allowed, dtype=bool)
        t_list = list(rows.t_ms)
        clients = rows.clients
        part.decided += n
        admitted = int(allowed.sum())
        part.admitted += admitted
        part.refused += n - admitted
        retry = rows.columns.retry_after_ms[~allowed]
        part.retry_after_ms.update(retry.tolist())
        if admitted < n:
            self.refused_clients.update(clients[i] for i in np.flatnonzero(~allowed).tolist())
        self.requests.update(clients)
        exact = self._walk(clients, t_list, rows.cost_list(), allowed)
        self.since_prune += n
        if self.since_prune >= PRUNE_EVERY:
            self._prune(t_list[-1])
        part.wrongly_admitted += int((allowed & ~exact).sum())
        part.wrongly_refused += int((~allowed & exact).sum())
        if self.own is not None:
            self.own[positions] = allowed
            return
        self._flips(positions, allowed, t_list, clients)

    def _walk(
        self, clients: Sequence[str], t_list: list[int], costs: Sequence[int], allowed: np.ndarray
    ) -> np.ndarray:
        """One batch's requests in order: the exact count's decisions (returned), the clients
        holding state and the most each got through in one trailing window."""
        part = self.part
        exact = np.empty(len(t_list), dtype=bool)
        decide, w, t0, b = self.exact, self.window_ms, self.t0_ms, self.bucket_ms
        spans, windows, in_window = self.spans, self.windows, self.in_window
        most = part.most_in_window
        for i, (c, t, k, ok) in enumerate(
            zip(clients, t_list, costs, allowed.tolist(), strict=True)
        ):
            exact[i] = decide(c, t, k).allowed
            # Clients holding state: from a request until one window after it, in buckets.
            lo, hi = (t - t0) // b, (t + w - 1 - t0) // b
            span = spans.get(c)
            if span is None:
                spans[c] = [lo, hi]
            elif lo <= span[1] + 1:
                span[1] = hi
            else:
                self.active[span[0]] += 1
                self.active[span[1] + 1] -= 1
                span[0], span[1] = lo, hi
            if ok:  # the most this client got through in one trailing window (t - W, t]
                q = windows.get(c)
                held = in_window.get(c, 0)
                if q is None:
                    q = windows[c] = deque()
                while q and q[0][0] <= t - w:
                    held -= q.popleft()[1]
                q.append((t, k))
                held += k
                in_window[c] = held
                if held > most:
                    most = held
        part.most_in_window = most
        return exact

    def _flips(
        self, positions: np.ndarray, allowed: np.ndarray, t_list: list[int], clients: Sequence[str]
    ) -> None:
        """The decisions that differ from the baseline's: counted each way, per bucket of the
        timeline and per client."""
        part, t0, b = self.part, self.t0_ms, self.bucket_ms
        assert self.base is not None
        base = self.base[positions]
        to_refused, to_admitted = base & ~allowed, ~base & allowed
        part.flips_to_refused += int(to_refused.sum())
        part.flips_to_admitted += int(to_admitted.sum())
        flipped = np.flatnonzero(to_refused | to_admitted)
        if not flipped.size:
            return
        t_arr = np.asarray(t_list, dtype=np.int64)
        at = (t_arr[flipped] - t0) // b
        np.add.at(self.flips_r, at[to_refused[flipped]], 1)
        np.add.at(self.flips_a, at[to_admitted[flipped]], 1)
        table = part.clients
        for i in flipped.tolist():
            row = table.get(clients[i])
            if row is None:
                row = table[clients[i]] = [0, 0, 0, t_list[i], t_list[i]]
            row[1 if to_refused[i] else 2] += 1
            row[4] = t_list[i]

    def _prune(self, now_ms: int) -> None:
        """Forget the clients with nothing left in their window: what is kept then grows with
        the clients active in the last window, not with every client of the trace. (What is
        forgotten would have been emptied at the client's next request: nothing changes.)"""
        self.since_prune = 0
        edge = now_ms - self.window_ms
        logs = self.log.logs
        for client in [c for c, log in logs.items() if not log or log[-1] <= edge]:
            del logs[client]
        windows, in_window = self.windows, self.in_window
        for client in [c for c, q in windows.items() if not q or q[-1][0] <= edge]:
            del windows[client]
            del in_window[client]
        here = (now_ms - self.t0_ms) // self.bucket_ms
        for client in [c for c, span in self.spans.items() if span[1] + 1 < here]:
            lo, hi = self.spans.pop(client)
            self.active[lo] += 1
            self.active[hi + 1] -= 1
        held = len(logs)
        if held > self.most_active:  # more would fill the machine: stop while it is one message
            more = -(-held * self.shards // self.most_active) + 1
            raise ConfigError(
                f"shard {self.shard} ({self.part.candidate}): {held:,} clients active at once "
                f"(a request within one window), over the {self.most_active:,} one shard holds "
                f"in half this machine's memory (about {BYTES_PER_ACTIVE_CLIENT:,} bytes each); "
                f"split the trace into more shards (--shards {more})"
            )

    def done(self) -> Part:
        for lo, hi in self.spans.values():
            self.active[lo] += 1
            self.active[hi + 1] -= 1
        part = self.part
        part.clients_refused = len(self.refused_clients)
        for client, row in part.clients.items():
            row[0] = self.requests[client]
        part.flips_to_refused_t, part.flips_to_admitted_t = self.flips_r, self.flips_a
        part.active_t = np.cumsum(self.active[:-1])
        if self.own is not None:
            part.bits = np.packbits(self.own)
        return part


def replay_shard(task: Task, backend: Any) -> Part:
    """Replay ``task``'s candidate over its shard on ``backend``; what it found."""
    from simulator.playback.run import replay_requests

    c = task.candidate
    tally = _Tally(task)
    with _server_cpu(backend) as cpu:
        replay_requests(
            read_shard(task.shard_file),
            c.algorithm,
            c.limit,
            c.window_ms,
            backend,
            on_rows=tally,
            params=dict(c.params),
        )
    part = tally.done()
    part.server_cpu_s = cpu[0]
    return part


@contextlib.contextmanager
def _server_cpu(backend: Any) -> Iterator[list[float | None]]:
    """The server's CPU seconds (user + system) spent while the block ran (None: not a real
    server, or it does not say)."""
    out: list[float | None] = [None]
    before = None if backend.virtual_time else _cpu_s(backend)
    yield out
    if before is not None:
        after = _cpu_s(backend)
        out[0] = None if after is None else after - before


def _cpu_s(backend: Any) -> float | None:
    try:
        info = backend.client.info("cpu")
    except Exception:  # a server that does not answer INFO: no figure, never a failed run
        return None
    nodes = info.values() if info and all(isinstance(v, dict) for v in info.values()) else [info]
    return sum(float(n.get("used_cpu_user", 0)) + float(n.get("used_cpu_sys", 0)) for n in nodes)


def score_shard(task: Task) -> Part:
    """One task on a fake server of its own (this runs on a Dask worker, or here)."""
    from simulator.backends import FakeRedisBackend
    from simulator.userscripts.shipping import install

    install(task.script)
    part = replay_shard(task, FakeRedisBackend())
    part.peak_rss_kb = _peak_rss_kb()
    return part


def _peak_rss_kb() -> int:
    """This process's peak resident memory (``VmHWM``), in kB; 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        return 0


def merge_parts(parts: list[Part]) -> Part:
    """The parts of one candidate's shards, put together (every figure as one run's)."""
    whole = Part(parts[0].candidate)
    for p in parts:
        for name in (
            "decided",
            "admitted",
            "refused",
            "clients_refused",
            "flips_to_refused",
            "flips_to_admitted",
            "wrongly_admitted",
            "wrongly_refused",
        ):
            setattr(whole, name, getattr(whole, name) + getattr(p, name))
        whole.most_in_window = max(whole.most_in_window, p.most_in_window)
        whole.retry_after_ms.update(p.retry_after_ms)
        whole.clients.update(p.clients)  # shards hold disjoint clients
        for name in ("flips_to_refused_t", "flips_to_admitted_t", "active_t", "bits"):
            a, b = getattr(whole, name), getattr(p, name)
            if b is not None:
                setattr(
                    whole, name, b.copy() if a is None else (a | b if name == "bits" else a + b)
                )
        whole.peak_rss_kb = max(whole.peak_rss_kb, p.peak_rss_kb)
        whole.server_bytes += p.server_bytes
        whole.server_clients += p.server_clients
        if p.server_cpu_s is not None:
            whole.server_cpu_s = (whole.server_cpu_s or 0.0) + p.server_cpu_s
    return whole
