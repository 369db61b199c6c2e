"""Where the scripts run: an embedded fake server on the virtual clock, or a real one.

A backend runs a :class:`~simulator.calls.Script` with its keys and arguments and returns the
raw reply. The default, :class:`FakeRedisBackend` (:mod:`~simulator.backends.fake`), is fakeredis
with Lua whose clock follows the simulation (:mod:`~simulator.backends.fakeserver`), so key expiry
happens in simulated milliseconds and a simulated hour takes no wall time. Real servers run the
very same scripts unchanged: :class:`RedisBackend` (:mod:`~simulator.backends.server`) for one
Redis/Valkey server, :class:`ClusterBackend` (:mod:`~simulator.backends.cluster`) for a cluster,
where all keys of one call share a hash tag and so a slot. :mod:`~simulator.backends.embedded`
starts real servers the program owns; :func:`make_backend` (:mod:`~simulator.backends.specs`)
builds a backend from its spec on the command line, and a backend that started its own server
stops it in :meth:`Backend.close`.
"""

from simulator.backends.base import NO_REPLY, Backend, BackendError, ScriptError, ScriptLimitError
from simulator.backends.cluster import ClusterBackend
from simulator.backends.fake import FakeRedisBackend
from simulator.backends.server import RedisBackend
from simulator.backends.specs import BACKEND_SPECS, BackendSpecError, make_backend

__all__ = [
    "Backend",
    "FakeRedisBackend",
    "RedisBackend",
    "ClusterBackend",
    "BackendError",
    "NO_REPLY",
    "ScriptError",
    "ScriptLimitError",
    "BackendSpecError",
    "make_backend",
    "BACKEND_SPECS",
]
