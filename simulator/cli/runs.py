"""Running against a server from the command line: its lifetime, signals, output on the way.

A replay against a real server can be stopped by the server dying, by Ctrl-C or by a SIGTERM
from a job runner. Whatever stops it, the decisions already made are on disk
(:class:`~simulator.output.DecisionCsv` writes each pipeline's rows as they come, or sorts them
back into input order on disk), and a server the program started is stopped (:func:`open_backend` closes the backend on the way out; SIGTERM is
turned into the same KeyboardInterrupt as Ctrl-C so that the way out is taken).

A server the program did not start may hold keys of an earlier run: a counter or a log left
there would silently change the decisions. :func:`leftover_keys` says, before the run, whether
any key the run will touch already exists.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from simulator.backends import Backend, make_backend
from simulator.backends.fakeserver import interrupt_scripts, resume_scripts
from simulator.backends.server import waiting_on
from simulator.backends.specs import BackendSpec
from simulator.engine.own_keys import KeyGroup, leftover_keys, leftover_keys_in_groups, run_keys
from simulator.playback.output import HEADER, DecisionCsv, OutputError, check_output

__all__ = [
    "open_backend",
    "sigterm_interrupts",
    "stop_between_pipelines",
    "stop_between_calls",
    "StopFlag",
    "DecisionCsv",
    "OutputError",
    "check_output",
    "HEADER",
    "run_keys",
    "leftover_keys",
    "leftover_keys_in_groups",
    "KeyGroup",
]


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM raises the KeyboardInterrupt Ctrl-C raises, so that the
    way out is taken: servers stopped, temporary files removed."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def open_backend(spec: str | BackendSpec, announce: bool = True) -> Iterator[Backend]:
    """The backend for ``spec``, closed (and its own server stopped) however the block ends."""
    with sigterm_interrupts():
        backend = make_backend(spec)
        try:
            if announce and not backend.virtual_time:
                print(f"backend {backend.describe()}", file=sys.stderr, flush=True)
            yield backend
        finally:
            backend.close()


def _left_waiting() -> bool:
    """True (and one line said) when the program waits for a server it did not start: the run
    ends at once then, the line saying what the server is left doing."""
    line = waiting_on()
    if line is not None:
        print(line, file=sys.stderr, flush=True)
    return line is not None


class StopFlag:
    """Set by Ctrl-C or SIGTERM; the replay stops at the next pipeline's end."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def check(self) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt(f"signal {self.signum}")


@contextlib.contextmanager
def stop_between_pipelines() -> Iterator[StopFlag]:
    """Ctrl-C and SIGTERM ask the replay to stop after the pipeline in flight.

    An interruption in the middle of a pipeline would leave the connection mid-reply and can hit
    C extension code at a bad moment; between pipelines every decision made is written and the
    way out is clean. A second signal interrupts at once.
    """
    flag = StopFlag()

    def handler(signum: int, frame: Any) -> None:
        if flag.signum is not None or _left_waiting():
            raise KeyboardInterrupt(f"signal {signum}")
        flag.signum = signum
        # a script stuck in a loop on the fake server would never let the pipeline end
        interrupt_scripts(KeyboardInterrupt(f"signal {signum}"))

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield flag
    finally:
        resume_scripts()
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def stop_between_calls(backend: Backend) -> Iterator[StopFlag]:
    """Ctrl-C and SIGTERM wait for the script call in flight, then stop the run.

    For runs that call the server one decision at a time (a simulation): a signal that comes
    during a call is kept until the reply is in; one that comes between calls (e.g. while a run
    on real time waits for its next request) stops the run at once. A second signal interrupts
    at once.
    """
    flag = StopFlag()
    in_call = False

    def handler(signum: int, frame: Any) -> None:
        if flag.signum is not None or not in_call or _left_waiting():
            raise KeyboardInterrupt(f"signal {signum}")
        flag.signum = signum
        interrupt_scripts(KeyboardInterrupt(f"signal {signum}"))  # nor the call end

    original: Callable[..., Any] = backend.call

    def call(*args: Any) -> Any:
        nonlocal in_call
        in_call = True
        try:
            return original(*args)
        finally:
            in_call = False
            flag.check()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    backend.call = call  # type: ignore[method-assign,assignment]
    try:
        yield flag
    finally:
        resume_scripts()
        del backend.call  # the class's own method again
        for sig, old in previous.items():
            signal.signal(sig, old)
