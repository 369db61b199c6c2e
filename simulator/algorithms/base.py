"""What every algorithm is on the Python side, around its Lua script.

A :class:`Limiter` subclass is the algorithm's whole record: the script it runs (``scripts``, one
``.lua`` file each under ``algorithms/lua/``), the keys (all sharing the client's hash tag) and
arguments of one call (and, to pipeline many, of a batch of calls packed from a template), the
reply parsed into a :class:`~simulator.records.Decision` (or a batch of replies into columns), its
per-request :class:`Reference` (a pure-Python twin of the script, decision for decision), its
vectorised ``bulk`` kernel for studies of millions of requests, its label and colour, and whether
its decisions depend on the server's own clock. The registry in :mod:`simulator.algorithms` lists
the subclasses; everything else (CLI choices, palette, scripts to load, parametrised tests) is
read from there.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

import numpy as np

from simulator.algorithms.scripts import load
from simulator.calls import Batch, Call, Fields, Script, native
from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError, check_int, check_number
from simulator.keys import hash_tag
from simulator.records import Decision, DecisionColumns

if TYPE_CHECKING:  # the backends sit beside the algorithms: a run hands one to the other
    from simulator.backends.base import Backend

__all__ = [
    "BatchTemplate",
    "BulkDecider",
    "ServerTime",
    "BurstLimiter",
    "Limiter",
    "Reference",
    "BulkKernel",
    "MemoryModel",
    "Param",
    "own_params",
    "cost_field",
    "templated",
    "NEVER",
]

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


# --- optional abilities: a limiter offers one by having it, and is asked with isinstance -------
# (``isinstance(limiter, BulkDecider)``; of a registered class, ``issubclass(cls, BulkDecider)``).
# A parametrised test over the registry skips an algorithm that does not offer what it tests and
# names the ability in its reason.


@runtime_checkable
class BatchTemplate(Protocol):
    """Optional, for speed on a real server: the calls of several requests field by field, so
    that a pipeline is packed from one template instead of call by call.

    ``fields(clients, t_ms, costs) -> (number of keys, fields)``: each field the keys and then
    the arguments of :meth:`Limiter.call` in order, as a ``str`` (the same in every call) or a
    list of ``str`` (one per call). It must describe exactly the calls :meth:`Limiter.call`
    makes (``tests/test_batches.py`` holds every registered limiter to it), without changing any
    state: a limiter whose arguments do (a sequence number) overrides ``batch`` instead. A
    subclass that changes ``keys``, ``args`` or ``call`` and not this gets the calls one by one
    (see :func:`templated`); one that sets ``fields = None`` turns the template off.
    """

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]: ...


@runtime_checkable
class BulkDecider(Protocol):
    """Optional, for the studies of millions of requests: a vectorised kernel over a whole trace
    (a :data:`BulkKernel`, as a staticmethod ``bulk``) that decides as the reference does.
    Without one, the accuracy, contracts and adversary studies decide on the Lua path (slower)."""

    @staticmethod
    def bulk(
        client_codes: np.ndarray,
        t_ms: np.ndarray,
        limit: int,
        window_ms: int,
        cost: np.ndarray | None,
        params: Mapping[str, float],
    ) -> tuple[np.ndarray, np.ndarray]: ...


class ServerTime:
    """A limiter whose decisions follow the server's own clock (a key's TTL *is* the window):
    inherit it first, ``class EchoMQ(ServerTime, Limiter)``. On a real server such a run goes in
    real time (a virtual clock cannot move the server's); on the fake server the virtual clock
    drives expiry exactly (:mod:`simulator.engine.realtime`)."""

    uses_server_time: ClassVar[bool] = True


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
        if _huge(value):  # past every bound; its digits would fill the screen
            wanted = f"an integer from {math.ceil(p.minimum):,} to {MAX_LIMIT:,}"
            if not p.integer:
                wanted = f"a number from {p.minimum:g} to {MAX_WINDOW_MS:,}"
            raise ConfigError(f"{owner}.{where}: must be {wanted}, got {shown(value)}")
        if p.integer:
            number: float = check_int(owner, where, value, math.ceil(p.minimum), MAX_LIMIT)
        else:
            number = check_number(owner, where, value, hi=float(MAX_WINDOW_MS))
            if number < p.minimum:
                raise ConfigError(f"{owner}.{where}: must be >= {p.minimum:g}, got {shown(value)}")
        values[p.name] = number
    return values


def _huge(value: object) -> bool:
    """An integer past every parameter's bound (beyond what a Lua number holds exactly)."""
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and abs(int(value)) > 2**53
    )


def shown(value: object) -> str:
    """A parameter's value as a message shows it: an integer of many digits by its magnitude
    (``1e+300``, not three hundred digits), anything else as written, cut at 40 characters."""
    if _huge(value):
        number = int(value)  # type: ignore[call-overload]  # an Integral: _huge said so
        if number.bit_length() <= 1000:  # within what a float holds
            return f"{float(number):.3g}"
        digits = math.floor((number.bit_length() - 1) * math.log10(2)) + 1
        return f"an integer of about {digits:,} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


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
    scripts: ClassVar[tuple[str, ...]] = ()
    #: For an algorithm whose call is the server's own command instead of a script (Redis
    #: 8.8's ``INCREX``): those commands, the first one deciding; ``scripts`` is then empty,
    #: :meth:`call` hands a :func:`~simulator.calls.native` in place of a script, and a run on
    #: a server without them says so (:meth:`~simulator.backends.base.Backend.lacks`).
    commands: ClassVar[tuple[str, ...]] = ()
    #: True when decisions depend on the server's own clock (the key's TTL is the window): set
    #: by inheriting :class:`ServerTime`.
    uses_server_time: ClassVar[bool] = False
    #: Which window it counts, for drawing it: ``trailing`` (t - W, t], ``grid`` (the clock
    #: grid's cell), ``two_grids`` (the cell and the one before, weighed) or ``first_hit`` (W
    #: from a client's first admitted request, ending when its key expires).
    counted_window: ClassVar[str] = "trailing"
    #: The pure-Python twin, request by request.
    reference: ClassVar[type[Reference]]
    #: How the memory study builds and sums up its keys (None: not in the memory study).
    memory: ClassVar[MemoryModel | None] = None
    #: Its own parameters beside limit and window, each with a default from them.
    params_declared: ClassVar[tuple[Param, ...]] = ()
    #: True when a client's decisions depend on its own requests only (every key under its own
    #: hash tag), so that a run can be split by client into shards (:mod:`simulator.engine.shards`).
    #: False for a limiter whose clients share state, such as one budget for a queue's workers.
    per_client: ClassVar[bool] = True
    #: True when its script is known to end quickly, so that a simulation may send its calls
    #: in pipelines; False for a user's script, which goes one call at a time on a real server
    #: so that a script stuck in a loop is stopped at its first call, not at every call in flight.
    vetted: ClassVar[bool] = True

    def __init__(self, backend: Backend, limit: int, window_ms: int, **params: object) -> None:
        self.limit, self.window_ms = _checked(type(self).__name__, limit, window_ms)
        self.params = own_params(
            type(self).__name__, self.params_declared, params, self.limit, self.window_ms
        )
        self.backend = backend
        self.script: Script = load(self.scripts[0]) if self.scripts else native(self.commands[0])
        if backend is not None:
            backend.preload(load(name) for name in self.scripts)

    @classmethod
    def header_policies(
        cls, limit: int, window_ms: int, params: Mapping[str, float]
    ) -> tuple[tuple[str, int, int], ...]:
        """Several policies behind one decision, as ``(name, limit, window_ms)`` for the header
        fields (:func:`~simulator.headers.several_policies`); empty (the default) for one policy."""
        return ()

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

    # --- many requests at a time (a replay's pipelines); each part optional --------------------

    def calls(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None = None
    ) -> list[Call]:
        """:meth:`call` for each request, in order."""
        if costs is None:
            return list(map(self.call, clients, t_ms))
        return list(map(self.call, clients, t_ms, costs))

    def batch(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None = None
    ) -> Sequence[Call]:
        """The script calls of several requests in order, as one pipeline sends them: packed
        from a template where the limiter is a :class:`BatchTemplate` (the calls themselves made
        only if a backend asks for them), else :meth:`calls`."""
        if not templated(type(self), "fields"):  # also when it is no BatchTemplate
            return self.calls(clients, t_ms, costs)

        template = cast(BatchTemplate, self)

        def to_fields() -> Fields:
            return template.fields(clients, t_ms, costs)

        return Batch(self.script, len(t_ms), to_fields, lambda: self.calls(clients, t_ms, costs))

    def parse_many(self, replies: Sequence[Any]) -> DecisionColumns:
        """The decisions of a batch of replies, column by column.

        Replies of the usual shape (what :meth:`parse` reads: six integers, the count perhaps a
        string) are read a column at a time; a limiter with a ``parse`` of its own, or a reply
        of another shape, is read reply by reply with :meth:`parse`.
        """
        if type(self).parse is Limiter.parse:
            columns = _usual_columns(replies)
            if columns is not None:
                return columns
        return DecisionColumns.of(map(self.parse, replies))


def _owner(cls: type, name: str) -> type:
    return next(c for c in cls.__mro__ if name in vars(c))


def templated(cls: type[Limiter], name: str) -> bool:
    """Whether ``cls`` packs its calls by its own template ``name`` (``fields``: it is a
    :class:`BatchTemplate`; or a ``batch`` of its own): one written by the class that made its
    keys, arguments and call, or below it, so a user's subclass that changes any of those is
    never sent another class's template."""
    if name == "fields":
        if not issubclass(cls, BatchTemplate):
            return False
    elif getattr(cls, name) is getattr(Limiter, name):
        return False
    owner = _owner(cls, name)
    return all(issubclass(owner, _owner(cls, part)) for part in ("keys", "args", "call"))


def cost_field(costs: Sequence[int] | None) -> str | list[str]:
    """The cost argument of a batch for :meth:`Limiter.fields` (None: every request costs 1)."""
    return "1" if costs is None else list(map(str, costs))


def _usual_columns(replies: Sequence[Any]) -> DecisionColumns | None:
    """:meth:`Limiter.parse` of every reply at once, or None if one is not of its shape."""
    n = len(replies)
    if not n:
        return DecisionColumns.of(())
    try:
        if min(map(len, replies)) != 6 or max(map(len, replies)) != 6:
            return None
        allowed, count, limit, remaining, reset_ms, retry_ms = zip(*replies, strict=True)
        ints = [np.array(c) for c in (allowed, limit, remaining, reset_ms, retry_ms)]
        if any(a.dtype.kind != "i" for a in ints):
            return None  # strings where numbers were expected, or numbers past int64
        counts = np.fromiter(map(float, count), dtype=np.float64, count=n)
    except (TypeError, ValueError):
        return None  # parse() says what is wrong
    flags, limits, left, reset, retry = ints
    return DecisionColumns(flags == 1, counts, limits, left, reset, retry)


class BurstLimiter(Limiter):
    """A limiter with one key per client and a ``burst`` (the buckets): the call is
    ``KEYS = (<key_prefix><hash tag>,)``, ``ARGV = (now_ms, window_ms, limit, burst, cost)``."""

    #: The key's name before the client's hash tag, e.g. ``rl:tb:``.
    key_prefix: ClassVar[str]

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"{self.key_prefix}{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return (now_ms, self.window_ms, self.limit, int(self.params["burst"]), cost)

    # The reply is the usual one, its limit the burst: Limiter.parse reads it.

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        keys = [f"{self.key_prefix}{tag}" for tag in map(hash_tag, clients)]
        limit, burst = str(self.limit), str(int(self.params["burst"]))
        return 1, [keys, list(map(str, t_ms)), str(self.window_ms), limit, burst, cost_field(costs)]
