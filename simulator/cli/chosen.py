"""Where a replay or a comparison runs when ``--backend`` is not named, and where it says so.

:mod:`simulator.backends.choice` picks the backend and the sentence saying why. A command makes
the choice once its options were checked (:func:`choose`) and opens the server
(:func:`open_chosen`): should the embedded Valkey not start, the fake server decides in its
place, and the line says that instead. The line is said with the run's report, once the run
finished (:func:`say_chosen`): compare's first line on standard output, replay's line before
its summary on standard error. A trace refused at its line N, or a user's script stopped by its
budget half-way, is found after the server opened; said any earlier, the line would make two
messages of one.

A chosen Valkey runs the keys' TTLs on the wall clock. Once its run is done,
:func:`note_expired` reads how many keys that server expired on its own clock
(:func:`~simulator.backends.embedded.expired_keys`); when any did, :func:`decide_again` puts
the fake server in its place, the line saying why, and the command decides the run again there.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from simulator.backends import Backend, BackendError
from simulator.backends.choice import (
    BackendChoice,
    decided_again,
    fallen_back,
    for_command,
    spec_of,
    start_cause,
)
from simulator.backends.embedded import expiry_counted_when_read
from simulator.cli.runs import open_backend

__all__ = [
    "choose",
    "chosen",
    "open_chosen",
    "say_chosen",
    "backend_line",
    "tried_here",
    "note_expired",
    "decide_again",
]


def choose(args: argparse.Namespace, algorithms: Sequence[Any], **how: Any) -> None:
    """``args.backend`` when ``--backend`` was not named: the fastest that decides alike, the
    choice kept as ``args.backend_choice`` (None when ``--backend`` or the environment named
    one). ``how``: :func:`~simulator.backends.choice.default_backend`'s ``shards`` and
    ``window_ms``."""
    args.backend_choice = None
    args.backend_named = args.backend is not None
    if args.backend is None:
        args.backend_choice = for_command(algorithms, **how)
        args.backend = spec_of(args.backend_choice)


def chosen(args: argparse.Namespace) -> BackendChoice | None:
    """The choice the command made, or None when the backend was named."""
    choice = vars(args).get("backend_choice")
    return choice if isinstance(choice, BackendChoice) else None


@contextlib.contextmanager
def open_chosen(args: argparse.Namespace) -> Iterator[Backend]:
    """``args.backend``, opened and closed as :func:`~simulator.cli.runs.open_backend` does (the
    server's own line is said only for a backend the command line named: a chosen one has its
    line with the report). A chosen server that does not start gives way to the fake server,
    ``args.backend`` and ``args.backend_choice`` changed to say so; a named one is a failure."""
    choice = chosen(args)
    with contextlib.ExitStack() as stack:
        try:
            backend = stack.enter_context(open_backend(args.backend, choice is None))
        except BackendError as exc:
            if choice is None or choice.spec.virtual_time:
                raise
            args.backend_choice = fallen_back(choice, start_cause(exc))
            args.backend = args.backend_choice.spec
            backend = stack.enter_context(open_backend(args.backend, False))
        expiry_counted_when_read(backend)  # a server of the run's own: counts what matters
        yield backend


def note_expired(args: argparse.Namespace, count: int | None) -> None:
    """Adds ``count`` (keys a server of this run expired on its own clock; None: not known,
    the fake server's or somebody else's) to ``args.keys_expired``."""
    if count:
        args.keys_expired = vars(args).get("keys_expired", 0) + count


def decide_again(args: argparse.Namespace) -> bool:
    """True when the chosen server expired keys on its own clock during the run: then
    ``args.backend`` is the fake server and the line says why (the command decides the whole run
    again there, one backend for all of it); False otherwise."""
    choice, expired = chosen(args), vars(args).get("keys_expired", 0)
    if choice is None or choice.spec.virtual_time or not expired:
        return False
    args.backend_choice = decided_again(choice, expired)
    args.backend = args.backend_choice.spec
    args.keys_expired = 0
    return True


def tried_here(args: argparse.Namespace) -> None:
    """A chosen server that each Dask task starts for itself, started and stopped here once
    first: one that does not start gives way to the fake server for every task, as
    :func:`open_chosen` does for a run here (a task whose own server then fails on its worker
    fails the run: a fake server for that task alone would mix two backends in one scorecard)."""
    if chosen(args) is not None and not args.backend.virtual_time:
        with open_chosen(args):
            pass


def backend_line(args: argparse.Namespace) -> str:
    """Which backend the run decided on, and why, in one line: the chosen backend's line (the
    one :func:`say_chosen` says), or the name of the option or variable that named it."""
    from simulator.backends.choice import DEFAULT_ENV

    choice = chosen(args)
    if choice is not None:
        return choice.line
    if vars(args).get("backend_named", True):
        return f"backend {args.backend} (named: --backend {args.backend})"
    return f"backend {args.backend} (named: {DEFAULT_ENV}={args.backend})"


def say_chosen(args: argparse.Namespace, stream: TextIO) -> bool:
    """The chosen backend's line on ``stream``; whether there was one to say."""
    choice = chosen(args)
    if choice is None:
        return False
    print(choice.line, file=stream, flush=True)
    return True
