"""The Lua scripts, loaded once from package data.

Each file under ``simulator/algorithms/lua/`` is one script with its contract in a header
comment, read into a :class:`~simulator.calls.Script` (source and SHA1). A script that is not
shipped with the package (a test's, a user's) is made known with :func:`add`. The backends never
load scripts by name: a run hands them the scripts it will call (``Backend.preload``), and a
script a server has not seen is loaded from the :class:`~simulator.calls.Script` itself.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from simulator.calls import Script, script

__all__ = ["load", "add"]

_ADDED: dict[str, str] = {}


def add(name: str, source: str) -> Script:
    """Make a script known by ``name`` (one not shipped under ``algorithms/lua/``)."""
    _ADDED[name] = source
    load.cache_clear()
    return load(name)


@cache
def load(name: str) -> Script:
    """The script ``simulator/algorithms/lua/<name>.lua`` (or one made known with :func:`add`)."""
    if name in _ADDED:
        source = _ADDED[name]
    else:
        path = resources.files("simulator.algorithms").joinpath("lua").joinpath(f"{name}.lua")
        if not path.is_file():
            raise KeyError(f"unknown script {name!r}: no {name}.lua under simulator/algorithms/lua")
        source = path.read_text("utf-8")
    return script(name, source)
