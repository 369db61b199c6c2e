"""Which arithmetic goes with which algorithm: the shipped ones, by their class.

An algorithm added to the package later has no line here until one is written for it: the
view then shows its trace alone, as for a user's script.

The table is keyed by the limiter class itself, not its name: a user's script or an algorithm
registered from elsewhere has its own class, and gets no arithmetic even where its name looks
like one of these (its script may do anything). :func:`arithmetic_for` then answers None, and
:func:`no_arithmetic` says why in one line.
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.algorithms.base import Limiter
from simulator.algorithms.echomq import EchoMQ
from simulator.algorithms.fixed_window import FixedWindow
from simulator.algorithms.gcra import GCRA
from simulator.algorithms.increx import IncrexFirstHit, IncrexGrid
from simulator.algorithms.multi_policy import MultiPolicy
from simulator.algorithms.sliding_counter import SlidingCounter
from simulator.algorithms.sliding_counter_all import SlidingCounterAll
from simulator.algorithms.sliding_log import SlidingLog
from simulator.algorithms.token_bucket import TokenBucket
from simulator.explain import counters, schedules
from simulator.explain.facts import Arithmetic, Facts

__all__ = ["ARITHMETIC", "arithmetic_for", "no_arithmetic"]

#: The shipped algorithms' arithmetic, by limiter class.
ARITHMETIC: dict[type[Limiter], Callable[[Facts], Arithmetic]] = {
    FixedWindow: counters.fixed_window,
    EchoMQ: counters.echomq,
    SlidingLog: schedules.sliding_log,
    SlidingCounter: counters.sliding_counter,
    SlidingCounterAll: counters.sliding_counter_all,
    TokenBucket: schedules.token_bucket,
    GCRA: schedules.gcra,
    IncrexFirstHit: counters.increx,
    IncrexGrid: counters.increx,
    MultiPolicy: counters.multi_policy,
}


def arithmetic_for(algorithm: type[Limiter], facts: Facts) -> Arithmetic | None:
    """The decision worked out with the traced numbers, or None for an algorithm not shipped."""
    work = ARITHMETIC.get(algorithm)
    return None if work is None else work(facts)


def no_arithmetic(algorithm: type[Limiter]) -> str:
    """Why an algorithm has no arithmetic, in one line."""
    return (
        f"no arithmetic for {algorithm.name}: this view works out only the scripts it knows "
        "(simulator/explain/arithmetic.py); the lines that ran and the calls are its own"
    )
