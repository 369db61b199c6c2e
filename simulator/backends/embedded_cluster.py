"""A real Valkey Cluster of masters only that the program starts and owns, on 127.0.0.1.

Its nodes are :class:`~simulator.backends.embedded.EmbeddedValkey` servers in cluster mode, all
with one random password (also their ``masterauth``); they MEET, the 16384 slots are split evenly,
and the cluster is ready once every node agrees. A node can be killed on purpose (a crashed
master) to see what a run does then.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any, Self

from redis.cluster import RedisCluster

from simulator.backends.embedded import EmbeddedValkey
from simulator.backends.process import ConfigArgs, config_args

__all__ = ["EmbeddedCluster"]

_SLOTS = 16384


class EmbeddedCluster:
    """A real Valkey Cluster of masters only (3 by default) on 127.0.0.1, one password for all."""

    def __init__(
        self,
        maxmemory: int | str | None = None,
        config: ConfigArgs = None,
        *,
        masters: int = 3,
        node_timeout_ms: int = 2000,
        startup_timeout_s: float = 20.0,
    ) -> None:
        args = ["--cluster-node-timeout", str(node_timeout_ms), *config_args(config)]
        #: What every client of every node must send (AUTH); also the nodes' masterauth.
        self.password = secrets.token_hex(32)
        self.servers = [
            EmbeddedValkey(maxmemory, args, cluster_node=True, password=self.password)
            for _ in range(masters)
        ]
        self.startup_timeout_s = startup_timeout_s

    @property
    def nodes(self) -> list[tuple[str, int]]:
        return [(s.host, s.port) for s in self.servers]

    @property
    def pids(self) -> list[int]:
        return [s.pid for s in self.servers]

    @property
    def url(self) -> str:
        """``redis+cluster://:PASSWORD@127.0.0.1:PORT`` (any node's port; the first one's)."""
        return f"redis+cluster://:{self.password}@127.0.0.1:{self.servers[0].port}"

    def client(self, **kw: Any) -> RedisCluster:
        """A cluster client that authenticates (so do the per-node clients it makes)."""
        return RedisCluster(
            host="127.0.0.1", port=self.servers[0].port, password=self.password, **kw
        )

    def start(self) -> Self:
        try:
            for server in self.servers:
                server.start()
            self._form()
            return self
        except BaseException:
            self.stop()
            raise

    def _form(self) -> None:
        """MEET every node, split the slots evenly, wait until all agree."""
        n = len(self.servers)
        clients = [s.client(decode_responses=True) for s in self.servers]
        try:
            for server in self.servers[1:]:
                clients[0].cluster("MEET", server.host, server.port)
            bounds = [i * _SLOTS // n for i in range(n + 1)]
            for i, c in enumerate(clients):
                c.cluster("ADDSLOTSRANGE", bounds[i], bounds[i + 1] - 1)
            deadline = time.monotonic() + self.startup_timeout_s
            while not all(_is_formed(c.cluster("INFO"), n) for c in clients):
                if time.monotonic() > deadline:
                    infos = [c.cluster("INFO") for c in clients]
                    raise TimeoutError(
                        f"cluster not ok with all {_SLOTS} slots on every node "
                        f"within {self.startup_timeout_s}s: {infos}"
                    )
                time.sleep(0.05)  # polling interval while the gossip converges
        finally:
            for c in clients:
                c.close()

    def kill_node(self, i: int) -> None:
        """SIGKILL node i (a simulated crash of one master)."""
        self.servers[i].kill()

    def stop(self) -> None:
        with contextlib.ExitStack() as stack:  # stops every node even if one fails
            for server in self.servers:
                stack.callback(server.stop)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _is_formed(info: dict[str, Any], n: int) -> bool:
    """This node's CLUSTER INFO: state ok, all slots served, all n nodes known."""
    want = {"cluster_state": "ok", "cluster_slots_ok": _SLOTS, "cluster_known_nodes": n}
    return all(str(info.get(key)) == str(value) for key, value in want.items())
