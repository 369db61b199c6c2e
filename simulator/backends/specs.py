"""Backend specs: the one list of what ``--backend`` accepts, and the backend each one builds.

``fakeredis`` (the default), ``valkey`` and ``cluster`` (servers the program starts and stops),
``redis://HOST:PORT/DB`` and ``redis+cluster://HOST:PORT`` (servers somebody else runs). The CLI's
parser and help, :func:`make_backend` and the ``memory`` command all read :data:`BACKEND_SPECS`.
A spec that names no usable server is bad input: :class:`BackendSpecError`, before any run.

A spec is read once, at the edge, into a :class:`BackendSpec` that says what it is: whether it
runs on virtual time (the fake server) and whether the program starts the server itself (fake,
``valkey``, ``cluster``) or connects to one somebody else runs, where other programs keep their
data (:attr:`BackendSpec.foreign`). The code asks those properties, never the spec's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from simulator.backends.base import _SERVER_ERRORS, Backend, BackendError
from simulator.backends.cluster import ClusterBackend
from simulator.backends.fake import FakeRedisBackend
from simulator.backends.server import RedisBackend, no_retry
from simulator.checks import ConfigError

__all__ = [
    "BACKEND_SPECS",
    "BackendSpec",
    "BackendSpecError",
    "make_backend",
    "open_url",
    "redact",
    "is_spec",
    "resolve_spec",
]

#: What ``--backend`` accepts.
BACKEND_SPECS = (
    "fakeredis",
    "valkey",
    "cluster",
    "redis://HOST:PORT/DB",
    "redis+cluster://HOST:PORT",
)


def is_spec(text: str) -> bool:
    """True when ``text`` has the form of a backend spec (a URL is checked when it is opened)."""
    return text in BACKEND_SPECS[:3] or text.startswith(("redis://", "redis+cluster://"))


#: The kinds of spec: the fake server, the servers the program starts, a URL of somebody else's.
_KINDS = ("fakeredis", "valkey", "cluster", "url", "cluster-url")


@dataclass(frozen=True)
class BackendSpec:
    """One ``--backend``, read once: its ``text`` (as given) and its ``kind`` (see _KINDS).
    ``str()`` shows it with any password as ``***``."""

    text: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"backend spec kind {self.kind!r}: expected one of {_KINDS}")

    @property
    def virtual_time(self) -> bool:
        """True for the fake server, whose key expiry follows simulated time."""
        return self.kind == "fakeredis"

    @property
    def started_here(self) -> bool:
        """True when the program starts (and stops) the server itself: nobody else's data."""
        return self.kind in ("fakeredis", "valkey", "cluster")

    @property
    def foreign(self) -> bool:
        """True for a server the program did not start: someone else's, with their data."""
        return not self.started_here

    def __str__(self) -> str:
        return redact(self.text)


def resolve_spec(spec: str | BackendSpec) -> BackendSpec:
    """``spec`` as a :class:`BackendSpec`; :class:`BackendSpecError` when it is none of
    :data:`BACKEND_SPECS` (a URL's host and port are checked when it is opened)."""
    if isinstance(spec, BackendSpec):
        return spec
    if spec in BACKEND_SPECS[:3]:
        return BackendSpec(spec, spec)
    if spec.startswith("redis://"):
        return BackendSpec(spec, "url")
    if spec.startswith("redis+cluster://"):
        return BackendSpec(spec, "cluster-url")
    raise BackendSpecError(
        f"backend: unknown backend {redact(spec)!r} (known: {', '.join(BACKEND_SPECS)})"
    )


class BackendSpecError(ConfigError):
    """A server URL that names no server the program can use: malformed, or a cluster URL for a
    server that is not a cluster. Bad input, not a failure of the server."""


def redact(url: str | BackendSpec) -> str:
    """``url`` with its password (if any) replaced by ``***``, to show in messages."""
    url = url.text if isinstance(url, BackendSpec) else url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _where(url: str) -> tuple[str, int, str | None, str | None]:
    """Host, port (6379 if none), user name and password of ``url``, checked."""
    parts, shown = urlsplit(url), redact(url)
    if not parts.hostname:
        raise BackendSpecError(f"{shown}: no host; expected {parts.scheme}://HOST:PORT")
    try:
        port = parts.port
    except ValueError:
        port_text = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise BackendSpecError(
            f"{shown}: the port {port_text!r} is not a number from 1 to 65535"
        ) from None
    if port == 0:
        raise BackendSpecError(f"{shown}: the port 0 is not a number from 1 to 65535")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return parts.hostname, port or 6379, user, password


def _cluster_mode_off(host: str, port: int, user: str | None, password: str | None) -> bool:
    """True when the server at host:port answers and says cluster mode is off."""
    probe = redis.Redis(
        host=host,
        port=port,
        username=user,
        password=password,
        socket_connect_timeout=5,
        socket_timeout=5,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        return str(probe.info("cluster").get("cluster_enabled", "")) == "0"
    except (redis.RedisError, OSError):
        return False  # not reachable (or not answering): the caller's own error says so
    finally:
        probe.close()


def open_url(url: str, **kw: Any) -> redis.Redis | RedisCluster:
    """A client for "redis://[:PASSWORD@]HOST:PORT/DB" or "redis+cluster://[:PASSWORD@]HOST:PORT".

    A malformed URL, or a cluster URL for a server that is not a cluster, raises
    :class:`BackendSpecError` naming it; a server that cannot be reached raises what redis-py
    raises.
    """
    parts, shown = urlsplit(url), redact(url)
    if parts.scheme not in ("redis", "redis+cluster"):
        raise BackendSpecError(
            f"unsupported server URL {shown!r}: expected redis://HOST:PORT/DB "
            "or redis+cluster://HOST:PORT"
        )
    host, port, user, password = _where(url)
    db = parts.path.strip("/") or "0"
    if not db.isdigit() or not db.isascii():
        raise BackendSpecError(
            f"{shown}: the database {db!r} is not a number (redis://HOST:PORT/DB)"
        )
    if parts.scheme == "redis":
        try:
            return redis.Redis.from_url(url, **kw)
        except ValueError as exc:  # a query parameter redis-py cannot read
            raise BackendSpecError(f"{shown}: {exc}") from None
    if db != "0" or parts.query:
        raise BackendSpecError(f"{shown}: a cluster URL takes no database and no options")
    try:
        return RedisCluster(host=host, port=port, username=user, password=password, **kw)
    except RedisClusterException:
        if _cluster_mode_off(host, port, user, password):
            raise BackendSpecError(
                f"{shown}: the server at {host}:{port} is not a cluster (cluster mode is off); "
                f"use redis://{host}:{port}/0"
            ) from None
        raise


def make_backend(spec: str | BackendSpec = "fakeredis") -> Backend:
    """Build a backend from its spec on the command line (see :data:`BACKEND_SPECS`).

    ``valkey`` and ``cluster`` start an embedded server (127.0.0.1, a fresh folder) that the
    backend owns and stops in :meth:`Backend.close`; a URL connects to a running server. A spec
    that names no usable server raises :class:`BackendSpecError`, one that cannot be reached
    :class:`BackendError`; both messages name the spec (its password shown as ``***``).
    """
    from simulator.backends.embedded import EmbeddedValkey
    from simulator.backends.embedded_cluster import EmbeddedCluster

    resolved = resolve_spec(spec)
    kind, text, shown = resolved.kind, resolved.text, str(resolved)
    if kind == "fakeredis":
        return FakeRedisBackend()
    try:
        if kind == "valkey":
            server = EmbeddedValkey().start()
            try:
                return RedisBackend(server.client(retry=no_retry()), "valkey", server)
            except BaseException:
                server.stop()
                raise
        if kind == "cluster":
            cluster = EmbeddedCluster().start()
            try:
                return ClusterBackend(cluster.client(retry=no_retry()), "cluster", cluster)
            except BaseException:
                cluster.stop()
                raise
        if kind == "url":
            return RedisBackend(open_url(text, retry=no_retry()), shown)
        return ClusterBackend(open_url(text, retry=no_retry()), shown)
    except BackendSpecError as exc:
        raise BackendSpecError(f"backend {exc}") from None
    except (RuntimeError, *_SERVER_ERRORS) as exc:
        if isinstance(exc, BackendError):
            raise
        raise BackendError(f"backend {shown}: {exc}") from exc
