"""How the model runs its clients.

Each client spec has a SimPy process (in :mod:`simulator.engine.traffic`, with every other arrival shape)
that waits in simulated milliseconds, asks the limiter, and may react to the answer. ``ask(client)``
is provided by the model: it decides at the current simulated millisecond and logs the decision.
Each client draws from its own random generator.

Most clients never react to an answer (steady, Poisson, bursts, on/off): when they ask is known
before the run. A scenario with a million of them would hold a million suspended processes and
random generators before its first millisecond. So :func:`arrivals` plays such a client's very
process ahead of time on a :class:`Timeline` that only keeps time (the same float sums as SimPy's
``now + delay``, so the same instants), the generator is dropped, and one :func:`feeder` process
asks for all of them in time order. Only clients that react (``Polite``, and any kind registered
with ``reacts=True``) run as processes of their own. Cost and memory grow with requests, not with
clients.

Every client asks at the very instants its own process would. What the feeder orders its own way
is requests of different clients at the same instant: those played ahead come in client order
(the order of ``Scenario.clients``), and against a reacting client's request at that instant they
come in SimPy's order of the two processes. A process per client would order such ties by when
each one's wait began. Decisions differ only where a tie puts two requests on one counter in the
other order (two client specs with the same name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any

import numpy as np
import simpy

from simulator.engine.scenario import BurstAt, ClientSpec, ConstantRate, OnOff, Poisson, Polite
from simulator.engine.traffic import (
    Ask,
    Proc,
    burst_at,
    constant,
    constant_times,
    on_off,
    on_off_gaps,
    poisson,
    poisson_gaps,
    polite,
)

__all__ = ["process_for", "register_process", "reacts", "arrivals", "feeder", "Timeline"]

_PROCESSES: dict[type[ClientSpec], Callable[..., Proc]] = {
    Polite: polite,
    Poisson: poisson,
    ConstantRate: constant,
    BurstAt: burst_at,
    OnOff: on_off,
}


#: Client kinds whose process uses the answers it gets (they must run inside the simulation).
_REACTIVE: set[type[ClientSpec]] = {Polite}


def process_for(
    env: simpy.Environment, spec: ClientSpec, ask: Ask, rng: np.random.Generator
) -> Proc:
    """The SimPy process that plays ``spec``."""
    try:
        fn = _PROCESSES[type(spec)]
    except KeyError:
        raise TypeError(f"no client process for {type(spec).__name__}") from None
    return fn(env, spec, ask, rng)


def register_process(
    spec_type: type[ClientSpec], fn: Callable[..., Proc], reacts: bool = True
) -> None:
    """Teach the model a new kind of client: ``fn(env, spec, ask, rng)`` is its process.

    ``reacts=False`` promises that the process ignores what ``ask`` returns and reads nothing of
    ``env`` but ``now`` and ``timeout``: it is then played ahead of the run (see :func:`arrivals`).
    """
    _PROCESSES[spec_type] = fn
    if reacts:
        _REACTIVE.add(spec_type)
    else:
        _REACTIVE.discard(spec_type)


def reacts(spec: ClientSpec) -> bool:
    """True when the client's next request depends on the answers it got."""
    return type(spec) in _REACTIVE


class Timeline:
    """Stands in for the SimPy environment for a client that never reacts: only keeps time."""

    def __init__(self) -> None:
        self.now = 0.0

    def timeout(self, delay: float) -> float:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        return delay


def arrivals(spec: ClientSpec, rng: np.random.Generator, until_ms: float) -> np.ndarray:
    """When a client that never reacts asks, before ``until_ms``, played by its own process.

    SimPy's ``run(until=T)`` stops before the events at ``T``, so a request at exactly ``T`` is
    not made; the same holds here. Poisson, on/off and steady clients' instants come from the
    array forms of their processes (:func:`~simulator.engine.traffic.poisson_gaps`,
    :func:`~simulator.engine.traffic.on_off_gaps`, :func:`~simulator.engine.traffic.constant_times`: the same
    draws, drawn in blocks, and the same sums).
    """
    if type(spec) is Poisson and _PROCESSES[Poisson] is poisson and spec.rate_per_s > 0:
        return poisson_gaps(rng, 1000.0 / spec.rate_per_s, until_ms, spec.start_ms)
    if type(spec) is OnOff and _PROCESSES[OnOff] is on_off:
        return on_off_gaps(rng, spec, until_ms)
    if type(spec) is ConstantRate and _PROCESSES[ConstantRate] is constant:
        return constant_times(spec, until_ms)
    timeline, times = Timeline(), list[float]()
    env: Any = timeline  # the process asks the timeline for no more than now and timeout()
    ask: Any = lambda name: times.append(timeline.now)  # noqa: E731 - its answer is never read
    process: Iterator[Any] = process_for(env, spec, ask, rng)
    for delay in process:
        timeline.now = timeline.now + delay  # the sum SimPy makes: the same instant, bit for bit
        if timeline.now >= until_ms:
            break
    return np.array(times, dtype="float64")


def _delay_to(now: float, t: float) -> float:
    """The delay that brings SimPy from ``now`` to exactly ``t`` (``now + delay == t``)."""
    delay = t - now
    while now + delay < t:
        delay = float(np.nextafter(delay, np.inf))
    while now + delay > t:
        delay = float(np.nextafter(delay, -np.inf))
    return delay


def feeder(
    env: simpy.Environment,
    t_ms: np.ndarray,
    who: np.ndarray,
    names: list[str],
    ask: Ask,
    cost: np.ndarray | None = None,
) -> Proc:
    """Asks for ``names[who[i]]`` at ``t_ms[i]`` (sorted), each at exactly its instant, at cost
    ``cost[i]`` (1 each when None).

    On a virtual-time environment the clock is moved on directly while nothing else is
    scheduled before the next request (no timeout event per request; the same instants)."""
    advance = getattr(env, "advance", None)
    if advance is None:
        advance = _never
    costs = repeat(1) if cost is None else cost.tolist()
    for t, i, k in zip(t_ms.tolist(), who.tolist(), costs, strict=False):  # repeat() is endless
        if t > env.now and not advance(t):
            yield env.timeout(_delay_to(env.now, t))
        ask(names[i], k)


def _never(t: float) -> bool:
    return False
