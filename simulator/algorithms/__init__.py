"""The algorithms: one module each around one Lua script, and ONE registry of them.

:data:`ALGORITHMS` maps a name to its :class:`~simulator.algorithms.base.Limiter` subclass, which
carries everything that algorithm is (keys, arguments, reply, reference, bulk kernel, label,
colour, whether it follows the server's clock). Everything else is read from here: the scenario's
and the CLI's choices, the scripts a backend loads, the charts' palette and labels, the studies'
lists and the parametrised tests. :data:`REFERENCES` and :data:`BULK` are live views of it.

Adding an algorithm: a ``.lua`` file under ``algorithms/lua/``, a module here with its Limiter
subclass, and one line below (see CONTRIBUTING.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from simulator.algorithms.base import BulkKernel, Limiter, Param, Reference
from simulator.algorithms.echomq import EchoMQ, EchoMQRef, echomq_keys
from simulator.algorithms.fixed_window import FixedWindow, FixedWindowRef
from simulator.algorithms.gcra import GCRA, GCRARef
from simulator.algorithms.increx import IncrexFirstHit, IncrexFirstHitRef, IncrexGrid, IncrexGridRef
from simulator.algorithms.multi_policy import MultiPolicy, MultiPolicyRef
from simulator.algorithms.sliding_counter import SlidingCounter, SlidingCounterRef
from simulator.algorithms.sliding_counter_all import SlidingCounterAll, SlidingCounterAllRef
from simulator.algorithms.sliding_log import SlidingLog, SlidingLogRef
from simulator.algorithms.token_bucket import TokenBucket, TokenBucketRef

__all__ = [
    "ALGORITHMS",
    "REFERENCES",
    "BULK",
    "Limiter",
    "Reference",
    "Param",
    "FixedWindow",
    "EchoMQ",
    "SlidingLog",
    "SlidingCounter",
    "TokenBucket",
    "GCRA",
    "SlidingCounterAll",
    "IncrexFirstHit",
    "IncrexGrid",
    "MultiPolicy",
    "FixedWindowRef",
    "EchoMQRef",
    "SlidingLogRef",
    "SlidingCounterRef",
    "TokenBucketRef",
    "GCRARef",
    "SlidingCounterAllRef",
    "IncrexFirstHitRef",
    "IncrexGridRef",
    "MultiPolicyRef",
    "BulkKernel",
    "echomq_keys",
    "script_names",
    "command_names",
]

#: Every algorithm, in the order charts and tables show them.
ALGORITHMS: dict[str, type[Limiter]] = {
    cls.name: cls
    for cls in (
        *(FixedWindow, EchoMQ, SlidingLog, SlidingCounter, TokenBucket, GCRA),
        *(SlidingCounterAll, IncrexFirstHit, IncrexGrid, MultiPolicy),
    )
}


class _View(Mapping[str, Any]):
    """One attribute of every registered algorithm, by name (follows the registry as it is)."""

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute

    def __getitem__(self, name: str) -> Any:
        value = getattr(ALGORITHMS[name], self._attribute)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (n for n, cls in ALGORITHMS.items() if getattr(cls, self._attribute) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: name -> the pure-Python reference class.
REFERENCES: Mapping[str, type[Reference]] = _View("reference")
#: name -> the vectorised kernel (algorithms that have one).
BULK: Mapping[str, BulkKernel] = _View("bulk")


def script_names() -> tuple[str, ...]:
    """Every script the registered algorithms run, each once."""
    return tuple(dict.fromkeys(s for cls in ALGORITHMS.values() for s in cls.scripts))


def command_names(algorithm: str) -> tuple[str, ...]:
    """The server commands an algorithm's calls are, where they are not scripts (INCREX)."""
    return ALGORITHMS[algorithm].commands
