"""A user's script's rehearsal over a trace's first requests, on the fake server.

Before a user's script meets a server the program did not start
(:func:`simulator.userscripts.foreign.check_foreign`), it runs over the same requests on the
fake server, within its time and memory budgets. The rehearsal is a replay, so it is built here,
above both the scripts' room and the replay's, and handed down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from simulator.backends import Backend
from simulator.playback.run import replay
from simulator.userscripts.foreign import REHEARSAL_REQUESTS, Rehearsal

__all__ = ["first_requests", "rehearse_requests"]


def rehearse_requests(
    requests: Sequence[tuple[str, int, int]],
    limit: int,
    window_ms: int,
    params: Mapping[str, float] | None = None,
) -> Rehearsal:
    """A rehearsal that replays ``requests`` ``(client, t_ms, cost)`` (the first
    :data:`REHEARSAL_REQUESTS` of them) through an algorithm on the fake server."""
    first = list(requests[:REHEARSAL_REQUESTS])
    trace = pd.DataFrame(first, columns=["client", "t_ms", "cost"])

    def run(algorithm: str, fake: Backend) -> object:
        return replay(trace, algorithm, limit, window_ms, fake, params=params)

    return run


def first_requests(parts: Iterable[Any]) -> list[tuple[str, int, int]]:
    """The first :data:`REHEARSAL_REQUESTS` requests ``(client, t_ms, cost)`` of a trace read in
    parts (each with ``clients``, ``t_ms`` and ``costs``, None when every request costs 1)."""
    first: list[tuple[str, int, int]] = []
    for part in parts:
        costs = part.costs or [1] * len(part.t_ms)
        first += zip(part.clients, part.t_ms, costs, strict=True)
        if len(first) >= REHEARSAL_REQUESTS:
            break
    return first[:REHEARSAL_REQUESTS]
