"""A candidate on a real server: its keys checked absent first, weighed and deleted after.

On a server the program did not start it touches only its own keys: those a task will use are
looked up before it runs (one that exists already refuses the run), and deleted when it is done,
so that the next candidate of the same algorithm starts from nothing. Before they go, the keys
of the shard's last clients are weighed with ``MEMORY USAGE``, beside the measured model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simulator.checks import ConfigError
from simulator.comparison.score import Part, Task, replay_shard

__all__ = ["on_server", "WEIGHED_CLIENTS"]


def on_server(task: Task, backend: Any) -> Part:
    """A task on a real server: its keys checked absent first, and deleted after (they are
    this run's own; the next candidate of the same algorithm must start from nothing)."""
    from simulator.comparison.split import read_shard
    from simulator.engine.own_keys import leftover_keys, run_keys

    c = task.candidate

    def keys() -> list[str]:
        requests = (
            (cl, t)
            for part in read_shard(task.shard_file)
            for cl, t in zip(part.clients, part.t_ms, strict=True)
        )
        return run_keys(c.policy, requests, backend)

    problem = leftover_keys(backend, getattr(backend, "name", "server"), keys)
    if problem is not None:
        raise ConfigError(problem)
    try:
        from simulator.backends.embedded import expired_keys

        before = expired_keys(backend)  # this task's own, not the weighing's below
        part = replay_shard(task, backend)
        if before is not None:
            part.server_keys_expired = (expired_keys(backend) or 0) - before
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
    limiter = c.policy.limiter(backend)
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
