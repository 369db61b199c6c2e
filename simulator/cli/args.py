"""Argument types and shared options of the command line, with their units in ``--help``.

Each type turns one option's text into a value or raises ``ArgumentTypeError`` naming the bound,
so argparse answers with one line naming the option and exit status 2 before anything runs.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from simulator.algorithms import ALGORITHMS
from simulator.checks import MAX_LIMIT, MAX_T_MS, MAX_WINDOW_MS
from simulator.engine.sizes import machine_bytes

__all__ = [
    "UsageError",
    "positive_int",
    "seed_number",
    "counted",
    "machine_bytes",
    "out_folder",
    "limit_count",
    "positive_float",
    "nonneg_float",
    "window_seconds",
    "second_of_run",
    "algorithm_name",
    "add_limit_options",
    "backend_spec",
    "add_backend_options",
    "add_foreign_options",
    "print_time_notes",
    "without_commands",
    "add_param_option",
    "params_for",
    "scheduler_address",
    "add_scheduler_options",
    "add_script_option",
    "script_options",
    "split_script",
]


class UsageError(Exception):
    """Bad input from the command line; exit status 2."""


def positive_int(text: str) -> int:
    return _integer(text, 1, None)


def _quoted(text: str) -> str:
    """What the user typed, as a message quotes it: at most 40 characters of it."""
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text):,} characters)"


def _integer(text: str, minimum: int, maximum: int | None) -> int:
    wanted = (
        f"an integer >= {minimum}"
        if maximum is None
        else f"an integer from {minimum} to {maximum:,}"
    )
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {_quoted(text)}") from None
    if value < minimum or (maximum is not None and value > maximum):
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {_quoted(text)}")
    return value


#: The most LocalCluster workers: four per core (each is a process with its own memory).
MAX_WORKERS = max(8, 4 * (os.cpu_count() or 1))

#: The largest seed: numpy's generators take any integer >= 0; 64 bits is plenty.
MAX_SEED = 2**64 - 1


def seed_number(text: str) -> int:
    """A seed of random traffic: a whole number from 0 to :data:`MAX_SEED`."""
    return _integer(text, 0, MAX_SEED)


def counted(maximum: int) -> Any:
    """An argument type: a count from 1 to ``maximum`` (what fits in this program's memory)."""

    def count(text: str) -> int:
        return _integer(text, 1, maximum)

    count.__name__ = "count"  # argparse names the type in its own messages
    return count


def out_folder(text: str) -> str:
    """A folder the program may write into, checked before anything runs and without creating
    it: an existing folder must take a new file; a missing one, the nearest folder above it."""
    path = os.path.abspath(text)
    probe = path
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        what = "is a file" if probe == path else f"cannot be made: {probe} is a file"
        raise argparse.ArgumentTypeError(f"{text}: {what}, not a folder")
    try:  # access() says yes to root on a read-only file system; a real file says the truth
        with tempfile.TemporaryFile(dir=probe, prefix=".write-check-"):
            pass
    except OSError as exc:
        where = "" if probe == path else f" (the nearest existing folder, {probe})"
        raise argparse.ArgumentTypeError(
            f"{text}: cannot be written{where} ({exc.strerror})"
        ) from None
    return text


def limit_count(text: str) -> int:
    """A limit per window: 1 to MAX_LIMIT (scripts count in Lua numbers, exact below 2^53)."""
    return _integer(text, 1, MAX_LIMIT)


def _number(text: str, minimum: float, inclusive: bool, maximum: float | None = None) -> float:
    wanted = f"a number {'>=' if inclusive else '>'} {minimum:g}"
    if maximum is not None:
        wanted += f" and <= {maximum:,.0f}"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {_quoted(text)}") from None
    if (
        not math.isfinite(value)
        or value < minimum
        or (value == minimum and not inclusive)
        or (maximum is not None and value > maximum)
    ):
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {_quoted(text)}")
    return value


def positive_float(text: str) -> float:
    return _number(text, 0, inclusive=False)


def nonneg_float(text: str) -> float:
    return _number(text, 0, inclusive=True)


def window_seconds(text: str) -> float:
    """A window in seconds that is a whole number of milliseconds from 1 ms to MAX_WINDOW_MS."""
    seconds = _number(text, 0, inclusive=False, maximum=MAX_WINDOW_MS / 1000)
    if round(seconds * 1000) < 1:
        raise argparse.ArgumentTypeError(
            f"must be at least 0.001 (one millisecond: scripts count whole ms), got {text!r}"
        )
    return seconds


def second_of_run(text: str) -> float:
    """A time in the run, in seconds from its start (>= 0, within what a script can hold)."""
    return _number(
        text, 0, inclusive=True, maximum=(MAX_T_MS - 1) / 1000
    )  # the run ends 1 ms later


def algorithm_name(text: str) -> str:
    if text not in ALGORITHMS:
        raise argparse.ArgumentTypeError(
            f"unknown algorithm {text!r}; choose from {', '.join(ALGORITHMS)}"
        )
    return text


def add_limit_options(
    p: argparse.ArgumentParser, limit: int | None, window_s: float | None
) -> None:
    p.add_argument(
        "--limit",
        type=limit_count,
        default=limit,
        required=limit is None,
        help=f"requests allowed per window (integer, 1 to {MAX_LIMIT:,})"
        + (f"; default {limit}" if limit else ""),
    )
    p.add_argument(
        "--window",
        type=window_seconds,
        default=window_s,
        required=window_s is None,
        metavar="SECONDS",
        help="window length in seconds (0.001 to "
        f"{MAX_WINDOW_MS / 1000:,.0f}; rounded to whole ms)"
        + (f"; default {window_s:g}" if window_s else ""),
    )


def backend_spec(text: str) -> Any:
    """The ``--backend`` text, read once into a BackendSpec (what it is: virtual time or not,
    a server the program starts or somebody else's)."""
    from simulator.backends.specs import BACKEND_SPECS, is_spec, resolve_spec

    if is_spec(text):
        return resolve_spec(text)
    raise argparse.ArgumentTypeError(
        f"unknown backend {text!r}; choose from {', '.join(BACKEND_SPECS)}"
    )


#: ``--backend``'s default where the command chooses (compare and replay; simulator.cli.chosen).
_CHOSEN_DEFAULT = (
    "Default: the fastest backend that decides as the fake server does, with one line saying "
    "which and why ('backend valkey (default): ...', with the report once the run is done): "
    "valkey when every algorithm takes its time from now_ms in ARGV; fakeredis when one "
    "follows the server's clock (echomq, increx, a library reading the server's TIME, a "
    "user's script), for a window under 1 s, with --shards, or when valkey is not installed "
    "or does not start; a run in which valkey expired a key on its own clock is decided "
    "again on fakeredis. SIMULATOR_BACKEND_DEFAULT=fakeredis (or another SPEC) makes that SPEC "
    "the default, as if --backend named it"
)


def add_backend_options(p: argparse.ArgumentParser, chosen: bool = False) -> None:
    """``--backend`` and the options that go with it. ``chosen``: the command picks the
    backend itself when ``--backend`` is not named (``args.backend`` is None then)."""
    p.add_argument(
        "--backend",
        type=backend_spec,
        default=None if chosen else backend_spec("fakeredis"),
        metavar="SPEC",
        help="where the scripts run: fakeredis (the fake server, on the simulated clock), "
        "valkey (starts an embedded valkey-server on 127.0.0.1), cluster (starts a 3-master "
        "Valkey Cluster), redis://HOST:PORT/DB or redis+cluster://HOST:PORT (a running server). "
        + (_CHOSEN_DEFAULT if chosen else "Default: fakeredis")
        + ". On a real server an algorithm that takes its time from now_ms runs on simulated "
        "time (its decisions do not depend on the server's clock); echomq, whose window is the "
        "key's TTL, runs on real time. "
        "A server the program starts takes only clients with the random password the program "
        "holds (valkey's own clients also connect through a unix socket of mode 0700); a process "
        "of the same user can still read that password (its config file, /proc)",
    )
    p.add_argument(
        "--max-realtime",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="longest real-time run accepted for echomq on a real server (default 10)",
    )
    add_foreign_options(p)
    p.add_argument(
        "--reuse-keys",
        action="store_true",
        help="on a server the program did not start, run even if keys this run uses exist "
        "already (left by an earlier run, they change the decisions; without this flag the "
        "run is refused)",
    )


def add_foreign_options(p: argparse.ArgumentParser) -> None:
    """The two risks a run on a server the program did not start takes only when told to."""
    p.add_argument(
        "--run-script-on-foreign-server",
        action="store_true",
        help="let your --script run on a server the program did not start (a redis:// URL), "
        "where other programs keep their data: RISKY. The guard stops mistakes, not a script "
        "written to get round it, and a script that loops holds the server for every client "
        "(one that wrote first until the server is shut down). The script first runs over the "
        "same requests on the fake server, within its time and memory budgets, and the run "
        "stops there on a loop, an error or a write outside its keys; then its calls go one at "
        "a time, each within the time budget, until they have shown they answer in time",
    )
    p.add_argument(
        "--allow-eviction",
        action="store_true",
        help="run on a server the program did not start even though its eviction policy could "
        "evict other programs' keys to make room for this run's (maxmemory with an allkeys-* "
        "policy, or a volatile-* one while keys have TTLs); without it such a server is refused",
    )


def print_time_notes(algorithms: Sequence[str], backend: Any) -> None:
    from simulator.algorithms import ALGORITHMS
    from simulator.engine.realtime import time_note

    if not backend.virtual_time:
        for algorithm in algorithms:
            print(time_note(ALGORITHMS[algorithm], backend), file=sys.stderr)


def without_commands(algorithms: Sequence[str], backend: Any) -> tuple[list[str], str | None]:
    """The algorithms whose call is a server command this server lacks (INCREX before Redis
    8.8, on Valkey 9.1), and the one line that says so (None when every one can run)."""
    missing: dict[str, list[str]] = {}
    known: dict[str, bool] = {}
    for algorithm in algorithms:
        for command in ALGORITHMS[algorithm].commands:
            if command not in known:
                # PX 0 is refused before any key is touched where the command exists
                probe = ("rl:probe:{increx}", "PX", "0") if command == "INCREX" else ()
                known[command] = backend.lacks(command, probe)
            if known[command]:
                missing.setdefault(command, []).append(algorithm)
                break
    if not missing:
        return [], None
    skipped = [a for names in missing.values() for a in names]
    what = ", ".join(sorted(missing))
    line = (
        f"{', '.join(skipped)}: not run, {backend.name} has no {what} (Redis 8.8's bounded "
        "increment; fakeredis, the default backend, has it)"
    )
    return skipped, line


def _param(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not sep or not name or not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be NAME=NUMBER, got {_quoted(text)}")
    return name, int(number) if number.is_integer() and "." not in value else number


def add_param_option(p: argparse.ArgumentParser) -> None:
    declared = sorted({q.name for cls in ALGORITHMS.values() for q in cls.params_declared})
    p.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an algorithm's own parameter beside limit and window (repeatable; each algorithm "
        "takes those it declares, the rest take their defaults); declared: "
        + (", ".join(declared) or "none yet"),
    )


def params_for(
    algorithm: str, pairs: Sequence[tuple[str, float]], *, strict: bool
) -> dict[str, float]:
    """The ``--param`` values ``algorithm`` declares; ``strict``: any other name is an error."""
    declared = {q.name for q in ALGORITHMS[algorithm].params_declared}
    if strict:
        for name, _ in pairs:
            if name not in declared:
                raise UsageError(
                    f"--param {name}: {algorithm} has no such parameter "
                    f"(its own: {', '.join(sorted(declared)) or 'none'})"
                )
    return {name: value for name, value in pairs if name in declared}


def scheduler_address(text: str) -> str:
    from simulator.checks import ConfigError
    from simulator.engine.workers import check_scheduler

    try:
        return str(check_scheduler(text))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("scheduler: ")) from None


def add_scheduler_options(
    p: argparse.ArgumentParser, what: str = "the tasks", workers: bool = True
) -> None:
    p.add_argument(
        "--scheduler",
        type=scheduler_address,
        default=None,
        metavar="ADDRESS",
        help=f"where {what} run: tcp://HOST:PORT (a running Dask scheduler; every worker needs "
        "this package installed), local (default: a LocalCluster with one worker process per "
        "core, started and stopped with the command) or serial (here, one after another)",
    )
    if not workers:
        return
    p.add_argument(
        "--workers",
        type=counted(MAX_WORKERS),
        default=None,
        metavar="N",
        help=f"worker processes of the LocalCluster (default: one per core; at most {MAX_WORKERS}, "
        "four per core of this machine: each is a Python process of its own)",
    )


def add_script_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--script",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="your own limiter script, run beside the built-in algorithms as NAME (default: the "
        "file's name); its declaration (how to call it) is a --[[ ratelimit ]] block at its top "
        "or FILE.toml beside it, see docs/your_script.md (repeatable)",
    )


def script_options(argv: Sequence[str]) -> list[str]:
    """The values of every ``--script`` in ``argv`` (read before the parser is built, so that the
    scripts are algorithms when ``--algorithm`` is checked)."""
    values, it = [], iter(argv)
    for token in it:
        if token == "--":
            break
        if token == "--script":
            value = next(it, None)
            if value is not None:
                values.append(value)
        elif token.startswith("--script="):
            values.append(token.split("=", 1)[1])
    return values


def split_script(value: str) -> tuple[str | None, str]:
    """``NAME=FILE`` or ``FILE``: (name or None, file)."""
    name, sep, path = value.partition("=")
    if sep and name and "/" not in name and not name.endswith(".lua"):
        return name, path
    return None, value
