"""A user's script as an algorithm of the registry: keys, ARGV and reply from its declaration.

:func:`register_script` reads the script and its declaration, compiles the script once (a syntax
error is reported with its line before anything runs), makes a :class:`~simulator.algorithms.
base.Limiter` subclass for it and adds it to :data:`~simulator.algorithms.ALGORITHMS`, so every
command and study that reads the registry takes it: ``burst``, ``replay``, ``simulate``, the
accuracy comparison (on the Lua path: a user script has no bulk kernel), the worst-case search,
memory per user, the charts (with a colour of its own).

Every call of the script passes the guard of :mod:`.guard` first, on every backend: a command a
limiter does not need, or a key it was not given in KEYS, stops the run before the server acts,
with a message naming the command and the key. On the fake server the keys written are watched
as well. A reply of the wrong shape names the element; a script that raises stops the run with
the server's message; all of them are :class:`UserScriptError` (a ConfigError: exit status 2),
and the decisions made before are kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from simulator.algorithms import ALGORITHMS, register
from simulator.algorithms.base import Limiter, MemoryModel, Param, ServerTime
from simulator.algorithms.palette import CANDIDATES, ROLE_COLOURS, free_colour
from simulator.algorithms.scripts import add
from simulator.backends import FakeRedisBackend, ScriptError
from simulator.checks import ConfigError
from simulator.keys import hash_tag
from simulator.policy import lookup
from simulator.records import Decision
from simulator.userscripts.declaration import (
    Declaration,
    DeclarationError,
    check_name,
    read_declaration,
    read_text,
)
from simulator.userscripts.guard import guard_message, guarded

__all__ = [
    "UserScriptError",
    "UserScript",
    "register_script",
    "register_scripts",
    "user_failure",
    "install_script",
    "user_scripts",
    "SCRIPT_COLOURS",
]

#: Colours offered to users' scripts first; each keeps the palette's colour rule beside the
#: registered algorithms and the roles (:func:`simulator.algorithms.palette.free_colour` picks).
SCRIPT_COLOURS = CANDIDATES


class UserScriptError(ScriptError, ConfigError):
    """A user's script misbehaved; the message names the file and what it did."""


def _compile_check(path: Path, source: str) -> None:
    """A syntax error, with its line, before the script runs anywhere."""
    import lupa.lua51 as lua  # the Lua fakeredis and Redis run (5.1)

    try:
        lua.LuaRuntime(encoding=None).compile(guarded(source).encode("utf-8"))
    except lua.LuaSyntaxError as exc:
        text = exc.args[0] if exc.args else ""
        said = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        said = re.sub(r'^\[string "[^"]*"\]:(\d+):', r"line \1:", said.strip())
        raise UserScriptError(f"{path}: Lua syntax error: {said}") from None


class UserScript(Limiter):
    """A limiter run from a user's script; subclasses are made by :func:`register_script`."""

    declaration: ClassVar[Declaration]
    path: ClassVar[Path]
    source: ClassVar[str]
    reference = None  # type: ignore[assignment]  # none: check grades it against another's
    #: Every key a script is given holds the client's hash tag (the declaration is refused
    #: otherwise), so its clients never share state: a run of it can be split by client.
    per_client = True
    #: Not known to end quickly: a simulation on a real server calls it one request at a time.
    vetted = False

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(backend, limit, window_ms, **params)
        self._seq = 0
        self._declared: set[bytes] = set()
        self._written: set[bytes] = set()
        if isinstance(backend, FakeRedisBackend):
            self._watch(backend)

    def _watch(self, backend: FakeRedisBackend) -> None:
        """Record every key the fake server writes (each write goes through these two)."""
        db = backend.server.dbs[0]
        written, notify, schedule = self._written, db.notify_watch, db.schedule_expiry

        def notify_watch(key: bytes) -> None:
            written.add(key)
            notify(key)

        def schedule_expiry(key: bytes, expireat: float | None) -> None:
            written.add(key)
            schedule(key, expireat)

        db.notify_watch, db.schedule_expiry = notify_watch, schedule_expiry  # type: ignore[method-assign]

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        idx = now_ms // self.window_ms
        values = {
            "client": hash_tag(client),
            "window": idx,
            "window-1": idx - 1,
            "window+1": idx + 1,
        }
        out = [t.format_map(_Fields(values)) for t in self.declaration.keys]
        self._declared.update(k.encode("utf-8", "surrogateescape") for k in out)
        return out

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        if cost != 1 and "cost" not in self.declaration.argv:
            raise DeclarationError(
                f"{self.path}: the request of client {client!r} at t_ms={now_ms} costs {cost}, "
                "but the script takes no cost (no 'cost' in its argv): add \"cost\" to argv, or "
                "give every request of the trace cost 1"
            )
        w = self.window_ms
        self._seq += 1
        elapsed = now_ms % w
        values: dict[str, Any] = {
            "now_ms": now_ms,
            "now_s": now_ms // 1000,
            "window_ms": w,
            "window_s": w // 1000 if w % 1000 == 0 else w / 1000,
            "limit": self.limit,
            "elapsed_ms": elapsed,
            "elapsed_s": elapsed // 1000,
            "elapsed_s_exact": f"{elapsed / 1000:.3f}",
            "window_index": now_ms // w,
            "request_id": f"{now_ms}-{self._seq}",
            "cost": cost,
            "burst": int(self.params.get("burst", self.limit)),
        }
        return [values[name] for name in self.declaration.argv]

    def parse(self, reply: Any) -> Decision:  # type: ignore[override]
        self._check_writes()
        d = self.declaration
        if isinstance(reply, ScriptError):
            raise self.failure(reply)
        if not isinstance(reply, list):
            raise UserScriptError(
                f"{self.path}: the reply must be a table (a Lua array), got {reply!r}; "
                f"reply.allowed says element {d.reply['allowed']}"
            )
        fields = {name: self._element(reply, name, at) for name, at in d.reply.items()}
        allowed = fields["allowed"] == 1
        scale = {"ms": 1, "s": 1000}
        reset = fields.get("reset")
        retry = fields.get("retry_after")
        return Decision(
            allowed,
            fields.get("count", math.nan),
            self.limit,
            int(fields["remaining"]) if "remaining" in fields else -1,
            -1 if reset is None else math.ceil(reset * scale[d.reset_unit]),
            0
            if allowed
            else (-1 if retry is None else math.ceil(retry * scale[d.retry_after_unit])),
        )

    def _element(self, reply: list[Any], name: str, at: int) -> float:
        """Reply element ``at`` (1-based, as the declaration says it) as the number ``name``
        is; a missing or wrong one is the script's error, naming the element."""
        if at > len(reply):
            raise UserScriptError(
                f"{self.path}: reply element {at} ({name}) is missing: the reply has "
                f"{len(reply)} element(s): {reply!r} (a Lua nil ends the array there: "
                "return a number for every declared element, 0 for refused)"
            )
        value = reply[at - 1]
        if value is None and name == "allowed":
            value = 0  # Lua false arrives as nil: refused
        try:
            number = float(value.decode() if isinstance(value, bytes) else value)
        except (TypeError, ValueError):
            number = math.nan
        if math.isnan(number) or (name == "allowed" and number not in (0, 1)):
            want = "0 or 1" if name == "allowed" else "a number"
            raise UserScriptError(
                f"{self.path}: reply element {at} ({name}) is {value!r}, not {want} "
                f"(reply: {reply!r})"
            )
        return number

    @classmethod
    def failure(cls, exc: ScriptError) -> UserScriptError:
        """What a run that this script stopped reports (exit status 2, not a server's 1)."""
        said = _server_said(exc)
        stopped = guard_message(said)
        if stopped is None:
            return UserScriptError(f"{cls.path}: the script failed: {said}")
        return UserScriptError(
            f"{cls.path}: {stopped} (declared: {', '.join(cls.declaration.keys)}); a script "
            "may only touch its own KEYS, with the commands a limiter needs "
            "(see docs/your_script.md)"
        )

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        keys, args = self.keys(client, now_ms), self.args(client, now_ms, cost)
        try:
            reply = self.backend.call(self.script, keys, args)
        except ScriptError as exc:
            raise self.failure(exc) from None
        return self.parse(reply)

    def _check_writes(self) -> None:
        if not self._written:
            return
        stray = self._written - self._declared
        self._written.clear()
        if stray:
            key = sorted(stray)[0].decode("utf-8", "replace")
            raise UserScriptError(
                f"{self.path}: the script wrote key {key!r}, which it was not given in KEYS "
                f"(declared: {', '.join(self.declaration.keys)}); a script may only touch its KEYS"
            )


def user_failure(exc: ScriptError) -> UserScriptError | None:
    """``exc`` as its script's own message, when a user's script failed (a study that sends
    calls in bulk sees only the server's error); None for any other script."""
    match = re.match(r"script user:(\S+) failed", str(exc))
    if match is None or match.group(1) not in ALGORITHMS:
        return None
    cls = lookup(match.group(1))  # the server's message names the script: looked up once
    return cls.failure(exc) if issubclass(cls, UserScript) else None


def _server_said(exc: Exception) -> str:
    """The server's error without its internals: 'line N: ...' for the script's own line."""
    text = str(exc)
    text = re.sub(r"Error running script \(call to f_[0-9a-f]+\): @user_script:\?: ", "", text)
    text = re.sub(r'\[string "[^"]*"\]:(\d+):', r"line \1:", text)
    text = re.sub(r"^script \S+ failed on keys \[.*?\]: ", "", text)  # a real server's
    text = re.sub(r"\buser_script:(\d+):", r"line \1:", text)
    text = re.sub(r" script: [0-9a-f]*,? ?on @user_script:\S*$", "", text.strip())
    text = re.sub(r"\s*stack traceback:.*", "", text, flags=re.S)
    return re.sub(r"^script user:\S+ ", "", text.strip())


class _Fields(dict):
    def __missing__(self, name: str) -> str:
        raise KeyError(name)


def register_script(
    path: str | Path, name: str | None = None, declaration: str | Path | None = None
) -> type[UserScript]:
    """Read, check and register the script at ``path`` as algorithm ``name`` (default: the
    file's stem, made a valid name); returns its class. Registering the same name again
    replaces it."""
    path = Path(path)
    source = read_text(path)
    name = check_name(name or path.stem.lower().replace("-", "_"), str(path))
    if name in ALGORITHMS and not issubclass(lookup(name), UserScript):
        raise DeclarationError(f"{path}: {name!r} is a built-in algorithm; give another name")
    decl = read_declaration(path, source, None if declaration is None else Path(declaration))
    _compile_check(path, source)
    used = [c.colour for n, c in ALGORITHMS.items() if n != name]
    colour = free_colour([*used, *ROLE_COLOURS.values()], f"{path}: {name!r}")
    return install_script(name, path, source, decl, colour)


def register_scripts(scripts: Sequence[tuple[str | None, str | Path]]) -> list[str]:
    """Register the ``(name or None, path)`` of one run (the ``--script`` options); their names.
    A name given twice is refused: the second would silently stand in for the first."""
    seen: dict[str, Path] = {}
    for name, path in scripts:
        path = Path(path)
        chosen = name or path.stem.lower().replace("-", "_")
        if chosen in seen:
            raise DeclarationError(
                f"{path}: the name {chosen!r} is taken by {seen[chosen]} in this run; give each "
                "script a name of its own (--script NAME=FILE)"
            )
        seen[chosen] = path
    names: list[str] = []
    try:
        for name, path in scripts:
            names.append(register_script(path, name).name)
    except ConfigError:
        for done in names:  # all of the run's scripts or none
            ALGORITHMS.pop(done, None)
        raise
    return names


def install_script(
    name: str, path: Path, source: str, decl: Declaration, colour: str
) -> type[UserScript]:
    """Register a script already read and checked (what :func:`register_script` does after its
    checks, and what a Dask worker does with a script sent to it: :mod:`.shipping`)."""
    params = (Param("burst", lambda limit, window_ms: limit, unit="", minimum=1, integer=True),)
    script_name = f"user:{name}"
    add(script_name, guarded(source))  # every call passes the guard, on every backend
    cls = type(
        f"UserScript_{name}",
        (ServerTime, UserScript) if decl.server_time else (UserScript,),
        {
            "name": name,
            "label": decl.label or f"{name} (your script)",
            "colour": colour,
            "scripts": (script_name,),
            "declaration": decl,
            "path": path,
            "source": source,
            "params_declared": params if "burst" in decl.argv else (),
            "memory": MemoryModel(lambda limit, key: 0),
        },
    )
    register(cls)
    return cls


def user_scripts() -> list[str]:
    """The names of the users' scripts registered now."""
    return [n for n, c in ALGORITHMS.items() if issubclass(c, UserScript)]
