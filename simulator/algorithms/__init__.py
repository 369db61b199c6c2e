"""The algorithms: one module each around one Lua script, and ONE registry of them.

:data:`ALGORITHMS` maps a name to its :class:`~simulator.algorithms.base.Limiter` subclass, which
carries everything that algorithm is (keys, arguments, reply, reference, bulk kernel, label,
colour, whether it follows the server's clock). Everything else is read from here: the scenario's
and the CLI's choices, the scripts a backend loads, the charts' palette and labels, the studies'
lists and the parametrised tests. :data:`REFERENCES` and :data:`BULK` are live views of it.

Adding an algorithm: a ``.lua`` file under ``algorithms/lua/``, a module here with its Limiter
subclass, and one line below (see CONTRIBUTING.md). An algorithm kept outside the package (a
test's, one being tried out) registers itself the same way from a module named in the environment
variable ``SIMULATOR_ALGORITHMS`` (comma-separated module names), imported right after the
registry is made, in every process of a run.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from simulator.algorithms.base import (
    BatchTemplate,
    BulkDecider,
    BulkKernel,
    Limiter,
    Param,
    Reference,
    ServerTime,
)
from simulator.algorithms.echomq import EchoMQ, EchoMQRef, echomq_keys
from simulator.algorithms.fixed_window import FixedWindow, FixedWindowRef
from simulator.algorithms.gcra import GCRA, GCRARef
from simulator.algorithms.increx import IncrexFirstHit, IncrexFirstHitRef, IncrexGrid, IncrexGridRef
from simulator.algorithms.multi_policy import MultiPolicy, MultiPolicyRef
from simulator.algorithms.sliding_counter import SlidingCounter, SlidingCounterRef
from simulator.algorithms.sliding_counter_all import SlidingCounterAll, SlidingCounterAllRef
from simulator.algorithms.sliding_log import SlidingLog, SlidingLogRef
from simulator.algorithms.token_bucket import TokenBucket, TokenBucketRef
from simulator.checks import ConfigError

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
    "BatchTemplate",
    "BulkDecider",
    "ServerTime",
    "echomq_keys",
    "script_names",
    "command_names",
    "register",
]

#: Where the strategies of the libraries people run are adapted (``limits.moving_window``):
#: named by string, so that the registry does not import what sits above it.
LIBRARIES = "simulator.libraries"
#: Where the gateways' limiters are (``nginx``, ``traefik``...), taken on first use like the
#: libraries' so that the default list stays the built-in ten.
GATEWAYS = "simulator.algorithms.gateways"


class _Registry(dict[str, type[Limiter]]):
    """The registry's dictionary; a library strategy's name (``<library>.<strategy>``, see
    :mod:`simulator.libraries`) registers that library's adapters the first time it is asked
    for, or says in one line what to install; a gateway's name (``nginx``, see
    :mod:`simulator.algorithms.gateways`) registers that gateway's limiter."""

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or (
            _taken_on_use(self, name) and super().__contains__(name)
        )

    def __missing__(self, name: str) -> type[Limiter]:
        if _taken_on_use(self, name) and super().__contains__(name):
            return self[name]
        raise KeyError(name)


def _taken_on_use(registry: dict[str, type[Limiter]], name: object) -> bool:
    """Register what ``name`` stands for when it is a gateway's or a library strategy's."""
    gateways = importlib.import_module(GATEWAYS)
    if gateways.is_gateway(name):
        registry[name] = gateways.gateway(name)  # type: ignore[index]
        return True
    return _library_named(name)


def _library_named(name: object) -> bool:
    """Register the library ``name`` is a strategy of, if it is one; whether it was."""
    if not isinstance(name, str) or "." not in name:
        return False
    libraries = importlib.import_module(LIBRARIES)
    if name.split(".")[0] not in libraries.PREFIXES:
        return False
    libraries.register(name)
    return True


#: Every algorithm, in the order charts and tables show them.
ALGORITHMS: dict[str, type[Limiter]] = _Registry(
    (cls.name, cls)
    for cls in (
        *(FixedWindow, EchoMQ, SlidingLog, SlidingCounter, TokenBucket, GCRA),
        *(SlidingCounterAll, IncrexFirstHit, IncrexGrid, MultiPolicy),
    )
)


class _View(Mapping[str, Any]):
    """One attribute of every registered algorithm that has it, by name (follows the registry
    as it is); ``ability``: only the algorithms that offer it (a Protocol from ``base``)."""

    def __init__(self, attribute: str, ability: type | None = None) -> None:
        self._attribute, self._ability = attribute, ability

    def _offers(self, cls: type[Limiter]) -> bool:
        if self._ability is not None:
            return issubclass(cls, self._ability)
        return getattr(cls, self._attribute, None) is not None

    def __getitem__(self, name: str) -> Any:
        cls = ALGORITHMS[name]
        if not self._offers(cls):
            raise KeyError(name)
        return getattr(cls, self._attribute)

    def __iter__(self) -> Iterator[str]:
        return (n for n, cls in ALGORITHMS.items() if self._offers(cls))

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: name -> the pure-Python reference class.
REFERENCES: Mapping[str, type[Reference]] = _View("reference")
#: name -> the vectorised kernel (algorithms that are a :class:`BulkDecider`).
BULK: Mapping[str, BulkKernel] = _View("bulk", BulkDecider)


def register(cls: type[Limiter]) -> type[Limiter]:
    """Add ``cls`` to the registry under its own name (replacing one of that name); returns it.
    Everything that reads the registry sees it from then on, in this process."""
    ALGORITHMS[cls.name] = cls
    return cls


def script_names() -> tuple[str, ...]:
    """Every script the registered algorithms run, each once."""
    return tuple(dict.fromkeys(s for cls in ALGORITHMS.values() for s in cls.scripts))


def command_names(algorithm: str) -> tuple[str, ...]:
    """The server commands an algorithm's calls are, where they are not scripts (INCREX)."""
    return ALGORITHMS[algorithm].commands


def _import_named_modules() -> None:
    """Import the modules named in ``SIMULATOR_ALGORITHMS``; each adds its algorithm itself
    (``scripts.add(name, source)`` and ``register(cls)``). One that cannot be
    found is a :class:`~simulator.checks.ConfigError` naming the variable and the module; on
    the command line, one line and exit status 2."""
    named = os.environ.get("SIMULATOR_ALGORITHMS", "")
    for module in filter(None, map(str.strip, named.split(","))):
        try:
            importlib.import_module(module)
        except ImportError as error:
            message = (
                f"SIMULATOR_ALGORITHMS: cannot import {module!r} ({error}); name modules on"
                " PYTHONPATH, separated by commas"
            )
            if _the_command_line_starting():
                print(f"python -m simulator: error: {message}", file=sys.stderr)
                raise SystemExit(2) from None
            raise ConfigError(message) from error


def _the_command_line_starting() -> bool:
    """True while ``python -m simulator`` (argv[0] is ``-m`` while the module is being found)
    or the ``ratelimit-workbench`` script imports the package, before the CLI's own handling
    of bad input can run."""
    started_as = sys.argv[0] if sys.argv else ""
    return started_as == "-m" or os.path.basename(started_as) == "ratelimit-workbench"


_import_named_modules()
