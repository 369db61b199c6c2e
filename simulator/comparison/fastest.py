"""``compare(..., backend="auto")``: the backend ``python -m simulator compare`` would choose.

The command line picks, when ``--backend`` is not named, the fastest server that gives the fake
server's decisions (:func:`simulator.backends.choice.default_backend`): the embedded Valkey
for algorithms that take their time from ``now_ms`` in ARGV, the fake server otherwise. A
notebook or a script asks for the same with ``backend="auto"``: :func:`on_fastest` makes the
choice, starts the chosen Valkey (the fake server in its place should it not start), counts
the keys Valkey expired on its own clock while the run used them and, when any did, decides
the whole run again on the fake server, as the command does. ``scorecard.attrs["backend"]``
holds the line saying which and why (the command prints it first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from simulator.backends import BackendError
from simulator.backends.choice import (
    DEFAULT_ENV,
    decided_again,
    fallen_back,
    for_command,
    shortest_window_ms,
    spec_of,
    start_cause,
)
from simulator.backends.embedded import expiry_counted_when_read
from simulator.backends.specs import make_backend
from simulator.comparison.spec import Candidate

__all__ = ["on_fastest"]

Result = tuple[pd.DataFrame, pd.DataFrame]
#: One run of the comparison on a backend (None: the fake server) with these listeners.
Run = Callable[[Any, Any], Result]


def on_fastest(run: Run, everyone: Sequence[Candidate], listeners: Any, spread: bool) -> Result:
    """``run`` on the fastest backend that decides as the fake server does, decided again on the
    fake server when the chosen Valkey expired a key on its own clock during the run.
    ``spread``: the run's tasks go to Dask workers, each starting a server of its own from the
    spec (one is started here first: one that does not start gives way to the fake server)."""
    choice = for_command(
        [c.policy.algorithm for c in everyone],
        window_ms=min(shortest_window_ms(c.window_ms, c.params) for c in everyone),
    )
    spec = spec_of(choice)
    expired = [0]
    counting = replace(listeners, on_task=_counted(listeners.on_task, expired))
    if spec.virtual_time:
        card, clients = run(None, listeners)
    else:
        try:
            backend = make_backend(spec)
        except BackendError as exc:
            if choice is None:  # named by the environment: a failure, as --backend's is
                raise
            choice = fallen_back(choice, start_cause(exc))
            card, clients = run(None, listeners)
        else:
            if spread:  # it starts: each task starts one of its own from the spec
                backend.close()
                card, clients = run(spec, counting)
            else:
                with backend:
                    expiry_counted_when_read(backend)
                    card, clients = run(backend, counting)
    if choice is not None and expired[0] and not choice.spec.virtual_time:
        choice = decided_again(choice, expired[0])
        card, clients = run(None, listeners)
    named = f"backend {spec} (named: {DEFAULT_ENV}={spec})"
    card.attrs["backend"] = choice.line if choice is not None else named
    return card, clients


def _counted(on_task: Callable[[Any], None] | None, expired: list[int]) -> Callable[[Any], None]:
    """``on_task`` that first adds the keys the part's server expired on its own clock."""

    def heard(part: Any) -> None:
        expired[0] += part.server_keys_expired
        if on_task is not None:
            on_task(part)

    return heard
