"""The Lua scripts, loaded once from package data.

Each file under ``simulator/algorithms/lua/`` is one script with its contract in a header
comment. A :class:`Script` carries the source and its SHA1 so a backend can send ``EVALSHA`` and
fall back to loading the script once when the server has not seen it yet. A script that is not
shipped with the package (a test's, a user's) is made known with :func:`add`.

An algorithm whose call is one of the server's own commands (Redis 8.8's ``INCREX``) rather than a
script has a :func:`native` one in its place: its ``command`` names the verb, the backend sends
``VERB *keys *args`` instead of ``EVALSHA``, and there is nothing to load.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Script", "load", "add", "native"]

_ADDED: dict[str, str] = {}


@dataclass(frozen=True)
class Script:
    name: str
    source: str
    sha: str
    #: The server command sent in place of ``EVALSHA`` ("" for a Lua script; see :func:`native`).
    command: str = ""


@cache
def native(command: str) -> Script:
    """The server's own ``command`` (e.g. ``INCREX``) standing where a script would: a call is
    ``command *keys *args``; no source, nothing to load."""
    return Script(command.lower(), "", "", command.upper())


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
    return Script(name, source, hashlib.sha1(source.encode("utf-8")).hexdigest())
