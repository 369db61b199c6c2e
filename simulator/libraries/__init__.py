"""The limiters people run, driven unchanged on the bench: ``limits`` (behind Flask-Limiter
and SlowAPI), PyrateLimiter and throttled-py.

Each library strategy is an algorithm of the registry under the library's name
(``limits.moving_window``, ``pyrate.sliding_window_log`` ...): a small
:class:`~simulator.libraries.base.LibraryLimiter` whose ``decide()`` is the library's own call,
through its own Redis client pointed at the run's server, with its own key names and its own
scripts. Where a library reads the wall clock in Python (``limits``' moving window passes
``time.time()`` to its script), the call runs with that clock moved to the simulated instant
by ``time-machine``; where it reads the server's clock (a key's TTL), the fake server's
virtual clock serves it. Nothing of a library is edited or copied.

The adapters need the ``libraries`` extra (``pip install -e '.[libraries]'``). The registry
takes them the first time one of their names is asked for (the hook in
:mod:`simulator.algorithms`), or all at once when this module is named in
``SIMULATOR_ALGORITHMS`` (then ``burst`` prints their rows beside the built-ins'). Without the
extra, naming one is one :class:`LibraryMissing` saying what to install.
"""

from __future__ import annotations

import argparse
import importlib

from simulator.checks import ConfigError

__all__ = ["PREFIXES", "INSTALL", "LibraryMissing", "missing", "register", "library_names"]

#: The name before the dot of a library strategy -> the adapter module that registers them.
PREFIXES = {
    "limits": "simulator.libraries.limits_lib",
    "pyrate": "simulator.libraries.pyrate_lib",
    "throttled": "simulator.libraries.throttled_lib",
}
#: What the adapters need beyond the simulator's own dependencies (import names).
_NEEDED = ("limits", "time_machine")
INSTALL = "pip install -e '.[libraries]'"


class LibraryMissing(ConfigError, argparse.ArgumentTypeError):
    """A library strategy was named but the ``libraries`` extra is not installed. An
    ArgumentTypeError too, so that an option's type check prints this message as it is."""


def missing(name: str) -> LibraryMissing:
    return LibraryMissing(
        f"{name} is a strategy of the library {name.split('.')[0]!r}, run unchanged: "
        f"install the libraries extra ({INSTALL})"
    )


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def register(name: str | None = None) -> list[str]:
    """Register the adapters of the library ``name`` belongs to (every library when None);
    the names registered. :class:`LibraryMissing` when the extra is not installed."""
    if not all(map(_importable, _NEEDED)):
        raise missing(name or "limits.moving_window")
    prefixes = list(PREFIXES) if name is None else [name.split(".")[0]]
    added: list[str] = []
    for prefix in prefixes:
        try:
            module = importlib.import_module(PREFIXES[prefix])
        except ImportError:
            if name is not None:
                raise missing(name) from None
            continue  # that library is not installed: its strategies are not offered
        added.extend(module.register())
    return added


def library_names() -> list[str]:
    """Every library strategy the installed libraries offer (registering them)."""
    return register()
