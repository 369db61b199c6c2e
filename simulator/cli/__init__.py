"""Command line: ``python -m simulator {burst,replay,sweep,charts,memory,check,bench} ...``.

Each command is a module here with a ``register(subparsers)`` and its ``cmd_*``; :data:`COMMANDS`
lists them. Bad input (an unknown algorithm, a limit of 0, a malformed trace line) gets one message
naming the field or line and exit status 2, never a traceback; so does a script that runs longer
than its budget or needs more memory than its cap (the script's doing, not the server's); a server
that fails, exit status 1; Ctrl-C or SIGTERM, one line and 128 + the signal's number, within a
second even while a script loops on the fake server.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from simulator.backends import BackendError, ScriptError
from simulator.checks import ConfigError
from simulator.cli import bench, burst, charts, check, compare, memory, replay, sweep
from simulator.cli.args import UsageError, script_options, split_script
from simulator.playback.traces import TraceError
from simulator.sweeps.run import SweepFailed

__all__ = ["main", "build_parser", "UsageError", "COMMANDS"]

#: The subcommands, in the order ``--help`` lists them.
COMMANDS = (burst, replay, compare, sweep, charts, memory, check, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator",
        description="Rate-limit window workbench: real Lua limiters on a SimPy virtual clock.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


#: The last SIGTERM this process got (a library may re-raise KeyboardInterrupt without its text).
_TERMINATED: list[int] = []


def _terminate(signum: int, frame: Any) -> None:
    _TERMINATED.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None, *, restore_signals: bool = True) -> int:
    """Run one command; the exit status. ``restore_signals=False`` (the program itself, not a
    caller in Python) leaves Ctrl-C and SIGTERM ignored once one has stopped the run, so that
    the way out is not interrupted again."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # charts are files here, never windows
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        registered = _register_scripts(argv)
    except ConfigError as exc:
        command = next((a for a in argv if not a.startswith("-")), "")
        print(f"python -m simulator {command}: error: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(argv, restore_signals)
    finally:
        from simulator.algorithms import ALGORITHMS

        for name in registered:  # a caller in Python gets its registry back as it was
            ALGORITHMS.pop(name, None)


def _register_scripts(argv: Sequence[str]) -> list[str]:
    """Register every ``--script`` of ``argv`` as an algorithm; their names."""
    values = script_options(argv)
    if not values:
        return []
    from simulator.userscripts.limiter import register_scripts

    return register_scripts([split_script(value) for value in values])


def _run(argv: Sequence[str], restore_signals: bool) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM (a job runner, `kill`) takes the same way out as Ctrl-C: servers stopped, files
    # closed, one message. Commands that must finish a call first install their own handler.
    _TERMINATED.clear()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args) or 0)
    except (UsageError, ConfigError, TraceError) as exc:
        print(f"{parser.prog} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (BackendError, ScriptError, SweepFailed) as exc:
        print(f"{parser.prog} {args.command}: failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        calm = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        by_term = _TERMINATED or str(exc) == f"signal {int(signal.SIGTERM)}"
        signum = signal.SIGTERM if by_term else signal.SIGINT
        print(
            f"{parser.prog} {args.command}: interrupted ({signal.Signals(signum).name})",
            file=sys.stderr,
        )
        if restore_signals:
            signal.signal(signal.SIGINT, calm[signal.SIGINT])
        return 128 + signum
    finally:
        if restore_signals:
            signal.signal(signal.SIGTERM, previous)
