"""What a gateway's limiter is beside any algorithm's: its configuration's own words.

A :class:`GatewayLimiter` is an ordinary :class:`~simulator.algorithms.base.Limiter` (a limit, a
window, parameters of its own, one script, a reference) that can also be written the way the
gateway's operator writes it. ``from_spec`` turns ``rate=10r/s,burst=20,nodelay`` into the
simulator's limit, window and parameters; ``describe`` says the same configuration back in plain
words ("10 requests per s, 20 more queued, none delayed"), and ``syntax`` is the one line of
help every mistake quotes. Its script lives under ``gateways/lua/`` and is made known to the
loader when the module is imported, which happens the first time the gateway is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import ClassVar

from simulator.algorithms import scripts
from simulator.algorithms.base import Limiter, Reference

__all__ = ["GatewayLimiter", "Spec", "load_script", "plural"]

#: A gateway's configuration as written: field -> value (``None`` for a bare flag).
Spec = Mapping[str, object]


def load_script(name: str) -> None:
    """Make ``gateways/lua/<name>.lua`` known to the script loader under ``name``."""
    path = resources.files("simulator.algorithms.gateways").joinpath("lua", f"{name}.lua")
    scripts.add(name, path.read_text("utf-8"))


def plural(n: float, unit: str) -> str:
    """``1 request``, ``2 requests``, ``0.5 requests``."""
    return f"{n:g} {unit}" if n == 1 else f"{n:g} {unit}s"


class GatewayLimiter(Limiter):
    """A limiter that also reads its gateway's configuration (see the module's story)."""

    #: The fields its configuration takes, and which of them are bare flags.
    fields_accepted: ClassVar[tuple[str, ...]] = ()
    flags: ClassVar[tuple[str, ...]] = ()
    #: Fields the gateway has that are not modelled: its ``from_spec`` says why.
    fields_refused: ClassVar[tuple[str, ...]] = ()
    #: The one-line syntax, as help and every message show it.
    syntax: ClassVar[str]
    #: Where the gateway documents the semantics its script follows.
    documented_at: ClassVar[str]
    reference: ClassVar[type[Reference]]

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        """(limit, window_ms, params) for the configuration ``spec``; ConfigError naming
        ``where`` and the field otherwise."""
        raise NotImplementedError

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        """The configuration in plain words, one line."""
        raise NotImplementedError
