"""Telemetry: who wants to hear that a job was deferred by the queue budget.

When a worker dequeues a job from an EchoMQ queue whose budget is spent, it defers the job and
emits ``[:emq, :rate_limit, :hit]`` with the queue, the delay and the time. Dashboards, alerts and
notebooks subscribe with :func:`attach` and leave with :func:`detach`. Nobody listening is the
usual case in production, so it must cost nothing: each event keeps its handlers in a tuple, and
the emitting code tests that tuple before it builds or sends anything::

    hit = telemetry.event(telemetry.RATE_LIMIT_HIT)     # once, at set-up
    ...
    if hit.handlers:                                    # the hot path: one attribute test
        hit.emit(queue, delay_ms, t_ms)

A :class:`Recorder` is a handler that keeps the events so they land in a DataFrame. A handler that
raises is detached (with a warning) so a broken listener never breaks the workers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd

__all__ = [
    "RATE_LIMIT_HIT",
    "EVENT_DTYPES",
    "Event",
    "Handler",
    "Recorder",
    "event",
    "attach",
    "detach",
    "attached",
]

EventName = tuple[str, ...]
#: ``handler(queue, delay_ms, t_ms)``
Handler = Callable[[str, int, int], None]

RATE_LIMIT_HIT: EventName = ("emq", "rate_limit", "hit")

EVENT_DTYPES: dict[str, str] = {
    "event": "string",
    "queue": "string",
    "delay_ms": "int64",
    "t_ms": "int64",
}


class Event:
    """One named event and the handlers attached to it (an immutable tuple, swapped on change)."""

    __slots__ = ("name", "handlers")

    def __init__(self, name: EventName) -> None:
        self.name = name
        self.handlers: tuple[Handler, ...] = ()

    def emit(self, queue: str, delay_ms: int, t_ms: int) -> None:
        """Call every handler; callers test :attr:`handlers` first to skip this when empty."""
        for handler in self.handlers:
            try:
                handler(queue, delay_ms, t_ms)
            except Exception as exc:  # noqa: BLE001 - a listener must not break the workers
                self.handlers = tuple(h for h in self.handlers if h is not handler)
                warnings.warn(
                    f"telemetry: handler {handler!r} on {_show(self.name)} raised {exc!r}; "
                    "it was detached",
                    RuntimeWarning,
                    stacklevel=2,
                )


_EVENTS: dict[EventName, Event] = {}


def _show(name: EventName) -> str:
    return "[" + ", ".join(":" + part for part in name) + "]"


def event(name: EventName) -> Event:
    """The :class:`Event` called ``name`` (the same object every time)."""
    name = tuple(name)
    if not name or not all(isinstance(part, str) and part for part in name):
        raise ValueError(f"event: a name is a non-empty tuple of non-empty strings, got {name!r}")
    found = _EVENTS.get(name)
    if found is None:
        found = _EVENTS[name] = Event(name)
    return found


def attach(name: EventName, handler: Handler) -> None:
    """Call ``handler(queue, delay_ms, t_ms)`` on every ``name`` event from now on."""
    if not callable(handler):
        raise TypeError(f"attach: handler must be callable, got {handler!r}")
    ev = event(name)
    if any(h is handler for h in ev.handlers):
        raise ValueError(f"attach: {handler!r} is already attached to {_show(ev.name)}")
    ev.handlers = (*ev.handlers, handler)


def detach(name: EventName, handler: Handler) -> bool:
    """Stop calling ``handler`` on ``name``; False when it was not attached."""
    ev = event(name)
    kept = tuple(h for h in ev.handlers if h is not handler)
    found = len(kept) != len(ev.handlers)
    ev.handlers = kept
    return found


@contextmanager
def attached(name: EventName, handler: Handler) -> Iterator[Handler]:
    """``with attached(RATE_LIMIT_HIT, recorder): ...`` attaches for the block only."""
    attach(name, handler)
    try:
        yield handler
    finally:
        detach(name, handler)


class Recorder:
    """A handler that keeps every event it hears, for :meth:`frame`."""

    def __init__(self, name: EventName = RATE_LIMIT_HIT) -> None:
        self.name = _show(tuple(name))
        self.rows: list[tuple[str, int, int]] = []

    def __call__(self, queue: str, delay_ms: int, t_ms: int) -> None:
        self.rows.append((queue, delay_ms, t_ms))

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        """One row per event: event, queue, delay_ms, t_ms."""
        frame = pd.DataFrame(self.rows, columns=["queue", "delay_ms", "t_ms"])
        frame.insert(0, "event", self.name)
        return frame.astype(EVENT_DTYPES)
