"""SimPy client processes: the only code that yields.

Each client spec becomes one process that waits (in simulated milliseconds), asks the limiter, and
reacts to the answer. ``ask(client)`` is provided by the model: it decides at the current
simulated millisecond and logs the decision. Each client draws from its own random generator.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from simulator.records import Decision
from simulator.scenario import BurstAt, ClientSpec, ConstantRate, OnOff, Poisson, Polite

__all__ = ["process_for", "register_process"]

Ask = Callable[[str], Decision]
Proc = Generator[simpy.Event, Any, None]


def constant(
    env: simpy.Environment, spec: ConstantRate, ask: Ask, rng: np.random.Generator
) -> Proc:
    if spec.rate_per_s == 0:
        return
    gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms)
    while True:
        ask(spec.name)
        yield env.timeout(gap_ms)


def poisson(env: simpy.Environment, spec: Poisson, ask: Ask, rng: np.random.Generator) -> Proc:
    if spec.rate_per_s == 0:
        return
    mean_gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms + rng.exponential(mean_gap_ms))
    while True:
        ask(spec.name)
        yield env.timeout(rng.exponential(mean_gap_ms))


def burst_at(env: simpy.Environment, spec: BurstAt, ask: Ask, rng: np.random.Generator) -> Proc:
    for at_s in sorted(spec.at_s):
        at_ms = at_s * 1000.0
        if at_ms > env.now:
            yield env.timeout(at_ms - env.now)
        for _ in range(spec.n):
            ask(spec.name)


def on_off(env: simpy.Environment, spec: OnOff, ask: Ask, rng: np.random.Generator) -> Proc:
    if spec.rate_per_s == 0:
        return
    mean_gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms)
    while True:
        phase_end = env.now + spec.on_ms
        while True:
            gap = rng.exponential(mean_gap_ms)
            if env.now + gap >= phase_end:
                break
            yield env.timeout(gap)
            ask(spec.name)
        yield env.timeout(phase_end - env.now + spec.off_ms)


def polite(env: simpy.Environment, spec: Polite, ask: Ask, rng: np.random.Generator) -> Proc:
    if spec.rate_per_s == 0:
        return
    gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms)
    while True:
        decision = ask(spec.name)
        while not decision.allowed:
            # Honour Retry-After; a server that says 0 (or "never", -1) gets one more millisecond.
            yield env.timeout(max(1, decision.retry_after_ms))
            decision = ask(spec.name)
        yield env.timeout(gap_ms)


_PROCESSES: dict[type[ClientSpec], Callable[..., Proc]] = {
    Polite: polite,
    Poisson: poisson,
    ConstantRate: constant,
    BurstAt: burst_at,
    OnOff: on_off,
}


def process_for(
    env: simpy.Environment, spec: ClientSpec, ask: Ask, rng: np.random.Generator
) -> Proc:
    """The SimPy process that plays ``spec``."""
    try:
        fn = _PROCESSES[type(spec)]
    except KeyError:
        raise TypeError(f"no client process for {type(spec).__name__}") from None
    return fn(env, spec, ask, rng)


def register_process(spec_type: type[ClientSpec], fn: Callable[..., Proc]) -> None:
    """Teach the model a new kind of client: ``fn(env, spec, ask, rng)`` is its process."""
    _PROCESSES[spec_type] = fn
