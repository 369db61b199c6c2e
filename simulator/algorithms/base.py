"""What every algorithm is on the Python side, around its Lua script.

A :class:`Limiter` subclass is the algorithm's whole record: the script it runs (``scripts``, one
``.lua`` file each under ``algorithms/lua/``), the keys (all sharing the client's hash tag) and
arguments of one call, the reply parsed into a :class:`~simulator.records.Decision`, its
per-request :class:`Reference` (a pure-Python twin of the script, decision for decision), its
vectorised ``bulk`` kernel for studies of millions of requests, its label and colour, and whether
its decisions depend on the server's own clock. The registry in :mod:`simulator.algorithms` lists
the subclasses; everything else (CLI choices, palette, scripts to load, parametrised tests) is
read from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from simulator.records import Decision
from simulator.scenario import MAX_LIMIT, MAX_WINDOW_MS, ConfigError, check_int, check_number
from simulator.scripts import Script, load

__all__ = ["Limiter", "Reference", "BulkKernel", "MemoryModel", "Param", "own_params", "NEVER"]

#: ``kernel(client_codes, t_ms, limit, window_ms, cost, params) -> (allowed, count)`` over one
#: trace sorted by (client, time, arrival); ``cost`` is each request's cost (int64) or None when
#: every request costs 1, ``params`` the algorithm's own parameters, resolved. See
#: :func:`simulator.fastref.decide_bulk`.
BulkKernel = Callable[
    [np.ndarray, np.ndarray, int, int, "np.ndarray | None", Mapping[str, float]],
    tuple[np.ndarray, np.ndarray],
]

#: Retry-After of a request that costs more than the limiter could ever admit: never.
NEVER = -1


@dataclass(frozen=True)
class MemoryModel:
    """How the memory study builds one user's keys for this algorithm, and the whiteboard sum.

    ``states``: the states measured (``steady`` mid-window, ``seam`` with two windows' keys alive,
    ``idle`` with only what never expires left). ``windows``: grid windows of requests that build
    the steady state. ``trailing``: the window trails now, so the requests are spread over
    ``(now - W, now]`` instead of grid windows. ``request_ids``: one member per request, whose id
    format (``now_ms-seq`` or ``uuid4``) is part of the layout. ``drained``: the steady state is a
    client at its limit whose key lives as long as it keeps sending (a bucket: spent at once,
    then sending at the rate), so the key still lives when it is weighed; a bucket sent to only
    at the rate stays nearly full and expires within one token's time. ``whiteboard(limit,
    key_bytes)``: payload bytes per user a candidate would write down (no per-key or per-entry
    overhead).
    """

    whiteboard: Callable[[int, int], int]
    states: tuple[str, ...] = ("steady",)
    windows: int = 1
    trailing: bool = False
    request_ids: bool = False
    drained: bool = False


@dataclass(frozen=True)
class Param:
    """One of an algorithm's own parameters beside the limit and the window (a burst, a cost).

    ``default(limit, window_ms)`` gives its value when none is given; ``integer`` values are
    whole numbers; every value must be ``>= minimum``. ``unit`` goes into messages and ``--help``.
    """

    name: str
    default: Callable[[int, int], float]
    unit: str = ""
    minimum: float = 0
    integer: bool = False


def own_params(
    owner: str, declared: Sequence[Param], given: Mapping[str, object], limit: int, window_ms: int
) -> dict[str, float]:
    """``given`` checked against ``declared``, with the defaults filled in; ConfigError naming
    the parameter otherwise (an unknown name lists the known ones)."""
    known = {p.name: p for p in declared}
    for name in given:
        if name not in known:
            listed = ", ".join(known) or "none"
            raise ConfigError(f"{owner}.params: unknown parameter {name!r} (known: {listed})")
    values: dict[str, float] = {}
    for p in declared:
        value = given.get(p.name, p.default(limit, window_ms))
        where = f"params[{p.name!r}]"
        if p.integer:
            number: float = check_int(owner, where, value, math.ceil(p.minimum), MAX_LIMIT)
        else:
            number = check_number(owner, where, value, hi=float(MAX_WINDOW_MS))
            if number < p.minimum:
                raise ConfigError(f"{owner}.{where}: must be >= {p.minimum:g}, got {value!r}")
        values[p.name] = number
    return values


def _checked(owner: str, limit: int, window_ms: int) -> tuple[int, int]:
    return (
        check_int(owner, "limit", limit, 1, MAX_LIMIT),
        check_int(owner, "window_ms", window_ms, 1, MAX_WINDOW_MS),
    )


class Reference:
    """The state a server would keep, in dictionaries, following Redis's expiry rule (a key is
    gone only once now is past its expiry time). Times are integer ms, never going backwards."""

    name: ClassVar[str]
    #: The algorithm's own parameters (the same declarations as its Limiter's).
    params_declared: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        self.limit, self.window_ms = _checked(type(self).__name__, limit, window_ms)
        self.params = own_params(
            type(self).__name__, self.params_declared, params, self.limit, self.window_ms
        )

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        raise NotImplementedError


class Limiter:
    """Decides one request at a time by running its script on a backend."""

    name: ClassVar[str]
    #: Display name on charts and in notebooks.
    label: ClassVar[str]
    #: One colour per algorithm, on every chart.
    colour: ClassVar[str]
    #: Its Lua scripts by file name; the first one decides.
    scripts: ClassVar[tuple[str, ...]]
    #: True when decisions depend on the server's own clock (the key's TTL is the window).
    uses_server_time: ClassVar[bool] = False
    #: The pure-Python twin, request by request.
    reference: ClassVar[type[Reference]]
    #: The vectorised kernel over a whole trace (a :data:`BulkKernel` as a staticmethod), or None.
    bulk: ClassVar[Any] = None
    #: How the memory study builds and sums up its keys (None: not in the memory study).
    memory: ClassVar[MemoryModel | None] = None
    #: Its own parameters beside limit and window, each with a default from them.
    params_declared: ClassVar[tuple[Param, ...]] = ()
    #: True when a client's decisions depend on its own requests only (every key under its own
    #: hash tag), so that a run can be split by client into shards (:mod:`simulator.shards`).
    #: False for a limiter whose clients share state, such as one budget for a queue's workers.
    per_client: ClassVar[bool] = True

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        self.limit, self.window_ms = _checked(type(self).__name__, limit, window_ms)
        self.params = own_params(
            type(self).__name__, self.params_declared, params, self.limit, self.window_ms
        )
        self.backend = backend
        self.script: Script = load(self.scripts[0])

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        raise NotImplementedError

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return (now_ms, self.window_ms, self.limit, cost)

    @staticmethod
    def parse(reply: Sequence[Any]) -> Decision:
        # Integer replies arrive as ints; only the sliding counter's estimate is a string.
        allowed, count, limit, remaining, reset_ms, retry_after_ms = reply
        return Decision(allowed == 1, float(count), limit, remaining, reset_ms, retry_after_ms)

    def call(
        self, client: str, now_ms: int, cost: int = 1
    ) -> tuple[Script, Sequence[str], Sequence[Any]]:
        """The script call for one request (what :meth:`decide` sends; pipelines batch these)."""
        return self.script, self.keys(client, now_ms), self.args(client, now_ms, cost)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        keys, args = self.keys(client, now_ms), self.args(client, now_ms, cost)
        return self.parse(self.backend.call(self.script, keys, args))
