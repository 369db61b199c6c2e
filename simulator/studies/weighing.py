"""Weighing keys on a real server: ``used_memory`` read when it is settled, and clones.

The server is emptied (``FLUSHDB`` of its one database, never more), one user's keys are built by
the real scripts, then cloned under many users' names (``DUMP`` once, ``RESTORE`` in a server-side
Lua loop, each clone keeping an expiry as the originals do) while ``used_memory`` is sampled; a
straight line through the samples gives bytes per user.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

__all__ = ["server_facts", "flush", "CLONE_TTL_MS", "USER_FORMAT"]

USER_FORMAT = "user%07d"  # client ids user0000000 .. user9999999: an 11-byte id in every key
CLONE_TTL_MS = 3_600_000  # clones keep an expiry (it costs memory) that outlives the load

# RESTORE the representative user's keys under users n0 .. n1-1. ARGV: n0, n1, client format,
# key count, then per key: prefix, suffix, ttl_ms, payload (the key is prefix .. {tag} .. suffix).
_CLONE_LUA = """
local n0, n1, fmt, nk = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
for i = n0, n1 - 1 do
  local tag = '{' .. string.format(fmt, i) .. '}'
  for k = 0, nk - 1 do
    local b = 5 + 4 * k
    redis.call('RESTORE', ARGV[b] .. tag .. ARGV[b + 1], ARGV[b + 2], ARGV[b + 3])
  end
end
return n1 - n0
"""


def server_facts(client: Any) -> dict[str, Any]:
    """Server name, version and the settings that decide the small encodings."""
    info = client.info("server")
    config = client.config_get("*-max-listpack-*")
    return {
        "server_version": info.get("valkey_version") or info.get("redis_version"),
        "server_name": info.get("server_name", "redis"),
        **{_text(k): int(v) for k, v in config.items() if _text(v).lstrip("-").isdigit()},
    }


def _used(client: Any, settle_s: float = 30.0) -> int:
    """``used_memory`` less the client buffers (a pipeline's query buffer is not the keys' cost),
    read once the keyspace tables have finished growing: while a table rehashes, the old and the
    new bucket arrays are both allocated (that transient shows in ``used_memory_peak``)."""
    deadline = time.monotonic() + settle_s
    while True:
        info = client.info("memory")
        rehashing = int(info.get("mem_overhead_db_hashtable_rehashing", 0))
        if not rehashing or time.monotonic() > deadline:
            return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))
        time.sleep(0.05)  # the server's cron finishes the rehash; poll until it has


def flush(client: Any) -> int:
    """Empty the client's own database synchronously and return the baseline ``used_memory``.

    ``FLUSHDB``, never ``FLUSHALL``: on a server the program did not start, the other databases
    hold somebody else's data. (``used_memory`` is server-wide, so what they do meanwhile shows
    in the figures; on the embedded server nothing else is there.)
    """
    client.execute_command("FLUSHDB", "SYNC")
    while int(client.info("memory").get("lazyfree_pending_objects", 0)):
        time.sleep(0.05)  # polling a background free, not a correctness wait
    return _used(client)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _encoding(client: Any, key: str) -> str:
    return f"{_text(client.type(key))}:{_text(client.object('encoding', key))}"


def _setting(encoding: str, facts: dict[str, Any]) -> str:
    kind = encoding.split(":")[0]
    if kind in ("zset", "hash"):
        name = f"{kind}-max-listpack-entries"
        value = f"{kind}-max-listpack-value"
        return f"{name}={facts.get(name)}, {value}={facts.get(value)}"
    return "(integer string: no setting)" if encoding.endswith(":int") else ""


def _fit(users: np.ndarray, growth: np.ndarray) -> tuple[float, float, float]:
    """Slope (bytes/user), its standard error, and the largest distance of a sample from the line."""
    if len(users) < 3:
        slope = float(growth[-1] / users[-1])
        return slope, float("nan"), 0.0
    (slope, icpt), cov = np.polyfit(users, growth, 1, cov=True)
    resid = growth - (slope * users + icpt)
    return float(slope), float(np.sqrt(cov[0, 0])), float(np.abs(resid).max())


def _template(client: Any, keys: Sequence[str], tag: str) -> list[Any]:
    """What the clone loop needs per key: prefix, suffix, ttl_ms, DUMP payload."""
    argv: list[Any] = []
    for key in keys:
        prefix, _, suffix = key.partition(tag)
        ttl_ms = CLONE_TTL_MS if int(client.pttl(key)) > 0 else 0
        argv += [prefix, suffix, ttl_ms, client.dump(key)]
    return argv


def _clone(
    client: Any,
    argv: list[Any],
    users: int,
    budget_bytes: int,
    desc: str,
    progress: bool,
    checkpoint: int = 0,
) -> tuple[int, list[tuple[int, int]], float]:
    """RESTORE one user's keys (``argv`` from :func:`_template`) as users 0 .. users-1.

    Stops early before ``used_memory`` would pass ``budget_bytes``. Returns the users loaded, the
    (users, used_memory growth) samples (one of them at ``checkpoint`` users) and the load time.
    """
    sha = client.script_load(_CLONE_LUA)
    base = _used(client)
    payload = sum(len(a) for a in argv[3::4])
    batch = int(np.clip(min(2_000_000 // max(payload, 1), users // 20), 1, 20_000))
    every = max(batch, users // 40)
    samples: list[tuple[int, int]] = []
    loaded, per_user = 0, 0.0
    start = time.perf_counter()
    with tqdm(total=users, desc=desc, unit="user", disable=not progress, file=sys.stderr) as bar:
        while loaded < users:
            n = min(batch, users - loaded)
            if loaded < checkpoint:
                n = min(n, checkpoint - loaded)
            used = _used(client, settle_s=0)
            if per_user and used + 1.2 * per_user * n > budget_bytes:
                break
            client.evalsha(sha, 0, loaded, loaded + n, USER_FORMAT, len(argv) // 4, *argv)
            loaded += n
            bar.update(n)
            if loaded % every < n or loaded in (users, checkpoint) or not samples:
                growth = _used(client) - base
                samples.append((loaded, growth))
                per_user = growth / loaded
                # about 40 samples over what the budget will hold
                fits = (budget_bytes - base) / max(per_user, 1.0)
                every = max(batch, int(min(users, fits)) // 40)
    return loaded, samples, time.perf_counter() - start
