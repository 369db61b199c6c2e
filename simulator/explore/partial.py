"""A request painted by hand changes one client's decisions: only that client is decided again.

A per-client limiter (``per_client`` in the registry: every key of a decision is under the
client's own hash tag) decides each client on its own keys, so a request added to one client
changes that client's decisions and no other's. When the run before the painting is in the
runner's cache (the same settings, the requests added by hand but the last few), only the
clients those last requests went to are decided again - each with the random generator and run
id it has in the run of them all, on a fresh fake server, by the real script - and their rows
are put in among the others' as one run of them all orders them
(:func:`simulator.explore.job.merged`, as the engine's shards are put together). A trace, a
real server, a painting that touches every client or a client that reacts to its answers (a
polite one: its retries and the requests added to it share a counter, and at one instant they
may go in another order alone than among all): a run of them all, as before. Each client's rows
are then those a run of them all makes; two clients' rows at one instant may come in another
order, as the shards' do (nothing the explorer shows depends on it: its rows are one client's).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from simulator.backends.specs import resolve_spec
from simulator.engine.clients import reacts
from simulator.explore.settings import Settings

__all__ = ["Partial", "partial_of", "LOOK_BACK"]

#: How many of the last requests added by hand an earlier run may lack.
LOOK_BACK = 4


@dataclass(frozen=True)
class Partial:
    """An algorithm's run made of an earlier one: that run's cache key, the clients to decide
    again, and the positions of their specs among the traffic's clients."""

    key: Hashable
    names: tuple[str, ...]
    only: tuple[int, ...]


def partial_of(
    settings: Settings,
    algorithm: str,
    key_of: Callable[[Settings], Hashable],
    cached: Callable[[Hashable], bool],
) -> Partial | None:
    """How ``algorithm``'s run of ``settings`` can be made from an earlier run that ``cached``
    holds (``key_of`` gives a run's cache key), or None when it is to run whole."""
    cls = settings.policies[algorithm].algorithm
    if settings.trace is not None or not cls.per_client:
        return None
    if not resolve_spec(settings.backend).virtual_time:
        return None
    added, specs = settings.traffic.added, settings.traffic.clients()
    everyone = {spec.name for spec in specs}
    for k in range(len(added) - 1, max(-1, len(added) - 1 - LOOK_BACK), -1):
        names = tuple(dict.fromkeys(client for client, _, _ in added[k:]))
        if everyone <= set(names):
            return None  # every client again (and more so further back): a run of them all
        if any(reacts(spec) for spec in specs if spec.name in names):
            # A client that reacts to its answers shares its counter with the requests added
            # to it; at one instant the two may go in another order alone than among all.
            return None
        key = key_of(replace(settings, traffic=replace(settings.traffic, added=added[:k])))
        if cached(key):
            return Partial(key, names, tuple(i for i, s in enumerate(specs) if s.name in names))
    return None
