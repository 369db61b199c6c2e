"""Tests for the real Valkey server and cluster the simulator starts itself."""

from __future__ import annotations

import os

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from simulator.servers import EmbeddedCluster, EmbeddedValkey, open_url, valkey_binary

INCR_BOTH = "return {redis.call('INCR', KEYS[1]), redis.call('INCR', KEYS[2])}"


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_binary_exists() -> None:
    assert os.access(valkey_binary(), os.X_OK)


def test_server_basics_and_stop() -> None:
    server = EmbeddedValkey(maxmemory="64mb")
    with server:
        assert server.host == "127.0.0.1"
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        c = server.client(decode_responses=True)
        assert c.set("k", "v") and c.get("k") == "v"
        assert c.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, "n", 5) == 5
        assert c.config_get("bind") == {"bind": "127.0.0.1"}
        assert c.config_get("save") == {"save": ""}
        assert c.config_get("maxmemory") == {"maxmemory": str(64 * 1024 * 1024)}
        pid, tmp = server.pid, server.dir
        assert tmp is not None and tmp.is_dir()
        c.close()
    assert _pid_gone(pid)
    assert not tmp.exists()
    server.stop()  # idempotent


def test_stop_on_exception() -> None:
    server = EmbeddedValkey()
    with pytest.raises(KeyError), server:
        pid = server.pid
        raise KeyError("boom")
    assert _pid_gone(pid)


def test_kill_simulates_crash() -> None:
    with EmbeddedValkey(config=["--maxmemory-policy", "noeviction"]) as server:
        # No retries: redis-py's default back-off would only slow the failure down.
        c = server.client(socket_timeout=1, retry=Retry(NoBackoff(), 0))
        assert c.ping()
        server.kill()
        assert _pid_gone(server.pid)
        with pytest.raises(redis.ConnectionError):
            c.ping()


def test_open_url() -> None:
    with EmbeddedValkey() as server:
        c = open_url(server.url)
        assert isinstance(c, redis.Redis) and c.ping()
        c.close()
    with pytest.raises(ValueError, match="memcached://x:1"):
        open_url("memcached://x:1")


def test_cluster() -> None:
    cluster = EmbeddedCluster()
    with cluster:
        assert len(cluster.nodes) == 3
        assert all(host == "127.0.0.1" for host, _ in cluster.nodes)
        for host, port in cluster.nodes:
            node = redis.Redis(host=host, port=port, decode_responses=True)
            info = node.execute_command("CLUSTER", "INFO")
            assert "cluster_state:ok" in info
            node.close()

        rc = cluster.client(decode_responses=True)
        assert rc.eval(INCR_BOTH, 2, "{a}x", "{a}y") == [1, 1]
        rc.close()
        via_url = open_url(cluster.url)
        assert via_url.get("{a}x") == b"1"
        via_url.close()

        # redis-py's cluster client refuses cross-slot EVAL itself, so ask a
        # node directly to see the server's own CROSSSLOT error.
        assert redis.cluster.key_slot(b"x") != redis.cluster.key_slot(b"y")
        host, port = cluster.nodes[0]
        node = redis.Redis(host=host, port=port)
        # redis-py maps the server's CROSSSLOT reply to ClusterCrossSlotError.
        with pytest.raises(redis.exceptions.ClusterCrossSlotError) as err:
            node.eval(INCR_BOTH, 2, "x", "y")
        assert isinstance(err.value, redis.ResponseError)
        assert "same slot" in str(err.value)
        node.close()
        pids = cluster.pids
    assert all(_pid_gone(pid) for pid in pids)
