"""nbclient's waits on the kernel's sockets, looked at again every second.

jupyter_client's asyncio channels wait for a message with one ``poll`` of the whole timeout
(600 s a cell here). Now and then that wait misses the socket's wake-up: the kernel idle, its
reply already in the socket, and the poll asleep until its timeout, when it looks again and
finds it - the cell "took" ten minutes and passed. It was met three times in lesson 07's slider
cell (ipywidgets' ``interactive_output``: a burst of widget messages on IOPub while the shell
reply comes), under ipykernel 7.4 and 6.31 alike. :func:`poll_each_second` splits each wait into
one-second polls and asks the socket itself (``ZMQ_EVENTS``) between them, so a missed wake-up
costs a second; the timeout is the caller's, as before.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

import zmq

__all__ = ["poll_each_second"]

STEP_S = 1.0


def poll_each_second(kernel_client: Any) -> None:
    """Makes the shell and IOPub channels of ``kernel_client`` (an async kernel client, once its
    channels are started) wait in one-second polls."""
    for channel in (kernel_client.shell_channel, kernel_client.iopub_channel):
        channel.get_msg = _sliced(channel)


def _sliced(channel: Any) -> Any:
    async def get_msg(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            step = STEP_S if left is None else max(0.0, min(STEP_S, left))
            ready = await channel.socket.poll(int(step * 1000))
            if not ready:  # the socket's own word, whatever the poll's wake-up did
                ready = channel.socket.get(zmq.EVENTS) & zmq.POLLIN
            if ready:
                return await channel._recv()
            if left is not None and left <= STEP_S:
                raise Empty

    return get_msg
