"""The Lua scripts, loaded once from package data.

Each file under ``simulator/lua/`` is one script with its contract in a header comment. A
:class:`Script` carries the source and its SHA1 so a backend can send ``EVALSHA`` and fall back to
loading the script once when the server has not seen it yet.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Script", "load", "SCRIPT_NAMES"]

SCRIPT_NAMES = ("fixed_window", "echomq_admit", "echomq_ttl", "sliding_log", "sliding_counter")


@dataclass(frozen=True)
class Script:
    name: str
    source: str
    sha: str


@cache
def load(name: str) -> Script:
    """The script ``simulator/lua/<name>.lua``."""
    if name not in SCRIPT_NAMES:
        raise KeyError(f"unknown script {name!r}; known: {', '.join(SCRIPT_NAMES)}")
    source = resources.files("simulator").joinpath("lua").joinpath(f"{name}.lua").read_text("utf-8")
    return Script(name, source, hashlib.sha1(source.encode("utf-8")).hexdigest())
