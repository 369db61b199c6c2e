"""Grading a limiter script: a battery of traces through the script and through a reference.

:func:`check` plays each trace of :func:`battery` through a user's script (on a fresh fake server
on the virtual clock) and through the named algorithm's reference, or through a second script,
decision by decision and field by field (:mod:`simulator.userscripts.fields`: ``allowed``,
``count``, ``remaining``, ``reset``, ``retry_after`` and the header fields they make), with the
same parameters (a bucket's ``burst``) on both sides. It names the first decision that differs:
which trace, which request, when, which client, the first field that differs, what was expected
and what came; and it counts every difference, trace by trace and field by field. The battery
holds the card's practice case, requests around window seams, many in one millisecond, idle gaps
longer than the window, many clients, odd client ids, and seeded random traffic; a script that
takes a ``cost`` is played one more trace of costly requests (:func:`traces_for`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.backends import FakeRedisBackend
from simulator.records import Decision
from simulator.userscripts.fields import (
    FIELDS,
    HEADER_FIELDS,
    TOLERANCES,
    Difference,
    compared,
    first_difference,
)

__all__ = ["Trace", "battery", "traces_for", "Mismatch", "Verdict", "check", "fields_of"]


@dataclass(frozen=True)
class Trace:
    """One trace of the battery: requests ``(t_ms, client)`` in time order, and the limit."""

    name: str
    limit: int
    window_ms: int
    requests: tuple[tuple[int, str], ...]
    costs: tuple[int, ...] = ()  # one per request (empty: each costs 1)


def _at(times: list[int], client: str = "c") -> tuple[tuple[int, str], ...]:
    return tuple((t, client) for t in times)


def battery(seed: int = 0) -> list[Trace]:
    """The traces a script is graded on (the same ones every time for one seed)."""
    traces = [
        Trace(
            "practice case: 100 at second 59, 100 at 61",
            100,
            60_000,
            _at([59_000] * 100 + [61_000] * 100),
        ),
        Trace(
            "around the seams: 1 ms before, on, 1 ms after",
            4,
            1000,
            _at(
                [
                    t
                    for k in (1, 2, 3, 5)
                    for t in (k * 1000 - 1, k * 1000, k * 1000 + 1)
                    for _ in range(2)
                ]
            ),
        ),
        Trace(
            "ties: ten in one millisecond, four times",
            3,
            1000,
            _at([t for t in (0, 1, 999, 1000) for _ in range(10)]),
        ),
        Trace(
            "idle gaps longer than the window",
            2,
            1000,
            _at([0, 0, 0, 3500, 3500, 3500, 9999, 10_000, 10_001]),
        ),
        Trace(
            "odd client ids",
            2,
            500,
            tuple((t, c) for t in (0, 10, 600) for c in ("", "{x}", "a:b", "ü", "%25", "a b", "{")),
        ),
    ]
    rng = np.random.default_rng(seed)
    clients = [f"user{i}" for i in range(50)]
    many = sorted(
        (int(t), clients[int(c)])
        for t, c in zip(rng.uniform(0, 20_000, 1500), rng.integers(0, 50, 1500), strict=True)
    )
    traces.append(Trace("many clients: 50 over 20 s", 5, 2000, tuple(many)))
    for k in range(12):
        n = int(rng.integers(20, 200))
        gaps = rng.choice([0, 1, 2, 7, 150, 999, 1000, 1001, 2500], size=n)
        who = rng.integers(0, 3, size=n)
        t = np.cumsum(gaps) + int(rng.integers(0, 10**12))
        limit, window = int(rng.integers(1, 7)), int(rng.choice([1000, 1500, 60_000]))
        trace = tuple((int(a), f"r{int(b)}") for a, b in zip(t, who, strict=True))
        traces.append(Trace(f"random traffic #{k + 1} (seed {seed})", limit, window, trace))
    return traces


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
        left = [f for f in (*FIELDS, *HEADER_FIELDS) if f not in self.fields]
        unsaid = f"; not in the reply, so not compared: {', '.join(left)}" if left else ""
        return (
            f"fields compared: {', '.join(self.fields)} "
            f"({how + '; ' if how else ''}the rest exact){unsaid}"
        )

    def __str__(self) -> str:
        if self.mismatch is None:
            return (
                f"agrees on {self.decisions:,} decisions over {self.traces} traces, "
                f"on every field\n{self.compared()}"
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

#: Requests that cost more than one (played only to scripts that take a ``cost``).
COST_TRACE = Trace(
    "costs: 1, 3, 9 and more than the limit",
    10,
    1000,
    _at([0, 1, 2, 3, 500, 999, 1000, 1001, 1002, 2500, 2501]),
    (3, 1, 9, 11, 2, 4, 9, 1, 3, 10, 1),
)


def takes_cost(name: str) -> bool:
    """True for a reference, or a script whose declaration passes the cost."""
    decl = getattr(ALGORITHMS[name], "declaration", None)
    return decl is None or "cost" in decl.argv


def traces_for(script: str, against: str, seed: int = 0) -> list[Trace]:
    """The traces ``script`` is graded on against ``against``: the battery, and the costly
    requests when both take a cost."""
    traces = battery(seed)
    if takes_cost(script) and takes_cost(against):
        traces.append(COST_TRACE)
    return traces


def own_params(name: str, params: Mapping[str, float]) -> dict[str, float]:
    """Those of ``params`` that algorithm ``name`` declares."""
    declared = {q.name for q in ALGORITHMS[name].params_declared}
    return {k: v for k, v in params.items() if k in declared}


def _script(name: str, trace: Trace, params: Mapping[str, float]) -> Decider:
    now = [0]
    limiter = ALGORITHMS[name](
        FakeRedisBackend(lambda: now[0]), trace.limit, trace.window_ms, **own_params(name, params)
    )

    def decide(client: str, t_ms: int, cost: int) -> Decision:
        now[0] = t_ms
        return limiter.decide(client, t_ms, cost)

    return decide


def _reference(name: str, trace: Trace, params: Mapping[str, float]) -> Decider:
    return REFERENCES[name](trace.limit, trace.window_ms, **own_params(name, params)).decide


def _pairs(trace: Trace, a: Decider, b: Decider) -> Iterator[tuple[int, Decision, Decision]]:
    costs = trace.costs or (1,) * len(trace.requests)
    for i, ((t, client), cost) in enumerate(zip(trace.requests, costs, strict=True), 1):
        yield i, a(client, t, cost), b(client, t, cost)


def fields_of(name: str) -> tuple[str, ...] | None:
    """The reply fields registered algorithm ``name`` returns: a script's declared ones, or
    None for one of Python's, which returns them all."""
    decl = getattr(ALGORITHMS[name], "declaration", None)
    return None if decl is None else tuple(decl.reply)


def _both(script: str, against: str, reference: bool) -> tuple[str, ...]:
    """The fields compared: those the script returns (and, for a second script, it too)."""
    mine = fields_of(script)
    theirs = None if reference else fields_of(against)
    if mine is None or theirs is None:
        return compared(mine if theirs is None else theirs)
    return compared(set(mine) & set(theirs))


def check(
    script: str,
    against: str,
    reference: bool = True,
    seed: int = 0,
    params: Mapping[str, float] | None = None,
    only: Iterable[str] | None = None,
) -> Verdict:
    """Grade registered script ``script`` against algorithm ``against``'s reference (or, with
    ``reference=False``, against the registered script ``against``): every field the script
    returns (:func:`~simulator.userscripts.fields.compared`), or ``only`` those of them (e.g.
    ``("allowed",)``: the decisions alone), for every request of every trace. ``params``
    (e.g. ``{"burst": 5}``) go to each side that declares them."""
    other = _reference if reference else _script
    params = dict(params or {})
    fields = _both(script, against, reference)
    if only is not None:
        fields = tuple(f for f in fields if f in set(only))
    decisions = 0
    first: Mismatch | None = None
    differences: dict[str, int] = {}
    by_field: dict[str, int] = {}
    traces = traces_for(script, against, seed)
    for trace in traces:
        mine, theirs = _script(script, trace, params), other(against, trace, params)
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
    return Verdict(decisions, len(traces), first, differences, fields, by_field)


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
