"""The one-second polls of :mod:`kernel_polls`: a message whose wake-up was missed is still read."""

from __future__ import annotations

import asyncio
from queue import Empty

import pytest
import zmq
from kernel_polls import _sliced


class _Socket:
    """A socket whose poll never wakes; ``queued`` says what ``ZMQ_EVENTS`` says."""

    def __init__(self, queued: bool) -> None:
        self.queued, self.polls = queued, 0

    async def poll(self, timeout_ms: int) -> int:
        self.polls += 1
        await asyncio.sleep(0)
        return 0

    def get(self, option: int) -> int:
        assert option == zmq.EVENTS
        return zmq.POLLIN if self.queued else 0


class _Channel:
    def __init__(self, queued: bool) -> None:
        self.socket = _Socket(queued)

    async def _recv(self) -> dict:
        return {"msg_type": "execute_reply"}


def test_a_reply_in_the_socket_is_read_though_the_poll_missed_it():
    channel = _Channel(queued=True)
    assert asyncio.run(_sliced(channel)(timeout=600)) == {"msg_type": "execute_reply"}
    assert channel.socket.polls == 1  # at the first look, not at the timeout


def test_nothing_in_the_socket_is_empty_once_the_timeout_is_over():
    channel = _Channel(queued=False)
    with pytest.raises(Empty):
        asyncio.run(_sliced(channel)(timeout=0.01))
