"""A server the program did not start is someone else's: what a run may do there.

Other programs keep their data on such a server, and every client shares its one thread. So,
before a run touches it:

* its eviction policy is read (``INFO memory``): with ``maxmemory`` set and an ``allkeys-*``
  policy, any key of the server may be evicted to make room for the run's; with a
  ``volatile-*`` policy, any key with a TTL (``INFO keyspace``: ``expires``). Such a server is
  refused unless :data:`EVICTION_FLAG` is given.
* a user's script is user code on someone else's server: the guard stops mistakes, not a script
  written to get round it, and a script that loops holds the server for every client (one that
  wrote first cannot be killed at all, only the server shut down). It runs there only with
  :data:`SCRIPT_FLAG`, and only after the same script ran over the same requests (the first
  :data:`REHEARSAL_REQUESTS`) on the fake server, within the time and memory budgets of
  :func:`~simulator.backends.fake.script_limits`: a loop, an error or a write outside its keys
  stops the run there, before the server is touched. Then its calls go to the server one at a
  time, each within the time budget, until they have shown they answer in time
  (:meth:`~simulator.backends.server.RedisBackend.hold_back`).

The budgets themselves hold on the fake server only: a real server runs a script for as long as
it runs (its busy limit only lets other clients see BUSY), in as much memory as it takes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from simulator.algorithms.base import Limiter
from simulator.backends import Backend, BackendError, FakeRedisBackend, ScriptError
from simulator.backends.base import _SERVER_ERRORS
from simulator.backends.fake import script_limits
from simulator.checks import ConfigError
from simulator.policy import lookup
from simulator.userscripts.limiter import UserScript, UserScriptError, user_failure

__all__ = [
    "SCRIPT_FLAG",
    "EVICTION_FLAG",
    "REHEARSAL_REQUESTS",
    "is_foreign",
    "eviction_risk",
    "check_foreign",
    "remove_keys",
    "removed_afterwards",
]

#: The flag that lets a user's script run on a server the program did not start.
SCRIPT_FLAG = "--run-script-on-foreign-server"
#: The flag that lets a run go on a server whose eviction policy could evict others' keys.
EVICTION_FLAG = "--allow-eviction"
#: Requests of the run rehearsed on the fake server before a user's script meets the server.
REHEARSAL_REQUESTS = 10_000

#: A rehearsal: runs one algorithm's share of the run on the given fake server.
Rehearsal = Callable[[str, Backend], object]


def is_foreign(backend: Backend) -> bool:
    """True for a real server the program did not start (somebody else's, with their data)."""
    return not backend.virtual_time and backend.owned is None


def _servers(backend: Backend) -> list[tuple[str, Any]]:
    """(where, client) of every server of ``backend``: one, or each primary of a cluster."""
    if backend.clustered:
        nodes = backend.client.get_primaries()
        return [(n.name, backend.client.get_redis_connection(n)) for n in nodes]
    return [(backend.name, backend.client)]


def eviction_risk(backend: Backend) -> str | None:
    """Why others' keys on ``backend`` could be evicted to make room for the run's, or None."""
    try:
        for where, client in _servers(backend):
            memory = client.info("memory")
            most, policy = int(memory.get("maxmemory", 0)), str(memory.get("maxmemory_policy"))
            if most <= 0 or policy == "noeviction":
                continue
            if policy.startswith("allkeys-"):
                return (
                    f"server {where} has maxmemory {most:,} bytes and maxmemory-policy {policy}: "
                    "to make room for this run's keys it may evict any other key of the server"
                )
            if policy.startswith("volatile-"):
                keyspace = client.info("keyspace")
                ttl = sum(int(db.get("expires", 0)) for db in keyspace.values())
                if ttl:
                    return (
                        f"server {where} has maxmemory {most:,} bytes and maxmemory-policy "
                        f"{policy}, and {ttl:,} keys with a TTL: to make room for this run's "
                        "keys it may evict them"
                    )
    except _SERVER_ERRORS as exc:
        raise BackendError(f"backend {backend.name}: cannot read its memory policy: {exc}") from exc
    return None


def _users_scripts(algorithms: Iterable[str | type[Limiter]]) -> list[type[UserScript]]:
    """The users' scripts among ``algorithms`` (each a registered name, looked up once here,
    or the class)."""
    classes = [lookup(a) for a in algorithms]
    return [cls for cls in classes if issubclass(cls, UserScript)]


def check_foreign(
    backend: Backend,
    algorithms: Iterable[str | type[Limiter]],
    options: Any,
    rehearse: Rehearsal,
) -> None:
    """Refuse (:class:`ConfigError`, exit status 2) what would endanger a server the program
    did not start, before the run touches it; rehearse its users' scripts on the fake server.

    ``algorithms`` are the run's: registered names or Limiter classes. ``options`` carries
    ``run_script_on_foreign_server`` and ``allow_eviction`` (the flags). Nothing happens on the
    fake server or on a server the program started.
    """
    if not is_foreign(backend):
        return
    if not getattr(options, "allow_eviction", False):
        risk = eviction_risk(backend)
        if risk is not None:
            raise ConfigError(
                f"backend {backend.name}: a server the program did not start: {risk}. Use a "
                f"server without eviction (maxmemory-policy noeviction), or pass {EVICTION_FLAG} "
                "to run on it all the same"
            )
    scripts = _users_scripts(algorithms)
    if not scripts:
        return
    if not getattr(options, "run_script_on_foreign_server", False):
        paths = ", ".join(str(cls.path) for cls in scripts)
        raise ConfigError(
            f"backend {backend.name}: a server the program did not start, where other programs "
            f"keep their data: your script ({paths}) does not run there by default. The guard "
            "stops mistakes, not a script written to get round it, and a script that loops "
            "holds the server for every client (one that wrote first, until the server is shut "
            "down). Run it on fakeredis or --backend valkey (a server the program starts), or "
            f"pass {SCRIPT_FLAG} to take that risk (the script then first runs over the same "
            "requests on the fake server, within its time and memory budgets)"
        )
    for cls in scripts:
        fake = FakeRedisBackend()
        try:
            rehearse(cls.name, fake)
        except (ScriptError, ConfigError) as exc:
            failed = user_failure(exc) if isinstance(exc, ScriptError) else None
            said = str(failed or exc)
            raise UserScriptError(
                f"{said} (in the rehearsal on the fake server, before the server at "
                f"{backend.name} was touched: nothing ran there)"
            ) from None
        finally:
            fake.close()
    time_s, _ = script_limits()
    hold_back = getattr(backend, "hold_back", None)
    if hold_back is not None:
        hold_back([f"user:{cls.name}" for cls in scripts], time_s)


def remove_keys(backend: Backend, keys: Iterable[str], kept: Iterable[str] = ()) -> int:
    """UNLINK the run's ``keys`` on a server the program did not start, except ``kept`` (keys
    that were there before the run); how many went. Nothing is done anywhere else."""
    if not is_foreign(backend):
        return 0
    keep = set(kept)
    mine = [k for k in dict.fromkeys(keys) if k not in keep]
    gone = 0
    try:
        for key in mine:  # one at a time: a cluster's keys of one call share only a slot
            gone += int(backend.client.unlink(key))
    except _SERVER_ERRORS as exc:
        raise BackendError(
            f"backend {backend.name}: could not remove this run's keys ({gone} of "
            f"{len(mine)} removed): {exc}"
        ) from exc
    return gone


@contextlib.contextmanager
def removed_afterwards(
    backend: Backend, keys: Callable[[], list[str]], reuse: bool
) -> Iterator[None]:
    """On a server the program did not start, the run's ``keys`` are removed when the block
    ends, however it ends (those that existed before it, with ``reuse``, are left)."""
    if not is_foreign(backend):
        yield
        return
    wanted = keys()
    before: list[str] = []
    if reuse:
        try:
            hits = backend.client.pipeline(transaction=False)
            for key in wanted:
                hits.exists(key)
            before = [k for k, n in zip(wanted, hits.execute(), strict=True) if n]
        except _SERVER_ERRORS as exc:
            raise BackendError(f"backend {backend.name} failed: {exc}") from exc
    try:
        yield
    finally:
        remove_keys(backend, wanted, before)
