"""The big key: a sliding log at 10,000 requests per minute, and what one decision costs.

One user sends exactly its limit per window, forever; each decision then drops one log entry and
adds one. The server's own time per ``EVALSHA`` (``INFO commandstats``) shows what a big key costs
beside the counters, and a sweep of log sizes shows where the log's encoding flips from listpack
to skiplist (``zset-max-listpack-entries``, 128 by default).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from simulator.algorithms import Limiter
from simulator.backends import RedisBackend
from simulator.policy import resolve
from simulator.studies.memory import _pipelined
from simulator.studies.weighing import _encoding, _text, flush, server_facts

__all__ = ["decision_cost", "encoding_sweep", "bigkey_study", "SWEEP_SIZES", "ALGORITHMS_STUDIED"]

#: The log beside the counters and buckets the card recommends instead of it at high limits.
ALGORITHMS_STUDIED = ("sliding_log", "fixed_window", "sliding_counter", "token_bucket", "gcra")


def _evalsha_stats(client: Any) -> tuple[int, int]:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def decision_cost(
    backend: RedisBackend,
    algorithm: str | type[Limiter],
    limit: int,
    decisions: int = 1000,
    window_ms: int = 60_000,
) -> dict[str, Any]:
    """Per-decision cost of one user sending exactly ``limit`` requests per window, forever.

    The user's keys are first filled by one window of requests; then ``decisions`` more arrive at
    the same rate, one round trip each, so the log drops one entry and adds one per decision.
    Server time is the ``EVALSHA`` time in ``INFO commandstats`` (microseconds, inside the server);
    wall time adds the network and the client.
    """
    client = backend.client
    flush(client)
    policy = resolve(algorithm, limit, window_ms, owner="decision_cost.algorithm")
    limiter = policy.limiter(backend)
    step, t0 = window_ms / limit, (int(time.time() * 1000) // window_ms) * window_ms
    fill = [limiter.call("bigkey", t0 + round(i * step)) for i in range(limit)]
    _pipelined(backend, fill)
    calls0, usec0 = _evalsha_stats(client)
    wall_ns = np.empty(decisions, dtype="int64")
    times = [t0 + window_ms + round(j * step) for j in range(decisions)]
    gc.disable()  # as timeit does: a collection in the loop would be charged to one decision
    try:
        for j, t_ms in enumerate(times):
            call = limiter.call("bigkey", t_ms)
            start = time.perf_counter_ns()
            backend.call(*call)
            wall_ns[j] = time.perf_counter_ns() - start
    finally:
        gc.enable()
    calls1, usec1 = _evalsha_stats(client)
    # the keys the last decision reads (counter keys of older windows are still expiring)
    keys = [k for k in limiter.keys("bigkey", times[-1]) if client.exists(k)]
    entries = sum(int(client.zcard(k)) for k in keys if _text(client.type(k)) == "zset")
    encoding = " + ".join(_encoding(client, k) for k in keys)
    user_bytes = sum(int(client.memory_usage(k, samples=0)) for k in keys)
    # the worst moment: the user pauses one window; the next decision drops the whole log at once
    pause = limiter.call("bigkey", t0 + 2 * window_ms + round(decisions * step))
    start = time.perf_counter_ns()
    backend.call(*pause)
    pause_wall_ns = time.perf_counter_ns() - start
    calls2, usec2 = _evalsha_stats(client)
    return {
        "algorithm": policy.name,
        "limit": limit,
        "window_ms": window_ms,
        "keys": len(keys),
        "entries": entries,
        "encoding": encoding,
        "user_bytes": user_bytes,
        "decisions": decisions,
        "server_us_per_decision": round((usec1 - usec0) / max(calls1 - calls0, 1), 2),
        "wall_us_p50": round(float(np.percentile(wall_ns, 50)) / 1000, 1),
        "wall_us_p99": round(float(np.percentile(wall_ns, 99)) / 1000, 1),
        "server_us_after_pause": round((usec2 - usec1) / max(calls2 - calls1, 1), 2),
        "wall_us_after_pause": round(pause_wall_ns / 1000, 1),
    }


SWEEP_SIZES = (8, 16, 32, 64, 100, 120, 127, 128, 129, 130, 160, 256, 512, 1024, 4096, 10_000)


def encoding_sweep(
    backend: RedisBackend,
    sizes: Sequence[int] = SWEEP_SIZES,
    decisions: int = 300,
    progress: bool = True,
) -> pd.DataFrame:
    """The sliding log at each size: encoding, bytes, bytes per entry and time per decision."""
    threshold = server_facts(backend.client).get("zset-max-listpack-entries")
    rows = []
    for size in tqdm(sizes, desc="log sizes", disable=not progress, file=sys.stderr):
        row = decision_cost(backend, "sliding_log", size, decisions)
        row["bytes_per_entry"] = round(row["user_bytes"] / row["entries"], 1)
        row["zset_max_listpack_entries"] = threshold
        rows.append(row)
    flush(backend.client)
    return pd.DataFrame(rows)


def bigkey_study(
    backend: RedisBackend,
    limits: Sequence[int] = (5, 100, 10_000),
    algorithms: Sequence[str] = ALGORITHMS_STUDIED,
    decisions: int = 1000,
) -> pd.DataFrame:
    """Log versus counters at a login-sized, an interview-sized and an API-key-sized limit."""
    rows = [decision_cost(backend, a, n, decisions) for n in limits for a in algorithms]
    flush(backend.client)
    return pd.DataFrame(rows)
