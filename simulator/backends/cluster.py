"""A Redis/Valkey Cluster: every call goes to the node that owns its keys' slot."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from simulator.backends.base import _SERVER_ERRORS, NO_REPLY, Backend, BackendError
from simulator.backends.server import RedisBackend
from simulator.calls import Call

__all__ = ["ClusterBackend"]


class ClusterBackend(Backend):
    """A Redis/Valkey Cluster: every call goes to the node owning its keys' slot.

    All keys of one call share a hash tag, so they share a slot; a call whose keys do not is
    refused (by the client before it is sent, or by the server with CROSSSLOT). A batch is split
    by node, each part pipelined to its node, and the replies put back in call order; calls on
    one key always go to one node, in order, so the decisions are those of one call at a time.
    """

    name = "cluster"
    virtual_time = False
    clustered = True

    def __init__(self, client: Any, name: str = "cluster", owned: Any = None) -> None:
        self.client, self.name, self.owned = client, name, owned
        self._nodes: dict[str, RedisBackend] = {}
        self._held: tuple[list[str], float] | None = None  # see hold_back
        try:
            self.client.ping()
        except _SERVER_ERRORS as exc:
            self.close()
            raise BackendError(f"backend {self.name}: cannot reach the cluster: {exc}") from exc

    def describe(self) -> str:
        nodes = ", ".join(f"{n.host}:{n.port}" for n in self.client.get_primaries())
        if self.owned is not None:
            pids = ", ".join(str(p) for p in self.owned.pids)
            return (
                f"{self.name}: valkey-server pids {pids} on {nodes}, password set by the program "
                "(stopped on exit)"
            )
        return f"{self.name}: cluster with primaries {nodes}"

    def _node_backend(self, key: str) -> RedisBackend:
        node = self.client.get_node_from_key(key)
        backend = self._nodes.get(node.name)
        if backend is None:
            client = self.client.get_redis_connection(node)
            name = f"{self.name} node {node.name}"
            # The scripts are already on every primary (loaded in __init__).
            backend = RedisBackend(client, name, check=False, foreign=self.owned is None)
            if self._held is not None:
                backend.hold_back(*self._held)
            self._nodes[node.name] = backend
        return backend

    def hold_back(self, scripts: list[str], deadline_s: float) -> None:
        """As :meth:`RedisBackend.hold_back`, on every node (each proves a script alone)."""
        self._held = (list(scripts), deadline_s)
        for node in self._nodes.values():
            node.hold_back(scripts, deadline_s)

    def stream(self, batches: Iterable[Sequence[Call]], depth: int = 2) -> Iterator[list[Any]]:
        for batch in batches:
            parts: dict[str, tuple[RedisBackend, list[int]]] = {}
            try:
                for i, (_script, keys, _args) in enumerate(batch):
                    node = self._node_backend(keys[0])
                    parts.setdefault(node.name, (node, []))[1].append(i)
            except _SERVER_ERRORS as exc:
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            replies: list[Any] = [NO_REPLY] * len(batch)
            for node, positions in parts.values():
                calls = [batch[i] for i in positions]
                try:
                    answered = next(node.stream([calls], depth=1))
                except BackendError as exc:
                    # The other nodes' parts were answered (and applied there): hand their
                    # replies over so those decisions are kept, and say which calls went to
                    # the node that failed; the parts not sent yet were never applied.
                    exc.replies, exc.unknown = replies, positions
                    exc.failed_node = "node " + node.name.rsplit(" ", 1)[-1]  # its host:port
                    raise
                for i, reply in zip(positions, answered, strict=True):
                    replies[i] = reply
            yield replies
