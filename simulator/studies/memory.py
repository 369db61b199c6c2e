"""Memory per user on a real server: what each limiter's keys cost when 5 million users are active.

The interview question: 100 requests per minute per user, 5 million users, which algorithm fits in
memory? A candidate multiplies bytes per key by users on a whiteboard; here the server answers.
For every layout (an algorithm's keys as its Lua script writes them, in its steady state and at its
worst moment) one representative user is built by driving the real script through
:data:`~simulator.algorithms.ALGORITHMS`. Its keys are weighed with ``MEMORY USAGE``; then they are
cloned under many users' keys (``DUMP`` once, ``RESTORE`` in a server-side Lua loop) while the
server's ``used_memory`` is sampled, and a straight line through those samples gives bytes per
user. A smaller set of users built by the scripts themselves checks that the clones are faithful.
Where the memory budget does not hold all the users the total is extrapolated from the line, and
the row says so. The big-key study is :mod:`simulator.studies.bigkey`; the tables a run wrote are
read back, and set beside the whiteboard sum, by :mod:`simulator.studies.memory_tables`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.algorithms.base import MemoryModel
from simulator.backends import RedisBackend
from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError, check_int
from simulator.keys import hash_tag
from simulator.policy import Policy, resolve
from simulator.studies.weighing import (
    USER_FORMAT,
    _clone,
    _encoding,
    _fit,
    _setting,
    _template,
    _used,
    flush,
    server_facts,
)
from simulator.userscripts import UserScript

__all__ = [
    "Layout",
    "LAYOUTS",
    "TARGET_USERS",
    "server_facts",
    "flush",
    "build_users",
    "measure_layout",
    "measure_all",
]

TARGET_USERS = 5_000_000
ID_FORMATS = ("now_ms-seq", "uuid4")


@dataclass(frozen=True)
class Layout:
    """One user's keys in one state: ``steady`` (mid-window), ``seam`` (two windows' keys alive at
    once), ``idle`` (no request for a while; only what never expires is left)."""

    algorithm: str
    state: str = "steady"
    limit: int = 100
    window_ms: int = 60_000
    id_format: str = ""  # sliding log members: "now_ms-seq" (as limiters.py writes) or "uuid4"

    def __post_init__(self) -> None:
        if self.state not in ("steady", "seam", "idle"):
            raise ConfigError(f"Layout.state: must be steady, seam or idle, got {self.state!r}")
        check_int("Layout", "limit", self.limit, 1, MAX_LIMIT)
        check_int("Layout", "window_ms", self.window_ms, 1, MAX_WINDOW_MS)
        known = self.algorithm in ALGORITHMS  # the study's own message for a name it lacks
        model = self.policy.algorithm.memory if known else None
        if model is None:
            raise ConfigError(
                f"Layout.algorithm: unknown {self.algorithm!r} (or not in the memory study)"
            )
        if model.request_ids != (self.id_format in ID_FORMATS):
            raise ConfigError(
                f"Layout.id_format: one of {ID_FORMATS} for algorithms that keep request ids only"
            )

    @cached_property
    def policy(self) -> Policy:
        """The algorithm with this layout's limit and window (its own parameters at their
        defaults), resolved once: what builds the user."""
        return resolve(self.algorithm, self.limit, self.window_ms, owner="Layout.algorithm")

    @property
    def model(self) -> MemoryModel:
        model = self.policy.algorithm.memory
        assert model is not None  # checked on construction
        return model

    @property
    def windows(self) -> int:
        """How many grid windows of requests build this state: the algorithm's own count, or for
        a user's script as many as its keys reach back (``{window-1}``: the previous window's
        key is alive in the steady state too)."""
        kept = max(self.model.windows, _script_windows(self.policy.algorithm))
        return kept + (1 if self.state == "seam" else 0)


def _script_windows(cls: type[Limiter]) -> int:
    """Grid windows whose keys a user's script keeps at once (1 for a built-in: its own
    :class:`MemoryModel` says)."""
    if not issubclass(cls, UserScript):
        return 1
    return 2 if any("{window-1}" in key for key in cls.declaration.keys) else 1


def _layouts() -> tuple[Layout, ...]:
    """Every algorithm's states, each request-id format of those that keep ids."""
    out = []
    for name, cls in ALGORITHMS.items():
        if cls.memory is None:
            continue
        ids = ID_FORMATS if cls.memory.request_ids else ("",)
        out += [Layout(name, state, id_format=i) for state in cls.memory.states for i in ids]
    return tuple(out)


#: The layouts measured: every algorithm's, then at 10,000 per minute the log (the big key the
#: card warns about) and the counter and the buckets it recommends instead.
LAYOUTS: tuple[Layout, ...] = (
    *_layouts(),
    Layout("sliding_log", limit=10_000, id_format="now_ms-seq"),
    Layout("sliding_counter", limit=10_000),
    Layout("token_bucket", limit=10_000),
    Layout("gcra", limit=10_000),
)


def _request_times(layout: Layout, now_ms: int) -> list[int]:
    """``limit`` requests spread evenly over each window that builds the state."""
    w, step = layout.window_ms, layout.window_ms / layout.limit
    if layout.model.drained:  # a bucket: its burst (the limit) at once, then one per token
        start = now_ms - w + 1
        return [start] * layout.limit + [start + round((i + 1) * step) for i in range(layout.limit)]
    if layout.model.trailing:  # e.g. the log's window is (now - W, now]
        return [now_ms - w + round((i + 1) * step) for i in range(layout.limit)]
    first = (now_ms // w - layout.windows + 1) * w
    return [
        first + k * w + round(i * step) for k in range(layout.windows) for i in range(layout.limit)
    ]


def _pipelined(backend: RedisBackend, calls: Sequence[Any], chunk: int = 2000) -> None:
    """Run script calls in order, ``chunk`` per round trip (the replies are not needed here)."""
    for start in range(0, len(calls), chunk):
        backend.call_many(calls[start : start + chunk])


def _expire_all(backend: RedisBackend, keys: Sequence[str], chunk: int = 2000) -> None:
    """Delete those of ``keys`` that have an expiry (as if their time had come)."""
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        pipe = backend.client.pipeline(transaction=False)
        for key in part:
            pipe.pttl(key)
        doomed = [k for k, ttl in zip(part, pipe.execute(), strict=True) if int(ttl) >= 0]
        if doomed:
            backend.client.delete(*doomed)


def build_users(
    backend: RedisBackend, layout: Layout, clients: Sequence[str], now_ms: int, seed: int = 0
) -> list[str]:
    """Drive the real script for each client into ``layout``'s state; returns the last one's keys.

    One limiter serves all clients, as one application process would, so the sliding log's
    ``<now_ms>-<seq>`` request ids carry the sequence numbers of a process that has been busy.
    """
    limiter: Limiter = layout.policy.limiter(backend)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    times = _request_times(layout, now_ms)
    group = max(1, 20_000 // len(times))  # clients per batch of calls
    for first in range(0, len(clients), group):
        calls = []
        for client in clients[first : first + group]:
            for t_ms in times:
                script, keys, args = limiter.call(client, t_ms)
                if layout.id_format == "uuid4":
                    member = str(uuid.UUID(bytes=rng.bytes(16), version=4))
                    args = (*args[:3], member, *args[4:])  # the request id swapped, cost kept
                calls.append((script, keys, args))
        _pipelined(backend, calls)
    if layout.state == "idle":  # long after the last request: what expires has expired
        _expire_all(
            backend, sorted({k for c in clients for t in times for k in limiter.keys(c, t)})
        )
    keys = sorted({k for t_ms in times for k in limiter.keys(clients[-1], t_ms)})
    return [k for k in keys if backend.client.exists(k)]


def measure_layout(
    backend: RedisBackend,
    layout: Layout,
    users: int,
    budget_bytes: int,
    script_users: int = 2000,
    progress: bool = True,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """One row of the per-user table and the used_memory samples behind it."""
    client, facts = backend.client, server_facts(backend.client)
    now_ms = int(time.time() * 1000)
    requests = layout.limit * layout.windows
    script_users = max(1, min(script_users, users, 200_000 // requests))
    # 1. users built by the scripts themselves; the last one is the representative user
    base = flush(client)
    clients = [USER_FORMAT % i for i in range(script_users)]
    keys = build_users(backend, layout, clients, now_ms)
    by_scripts = (_used(client) - base) / script_users
    # 2. the representative user, weighed key by key
    usage = [int(client.memory_usage(k, samples=0)) for k in keys]
    encodings = [_encoding(client, k) for k in keys]
    argv = _template(client, keys, hash_tag(clients[-1]))
    # 3. clones under many users' keys, used_memory sampled as they load
    flush(client)
    desc = f"{layout.algorithm} {layout.state} {layout.limit}/min"
    loaded, samples, load_s = _clone(
        client, argv, users, budget_bytes, desc, progress, checkpoint=script_users
    )
    info = client.info("memory")
    n, g = (np.array(c, dtype="float64") for c in zip(*samples, strict=True))
    slope, stderr, max_resid = _fit(n, g)
    measured = loaded >= TARGET_USERS
    total = g[-1] / loaded * TARGET_USERS if measured else slope * TARGET_USERS
    row = {
        **asdict(layout),
        "keys_per_user": len(keys),
        "key_names": " ".join(k.replace(hash_tag(clients[-1]), "{<user>}") for k in keys),
        "encoding": " + ".join(encodings),
        "encoding_setting": "; ".join(s for s in {_setting(e, facts) for e in encodings} if s),
        "memory_usage_bytes_per_user": sum(usage),
        "users_scripts": script_users,
        # fewer than 100 users weigh less than the allocator's and the tables' own steps
        "bytes_per_user_scripts": round(by_scripts, 1) if script_users >= 100 else float("nan"),
        "bytes_per_user_clones_same_users": round(dict(samples)[script_users] / script_users, 1),
        "users_measured": loaded,
        "bytes_per_user_used_memory": round(slope, 2),
        "fit_stderr_bytes_per_user": round(stderr, 3),
        "fit_max_residual_bytes": round(max_resid),
        "used_memory_growth_bytes": int(g[-1]),
        "used_memory_peak_bytes": int(info["used_memory_peak"]),
        "used_memory_rss_bytes": int(info["used_memory_rss"]),
        "load_s": round(load_s, 1),
        "total_at_5m_bytes": int(total),
        "total_at_5m_error_bytes": 0 if measured else float(round(stderr * TARGET_USERS, -3)),
        "total_at_5m_source": "measured" if measured else "extrapolated",
    }
    growth = pd.DataFrame({"users": n.astype("int64"), "used_memory_growth_bytes": g})
    for name in ("algorithm", "state", "limit", "id_format"):
        growth.insert(0, name, row[name])
    flush(client)
    return row, growth


def measure_all(
    backend: RedisBackend,
    users: int,
    budget_bytes: int,
    server: str,
    layouts: Sequence[Layout] = LAYOUTS,
    script_users: int = 2000,
    progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-user table (one row per layout) and the used_memory samples of every load."""
    if not layouts:
        raise ConfigError("measure_all.layouts: no layout to measure (give at least one)")
    facts = server_facts(backend.client)
    rows, growth = [], []
    for layout in layouts:
        row, g = measure_layout(backend, layout, users, budget_bytes, script_users, progress)
        rows.append(row)
        growth.append(g)
    table = pd.DataFrame(rows)
    table.insert(
        0, "method", "MEMORY USAGE SAMPLES 0; INFO used_memory line fit over DUMP/RESTORE clones"
    )
    table.insert(0, "date", datetime.now(UTC).strftime("%Y-%m-%d"))
    table.insert(0, "server_version", facts["server_version"])
    table.insert(0, "server", server)
    return table, pd.concat(growth, ignore_index=True)
