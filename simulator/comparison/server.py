"""A candidate on a real server: its keys checked absent first, weighed and deleted after.

On a server the program did not start it touches only its own keys: those a task will use are
looked up before it runs (one that exists already refuses the run), and deleted when it is done,
so that the next candidate of the same algorithm starts from nothing. Both go a slice of the shard
at a time (:data:`KEY_GROUP_REQUESTS` requests' keys), so that a long shard's keys - one per
client and window for a fixed window - are never all held at once. Before they go, the keys
of the shard's last clients are weighed with ``MEMORY USAGE``, beside the measured model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from simulator.checks import ConfigError
from simulator.comparison.score import Part, Task, replay_shard

if TYPE_CHECKING:
    from simulator.engine.own_keys import KeyGroup

__all__ = ["on_server", "WEIGHED_CLIENTS", "KEY_GROUP_REQUESTS"]

#: Requests of a shard whose keys are listed together (looked up before the task, deleted after).
KEY_GROUP_REQUESTS = 65_536


def on_server(task: Task, backend: Any) -> Part:
    """A task on a real server: its keys checked absent first, and deleted after (they are
    this run's own; the next candidate of the same algorithm must start from nothing)."""
    from simulator.engine.own_keys import leftover_keys_in_groups

    name = getattr(backend, "name", "server")
    problem = leftover_keys_in_groups(backend, name, lambda: key_groups(task, backend))
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
        for _, keys in key_groups(task, backend):
            _forget(backend, keys)


def key_groups(task: Task, backend: Any) -> Iterator[KeyGroup]:
    """The keys ``task`` touches on ``backend``, a slice of its shard at a time: each slice's
    keys once, in order of first use (a key used in two slices is in both); which requests of
    the shard they are for (None: the whole shard, when it is one slice)."""
    from simulator.comparison.split import read_shard
    from simulator.engine.own_keys import run_keys

    policy = task.candidate.policy
    where = f"shard {task.shard + 1} of {max(1, task.shards)}"
    clients: list[str] = []
    t_ms: list[int] = []
    first = 1
    for part in read_shard(task.shard_file):
        clients += part.clients
        t_ms += part.t_ms
        while len(clients) >= KEY_GROUP_REQUESTS:
            last = first + KEY_GROUP_REQUESTS - 1
            requests = zip(clients[:KEY_GROUP_REQUESTS], t_ms[:KEY_GROUP_REQUESTS], strict=True)
            keys = run_keys(policy, requests, backend)
            del clients[:KEY_GROUP_REQUESTS], t_ms[:KEY_GROUP_REQUESTS]
            yield f"requests {first:,} to {last:,} of {where}", keys
            first = last + 1
    if clients:
        which = (
            None if first == 1 else f"requests {first:,} to {first + len(clients) - 1:,} of {where}"
        )
        yield which, run_keys(policy, zip(clients, t_ms, strict=True), backend)


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
