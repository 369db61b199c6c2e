"""Server URLs: what ``--backend`` and ``--backend-url`` accept, checked before a run starts.

``redis://[:PASSWORD@]HOST:PORT/DB`` names one database of one server, and
``redis+cluster://[:PASSWORD@]HOST:PORT`` any node of a cluster. A URL that names no server the
program can use (no host, a port or database that is not a number, a cluster URL for a server whose
cluster mode is off) is bad input: :class:`BackendSpecError`, a
:class:`~simulator.scenario.ConfigError`, so the command line answers with one line and exit
status 2. A server that cannot be reached is not bad input; that error is redis-py's, and the
backend turns it into a ``BackendError``. Messages show a URL through :func:`redact`, never its
password.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from simulator.scenario import ConfigError

__all__ = ["BackendSpecError", "redact", "open_url"]


class BackendSpecError(ConfigError):
    """A server URL that names no server the program can use: malformed, or a cluster URL for a
    server that is not a cluster. Bad input, not a failure of the server."""


def redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``, to show in messages."""
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
