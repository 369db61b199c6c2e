"""The fake server without the wire: the explorer's name for the fake server's own script path.

Every :class:`FakeRedisBackend` now hands each ``EVALSHA``, and the server's own command a
limiter may send instead (``INCREX``), straight to fakeredis's command execution
(:class:`~simulator.backends.fakeserver.DirectCalls`: same replies, same errors, no RESP on either
side); everything else (loading scripts, reading keys) goes through redis-py. This name stays
for the code that asks for that path explicitly; fakeredis's internals are touched in
:mod:`simulator.backends.fakeserver` alone.
"""

from __future__ import annotations

from simulator.backends.fake import FakeRedisBackend

__all__ = ["DirectFakeBackend"]


class DirectFakeBackend(FakeRedisBackend):
    """:class:`FakeRedisBackend`, whose script calls skip redis-py and RESP (same replies)."""
