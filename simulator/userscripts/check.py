"""Grading a limiter script: a battery of traces through the script and through a reference.

:func:`check` plays each trace of :func:`~simulator.userscripts.battery.battery` through a user's script (on a fresh fake server
on the virtual clock) and through the named algorithm's reference, or through a second script,
decision by decision and field by field (:mod:`simulator.userscripts.fields`: ``allowed``,
``count``, ``remaining``, ``reset``, ``retry_after`` and the header fields they make), with the
same parameters (a bucket's ``burst``) on both sides. It names the first decision that differs:
which trace, which request, when, which client, the first field that differs, what was expected
and what came; and it counts every difference, trace by trace and field by field. The battery
holds the card's practice case, requests around window seams, many in one millisecond, idle gaps
longer than the window, many clients, odd client ids, and seeded random traffic; a script that
takes a ``cost`` is played one more trace of costly requests (:mod:`simulator.userscripts.battery`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from simulator.algorithms.base import Limiter
from simulator.backends import FakeRedisBackend
from simulator.policy import lookup
from simulator.records import Decision
from simulator.userscripts.battery import COST_TRACE, Trace, battery, takes_cost, traces_for
from simulator.userscripts.fields import (
    FIELDS,
    HEADER_FIELDS,
    TOLERANCES,
    Difference,
    compared,
    first_difference,
)

__all__ = [
    "Trace",
    "battery",
    "traces_for",
    "takes_cost",
    "COST_TRACE",
    "Mismatch",
    "Verdict",
    "check",
    "fields_of",
]


@dataclass(frozen=True)
class Mismatch:
    """The first decision on which the two disagreed."""

    trace: str
    index: int  # from 1, in the trace
    t_ms: int
    client: str
    limit: int
    window_ms: int
    said: Decision
    expected: Decision
    agreed_before: int
    #: The trace's requests up to this one: (t_ms, client, script admitted, reference admitted).
    history: tuple[tuple[int, str, bool, bool], ...] = ()
    #: The first field that differs, what was expected and what came.
    difference: Difference = Difference("allowed", "", "")

    @property
    def field(self) -> str:
        return self.difference.field

    def __str__(self) -> str:
        def verdict(d: Decision) -> str:
            return "admitted" if d.allowed else "refused"

        where = (
            f"differs in trace {self.trace!r} (limit {self.limit} per {self.window_ms} ms), "
            f"request {self.index} at t_ms={self.t_ms}, client {self.client!r}: "
        )
        after = f"after {self.agreed_before:,} decisions that agreed on every field"
        if self.field == "allowed":
            return where + (
                f"the script {verdict(self.said)} it (count {self.said.count:g}), the reference "
                f"{verdict(self.expected)} it: its count at that moment is "
                f"{self.expected.count:g} against the limit {self.limit} "
                f"(first differing field: allowed; {after})"
            )
        return where + (
            f"the first field that differs is {self.difference}; both {verdict(self.said)} it ({after})"
        )


@dataclass(frozen=True)
class Verdict:
    """What the grading found: every decision played, the first that differs, and how many."""

    decisions: int  # played, over every trace
    traces: int
    mismatch: Mismatch | None  # the first decision that differs
    #: Decisions that differ, per trace that holds any (trace name -> how many), in battery order.
    differences: dict[str, int] = field(default_factory=dict)
    #: The fields compared, in order (see :mod:`simulator.userscripts.fields`).
    fields: tuple[str, ...] = ("allowed",)
    #: Decisions whose first differing field is this one (field -> how many).
    by_field: dict[str, int] = field(default_factory=dict)
    #: The fields the reply has, when only some of them were compared (``only``).
    declared: tuple[str, ...] | None = None

    @property
    def agrees(self) -> bool:
        return self.mismatch is None

    @property
    def differing(self) -> int:
        """How many decisions differ in all."""
        return sum(self.differences.values())

    def compared(self) -> str:
        """The fields compared, and how: in a sentence."""
        how = "; ".join(f"{f} {t}" for f, t in TOLERANCES.items() if f in self.fields)
        has = self.fields if self.declared is None else self.declared
        left = [f for f in (*FIELDS, *HEADER_FIELDS) if f not in has]
        unsaid = f"; not in the reply, so not compared: {', '.join(left)}" if left else ""
        if self.declared is not None and len(self.declared) > len(self.fields):
            out = [f for f in self.declared if f not in self.fields]
            unsaid += f"; left out as asked: {', '.join(out)}"
        return (
            f"fields compared: {', '.join(self.fields)} "
            f"({how + '; ' if how else ''}the rest exact){unsaid}"
        )

    def __str__(self) -> str:
        if self.mismatch is None:
            return (
                f"agrees on {self.decisions:,} decisions over {self.traces} traces, "
                f"on every field{'' if self.declared is None else ' compared'}\n"
                f"{self.compared()}"
            )
        shown = list(self.differences.items())[:4]
        where = "; ".join(f"{name!r}: {n:,}" for name, n in shown)
        if len(self.differences) > len(shown):
            where += f"; and {len(self.differences) - len(shown)} more"
        fields = ", ".join(f"{name} {n:,}" for name, n in self.by_field.items())
        return (
            f"{self.mismatch}\nin all {self.differing:,} of {self.decisions:,} decisions differ, "
            f"in {len(self.differences)} of {self.traces} traces ({where}); by first differing "
            f"field: {fields}\n{self.compared()}"
        )


Decider = Callable[[str, int, int], Decision]


def _own_params(cls: type[Limiter], params: Mapping[str, float]) -> dict[str, float]:
    """Those of ``params`` that algorithm ``cls`` declares."""
    declared = {q.name for q in cls.params_declared}
    return {k: v for k, v in params.items() if k in declared}


def _script(cls: type[Limiter], trace: Trace, params: Mapping[str, float]) -> Decider:
    now = [0]
    limiter = cls(
        FakeRedisBackend(lambda: now[0]), trace.limit, trace.window_ms, **_own_params(cls, params)
    )

    def decide(client: str, t_ms: int, cost: int) -> Decision:
        now[0] = t_ms
        return limiter.decide(client, t_ms, cost)

    return decide


def _reference(cls: type[Limiter], trace: Trace, params: Mapping[str, float]) -> Decider:
    reference = getattr(cls, "reference", None)
    if reference is None:  # a user's script: no reference (REFERENCES has no such key)
        raise KeyError(cls.name)
    return reference(trace.limit, trace.window_ms, **_own_params(cls, params)).decide


def _pairs(trace: Trace, a: Decider, b: Decider) -> Iterator[tuple[int, Decision, Decision]]:
    costs = trace.costs or (1,) * len(trace.requests)
    for i, ((t, client), cost) in enumerate(zip(trace.requests, costs, strict=True), 1):
        yield i, a(client, t, cost), b(client, t, cost)


def fields_of(algorithm: str | type[Limiter]) -> tuple[str, ...] | None:
    """The reply fields an algorithm (a registered name, or its class) returns: a script's
    declared ones, or None for one of Python's, which returns them all."""
    decl = getattr(lookup(algorithm), "declaration", None)
    return None if decl is None else tuple(decl.reply)


def _both(script: type[Limiter], against: type[Limiter], reference: bool) -> tuple[str, ...]:
    """The fields compared: those the script returns (and, for a second script, it too)."""
    mine = fields_of(script)
    theirs = None if reference else fields_of(against)
    if mine is None or theirs is None:
        return compared(mine if theirs is None else theirs)
    return compared(set(mine) & set(theirs))


def check(
    script: str | type[Limiter],
    against: str | type[Limiter],
    reference: bool = True,
    seed: int = 0,
    params: Mapping[str, float] | None = None,
    only: Iterable[str] | None = None,
) -> Verdict:
    """Grade registered script ``script`` against algorithm ``against``'s reference (or, with
    ``reference=False``, against the registered script ``against``): every field the script
    returns (:func:`~simulator.userscripts.fields.compared`), or ``only`` those of them (e.g.
    ``("allowed",)``: the decisions alone), for every request of every trace. ``params``
    (e.g. ``{"burst": 5}``) go to each side that declares them. Either side may be given as
    its Limiter class; a name is looked up here, once."""
    mine_cls = lookup(script, owner="check.script")
    theirs_cls = lookup(against, owner="check.against")
    other = _reference if reference else _script
    params = dict(params or {})
    fields = declared = _both(mine_cls, theirs_cls, reference)
    if only is not None:
        fields = tuple(f for f in declared if f in set(only))
    decisions = 0
    first: Mismatch | None = None
    differences: dict[str, int] = {}
    by_field: dict[str, int] = {}
    traces = traces_for(mine_cls, theirs_cls, seed)
    for trace in traces:
        mine, theirs = _script(mine_cls, trace, params), other(theirs_cls, trace, params)
        history: list[tuple[int, str, bool, bool]] = []
        pairs = _pairs(trace, mine, theirs)
        for i, said, expected in _located(trace, pairs):
            t, client = trace.requests[i - 1]
            if first is None:
                history.append((t, client, bool(said.allowed), bool(expected.allowed)))
            differs = first_difference(fields, said, expected, trace.window_ms)
            if differs is not None:
                differences[trace.name] = differences.get(trace.name, 0) + 1
                by_field[differs.field] = by_field.get(differs.field, 0) + 1
                if first is None:
                    first = Mismatch(
                        trace.name,
                        i,
                        t,
                        client,
                        trace.limit,
                        trace.window_ms,
                        said,
                        expected,
                        decisions,
                        tuple(history),
                        differs,
                    )
            decisions += 1
    return Verdict(
        decisions,
        len(traces),
        first,
        differences,
        fields,
        by_field,
        None if only is None else declared,
    )


def _located(
    trace: Trace, pairs: Iterator[tuple[int, Decision, Decision]]
) -> Iterator[tuple[int, Decision, Decision]]:
    """The pairs; a script's error says at which trace and request of the battery it happened."""
    from simulator.userscripts.limiter import UserScriptError

    done = 0
    while True:
        try:
            item = next(pairs)
        except StopIteration:
            return
        except UserScriptError as exc:
            t, client = trace.requests[done]
            raise UserScriptError(
                f"{exc} (check: trace {trace.name!r}, request {done + 1} at t_ms={t}, "
                f"client {client!r})"
            ) from None
        done += 1
        yield item
