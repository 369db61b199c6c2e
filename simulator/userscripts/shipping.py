"""A user's script sent to Dask workers, which register it as this process did.

A script given with ``--script`` is registered in this process only; a sweep's tasks and a
sharded run's shards run in worker processes, possibly on other machines that do not have the
file. So a task that runs a user's script carries it: its name, path (for messages), source,
declaration and colour (:func:`shipped`), and the worker registers it before the task runs
(:func:`install`; once per worker and version of the script). :func:`digest` names the version:
a sweep's task that ran one version of a script is not finished for another.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from simulator.userscripts.declaration import Declaration

__all__ = ["Shipped", "shipped", "install", "digest"]

#: A script as it travels: (name, path, source, declaration, colour).
Shipped = tuple[str, str, str, Declaration, str]


def _user_class(algorithm: str | type) -> type | None:
    """The user's script ``algorithm`` is (its class, or a name: one a worker was sent is
    looked up here, where it arrives, and may not be registered yet), or None."""
    from simulator.algorithms import ALGORITHMS
    from simulator.userscripts.limiter import UserScript

    cls = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else algorithm
    return cls if cls is not None and issubclass(cls, UserScript) else None


def shipped(algorithm: str | type) -> Shipped | None:
    """What a worker needs to run ``algorithm`` (its name or its class), or None for a
    built-in algorithm."""
    cls = _user_class(algorithm)
    if cls is None:
        return None
    return (cls.name, str(cls.path), cls.source, cls.declaration, cls.colour)  # type: ignore[attr-defined]


def install(script: Shipped | None) -> None:
    """Register ``script`` here (a worker), unless this very version is registered already."""
    if script is None:
        return
    name, path, source, declaration, colour = script
    cls = _user_class(name)
    if cls is not None and cls.source == source and cls.declaration == declaration:  # type: ignore[attr-defined]
        return
    from simulator.userscripts.limiter import install_script

    install_script(name, Path(path), source, declaration, colour)


def digest(algorithm: str | type) -> str | None:
    """A short hash of a user's script and its declaration (None for a built-in algorithm);
    ``algorithm``: its name or its class."""
    script = shipped(algorithm)
    if script is None:
        return None
    text = repr((script[2], dataclasses.replace(script[3], path=Path())))  # not where it lies
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
