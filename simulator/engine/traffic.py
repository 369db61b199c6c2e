"""Arrival shapes: when offered traffic asks, for every client of the model and every study.

Each shape exists here once, in the form its users need, drawn from one random generator per
client (seeded by the caller):

* SimPy processes, the model's clients: steady, Poisson, bursts at chosen instants, on/off and
  polite (the one that reacts: it waits the Retry-After it is given). A process waits in
  simulated milliseconds and calls ``ask(client)``, which decides at that instant.
* Vectorised traces, for the studies that feed limiters offered traffic directly (the accuracy
  families, the EchoMQ queue model) and for the model's own Poisson clients played ahead: arrays
  of instants in ms.

A Poisson process is drawn two ways, both exact. :func:`poisson_gaps` sums exponential gaps in
order, as the SimPy process does: for the same generator it gives the process's instants bit for
bit (a test holds them together), so a Poisson client of the model is played ahead without
running its process. :func:`poisson_by_count` draws how many requests fall in a span and then
where (uniform order statistics): cheaper for the accuracy study's crowds of clients, and the
form :func:`on_off_times` and :func:`diurnal_times` build on.

What a request costs (1, or drawn from a client's mix) comes from :func:`draw_costs`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from simulator.engine.scenario import ConstantRate, OnOff, Poisson, Polite
from simulator.records import Decision

__all__ = [
    "Ask",
    "Proc",
    "constant",
    "poisson",
    "burst_at",
    "on_off",
    "polite",
    "poisson_gaps",
    "on_off_gaps",
    "constant_times",
    "poisson_by_count",
    "on_off_times",
    "diurnal_times",
    "draw_costs",
]

#: ``ask(client, cost=1)``: decide one request of ``client`` now.
Ask = Callable[..., Decision]
Proc = Generator[simpy.Event, Any, None]


# --- SimPy processes -----------------------------------------------------------------------------


def constant(
    env: simpy.Environment, spec: ConstantRate, ask: Ask, rng: np.random.Generator
) -> Proc:
    """``rate_per_s`` requests a second, evenly spaced, from ``start_ms``."""
    if spec.rate_per_s == 0:
        return
    gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms)
    while True:
        ask(spec.name)
        yield env.timeout(gap_ms)


def poisson(env: simpy.Environment, spec: Poisson, ask: Ask, rng: np.random.Generator) -> Proc:
    """Independent requests at a mean ``rate_per_s``: exponential gaps, the first from ``start_ms``."""
    if spec.rate_per_s == 0:
        return
    mean_gap_ms = 1000.0 / spec.rate_per_s
    yield env.timeout(spec.start_ms + rng.exponential(mean_gap_ms))
    while True:
        ask(spec.name)
        yield env.timeout(rng.exponential(mean_gap_ms))


def burst_at(env: simpy.Environment, spec: Any, ask: Ask, rng: np.random.Generator) -> Proc:
    """The burst player: ``n`` requests at once at each ``(at_ms, n)`` of ``spec.bursts()``."""
    for at_ms, n in spec.bursts():
        if at_ms > env.now:
            yield env.timeout(at_ms - env.now)
        for _ in range(n):
            ask(spec.name)


def on_off(env: simpy.Environment, spec: OnOff, ask: Ask, rng: np.random.Generator) -> Proc:
    """Poisson at ``rate_per_s`` for ``on_ms``, then silent for ``off_ms``, over and over."""
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
    """Steady, but a refused client waits the Retry-After it was given and asks again (at the
    same cost). Told "never" (Retry-After -1: the request costs more than the limiter can ever
    admit), it gives that request up and goes on with the next."""
    if spec.rate_per_s == 0:
        return
    gap_ms = 1000.0 / spec.rate_per_s
    fixed = spec.cost if isinstance(spec.cost, int) else None
    yield env.timeout(spec.start_ms)
    while True:
        cost = fixed if fixed is not None else int(draw_costs(spec.cost, rng, 1)[0])
        decision = ask(spec.name, cost)
        while not decision.allowed and decision.retry_after_ms >= 0:
            # Honour Retry-After to the millisecond: every built-in limiter's is true (the
            # header property test holds them to it). Only a user's script can refuse and say
            # 0; asked again at the same instant it would answer alike for ever, so the
            # clock moves on by its step.
            yield env.timeout(decision.retry_after_ms or 1)
            decision = ask(spec.name, cost)
        yield env.timeout(gap_ms)


# --- costs ---------------------------------------------------------------------------------------


def draw_costs(
    cost: int | tuple[tuple[int, float], ...], rng: np.random.Generator | None, n: int
) -> np.ndarray:
    """``n`` requests' costs (int64): all ``cost``, or drawn independently from the mix."""
    if isinstance(cost, int):
        return np.full(n, cost, dtype="int64")
    if rng is None:
        raise ValueError("draw_costs: a cost mix needs a random generator")
    values = np.array([c for c, _ in cost], dtype="int64")
    weights = np.array([w for _, w in cost], dtype="float64")
    return values[rng.choice(len(values), size=n, p=weights / weights.sum())]


# --- vectorised traces ---------------------------------------------------------------------------


def poisson_gaps(
    rng: np.random.Generator,
    mean_gap_ms: float,
    until_ms: float,
    start_ms: float = 0.0,
    chunk: int | None = None,
) -> np.ndarray:
    """The instants (float ms, before ``until_ms``) of a Poisson process started at ``start_ms``.

    Gaps are drawn from ``rng`` in the order :func:`poisson` draws them and summed one after the
    other, the sums SimPy makes (``now + delay``): the same instants, bit for bit. They are drawn
    ``chunk`` at a time (default: 1.5 times the mean count, plus 20).
    """
    if chunk is None:
        chunk = int(max(0.0, until_ms - start_ms) / mean_gap_ms * 1.5) + 20
    gaps = rng.exponential(mean_gap_ms, chunk)
    gaps[0] = start_ms + gaps[0]
    t = np.cumsum(gaps)
    parts = [t]
    while t[-1] < until_ms:  # rare: more requests than 1.5x the mean; continue the same sums
        t = np.cumsum(np.concatenate([t[-1:], rng.exponential(mean_gap_ms, chunk)]))[1:]
        parts.append(t)
    t = np.concatenate(parts) if len(parts) > 1 else t
    return t[t < until_ms]


def on_off_gaps(
    rng: np.random.Generator, spec: OnOff, until_ms: float, chunk: int = 1024
) -> np.ndarray:
    """The instants (float ms, before ``until_ms``) at which :func:`on_off` asks, bit for bit.

    Its gaps are drawn from ``rng`` ``chunk`` at a time (the same values, in the same order, as
    one draw per gap) and summed as SimPy sums them; a gap that would end past its phase is
    drawn and dropped, as the process drops it.
    """
    times: list[float] = []
    if spec.rate_per_s == 0:
        return np.array(times, dtype="float64")
    mean_gap_ms, on_ms, off_ms = 1000.0 / spec.rate_per_s, spec.on_ms, spec.off_ms
    gaps: list[float] = []
    k = 0
    now = 0.0 + spec.start_ms
    while now < until_ms:
        phase_end = now + on_ms
        while True:
            if k == len(gaps):
                gaps, k = rng.exponential(mean_gap_ms, chunk).tolist(), 0
            gap = gaps[k]
            k += 1
            if now + gap >= phase_end:
                break
            now = now + gap
            if now >= until_ms:
                return np.array(times, dtype="float64")
            times.append(now)
        now = now + (phase_end - now + off_ms)
    return np.array(times, dtype="float64")


def constant_times(spec: ConstantRate, until_ms: float) -> np.ndarray:
    """The instants (float ms, before ``until_ms``) at which :func:`constant` asks, bit for bit:
    ``start_ms``, then the gap added again and again (``cumsum`` adds in order, as SimPy does)."""
    if spec.rate_per_s == 0 or spec.start_ms >= until_ms:
        return np.zeros(0, dtype="float64")
    gap_ms = 1000.0 / spec.rate_per_s
    n = int((until_ms - spec.start_ms) / gap_ms) + 2  # one more than can fit
    t = np.cumsum(np.concatenate([[0.0 + spec.start_ms], np.full(n, gap_ms)]))
    return t[t < until_ms]


def poisson_by_count(
    rng: np.random.Generator, rate_per_ms: float, duration_ms: float
) -> np.ndarray:
    """A Poisson process on ``[0, duration_ms)``: how many, then where (sorted float ms)."""
    k = rng.poisson(rate_per_ms * duration_ms)
    return np.sort(rng.uniform(0, duration_ms, k))


def on_off_times(
    rng: np.random.Generator,
    mean_rate_per_ms: float,
    duration_ms: int,
    on_ms: int = 12_000,
    period_ms: int = 60_000,
) -> np.ndarray:
    """Poisson during ``on_ms`` of every ``period_ms`` (at the rate that keeps the mean), silent
    otherwise; each client starts at its own phase."""
    on_time = poisson_by_count(
        rng, mean_rate_per_ms * period_ms / on_ms, duration_ms * on_ms // period_ms + on_ms
    )
    phase = rng.uniform(0, period_ms)
    t = (on_time // on_ms) * period_ms + on_time % on_ms + phase - period_ms
    return t[(t >= 0) & (t < duration_ms)]


def diurnal_times(
    rng: np.random.Generator, mean_rate_per_ms: float, duration_ms: int
) -> np.ndarray:
    """A day compressed into the run: rate(t) = mean * (1 - 0.9 cos(2 pi t / duration)), drawn
    by thinning a Poisson process at the peak rate; clients do not all peak at the same second."""
    peak = mean_rate_per_ms * 1.9
    t = poisson_by_count(rng, peak, duration_ms)
    shift = rng.uniform(-0.05, 0.05) * duration_ms
    rate = mean_rate_per_ms * (1 - 0.9 * np.cos(2 * np.pi * (t + shift) / duration_ms))
    return t[rng.uniform(0, peak, len(t)) < rate]
