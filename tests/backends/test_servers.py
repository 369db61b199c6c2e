"""Tests for the real Valkey server and cluster the simulator starts itself."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from simulator.backends.embedded import EmbeddedValkey
from simulator.backends.embedded_cluster import EmbeddedCluster
from simulator.backends.process import valkey_binary
from simulator.backends.specs import open_url

INCR_BOTH = "return {redis.call('INCR', KEYS[1]), redis.call('INCR', KEYS[2])}"
ROOT = Path(__file__).resolve().parents[2]
# A program that starts a server, says where its folder is, and holds it until stdin closes.
HOLD = (
    "import sys; from simulator.backends.embedded import EmbeddedValkey; "
    "s = EmbeddedValkey().start(); print(s.dir, flush=True); sys.stdin.read()"
)

# A refused client is refused at once: redis-py's default retries an AuthenticationError (a
# ConnectionError) ten times with back-off, about 4 s a call.
NO_RETRY = Retry(NoBackoff(), 0)

pytestmark = pytest.mark.server


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
        assert server.url == f"redis://:{server.password}@127.0.0.1:{server.port}/0"
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


def _refused(client: redis.Redis | RedisCluster) -> None:
    """The client, built without the password, may not read or write anything."""
    with pytest.raises(redis.AuthenticationError, match="(?i)auth"):
        client.get("k")
    with pytest.raises(redis.AuthenticationError, match="(?i)auth"):
        client.set("k", "changed")


def test_server_needs_its_password_and_talks_through_a_private_socket() -> None:
    with EmbeddedValkey() as server:
        assert len(server.password) >= 32
        assert EmbeddedValkey().password != server.password  # a fresh one per server
        mine = server.client()
        assert mine.set("k", "v")
        where = mine.connection_pool.connection_kwargs
        assert server.socket is not None and where["path"] == str(server.socket)
        assert server.dir is not None and stat.S_IMODE(server.dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(server.socket.stat().st_mode) == 0o700
        for conf in server.dir.glob("*.conf"):
            assert stat.S_IMODE(conf.stat().st_mode) == 0o600
        for stranger in (
            redis.Redis(host=server.host, port=server.port, retry=NO_RETRY),  # over TCP
            redis.Redis(unix_socket_path=str(server.socket), retry=NO_RETRY),  # the socket
            redis.Redis(host=server.host, port=server.port, password="guess", retry=NO_RETRY),
        ):
            if stranger.connection_pool.connection_kwargs.get("password"):
                with pytest.raises(redis.AuthenticationError):
                    stranger.get("k")
            else:
                _refused(stranger)
            stranger.close()
        assert mine.get("k") == b"v"
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
        assert server.password.encode() not in cmdline  # not shown to other users by ps
        via_url = open_url(server.url)
        assert via_url.get("k") == b"v"
        via_url.close()
        mine.close()


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
        assert cluster.url == f"redis+cluster://:{cluster.password}@127.0.0.1:{cluster.nodes[0][1]}"
        for host, port in cluster.nodes:
            node = redis.Redis(
                host=host, port=port, password=cluster.password, decode_responses=True
            )
            info = node.execute_command("CLUSTER", "INFO")
            assert "cluster_state:ok" in info
            node.close()
            _refused(redis.Redis(host=host, port=port, retry=NO_RETRY))  # every node wants one
        with pytest.raises(redis.exceptions.RedisClusterException, match="(?i)auth"):
            RedisCluster(host="127.0.0.1", port=cluster.nodes[0][1])

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
        node = redis.Redis(host=host, port=port, password=cluster.password)
        # redis-py maps the server's CROSSSLOT reply to ClusterCrossSlotError.
        with pytest.raises(redis.exceptions.ClusterCrossSlotError) as err:
            node.eval(INCR_BOTH, 2, "x", "y")
        assert isinstance(err.value, redis.ResponseError)
        assert "same slot" in str(err.value)
        node.close()
        pids = cluster.pids
    assert all(_pid_gone(pid) for pid in pids)


def _hold_a_server(tmpdir: Path, procs: list) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(proc)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_run_leaves_a_folder_that_the_next_start_removes(monkeypatch) -> None:
    tmpdir = Path(tempfile.mkdtemp(prefix="svt-"))  # short: a unix socket path has a limit
    procs: list[subprocess.Popen[str]] = []
    try:
        dead, dead_dir = _hold_a_server(tmpdir, procs)
        dead.kill()  # SIGKILL: no atexit, no cleanup; the server dies with it
        dead.wait()
        assert dead_dir.is_dir(), "nothing to clean up: the test proves nothing"
        live, live_dir = _hold_a_server(tmpdir, procs)
        root = dead_dir.parent
        assert live_dir.parent == root and root.parent == tmpdir
        (root / "not-a-run").mkdir()  # not named <pid>-...: not the program's to remove
        (tmpdir / "sim-valkey-lookalike").mkdir()  # outside the owned folder
        monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
        with EmbeddedValkey() as server:
            assert server.dir is not None and server.dir.parent == root
            assert server.dir.name.startswith(f"{os.getpid()}-")
            assert not dead_dir.exists()  # the dead run's folder is gone
            assert live_dir.is_dir()  # the live run's is kept
            assert (root / "not-a-run").is_dir() and (tmpdir / "sim-valkey-lookalike").is_dir()
        assert live.stdin is not None
        live.stdin.close()  # the live run ends normally and removes its own folder
        assert live.wait(timeout=60) == 0
        assert not live_dir.exists()
        assert sorted(p.name for p in root.iterdir()) == ["not-a-run"]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        shutil.rmtree(tmpdir, ignore_errors=True)
