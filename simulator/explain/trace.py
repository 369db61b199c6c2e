"""One decision traced: the client's requests decided again, the chosen one watched.

:func:`explain_decision` decides a client's requests in order on a fresh fake server (the
explorer's :class:`~simulator.explain.replay.Replay`: the clock set to each request's ``t_ms``),
untraced up to the chosen one; that one is decided inside
:func:`~simulator.backends.fakeserver.tracing.traced_scripts`, so the lines of its script that
ran and its ``redis.call``s are the real script's on the server's real state. A limiter that
sends the server's own command instead of a script (``INCREX``) has no lines: its one call is
that command. The arithmetic comes from the traced replies and ``ARGV``
(:mod:`~simulator.explain.arithmetic`), never from a model beside the script.

Tracing costs the traced call only (a line hook, a wrapper per ``redis.call``); the calls
before it, and every call outside this view, run on the ordinary path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simulator.backends.fakeserver.tracing import RedisCall, ScriptRun, traced_scripts
from simulator.backends.specs import BackendSpec
from simulator.checks import ConfigError
from simulator.explain.arithmetic import arithmetic_for, no_arithmetic
from simulator.explain.facts import Facts
from simulator.explain.replay import Decided, Replay
from simulator.explain.why import Call, Why
from simulator.policy import Policy
from simulator.userscripts.guard import guarded

# A user's script runs behind its guard: the guard's text on the script's first line, its check
# after the last line (simulator.userscripts.guard). The view shows the user's own text.
_GUARD_HEAD, _GUARD_TAIL = guarded("\x00").split("\x00")
#: What the note adds for a guarded script: its first line is shared with the guard.
GUARD_NOTE = (
    "line 1 also holds the guard every call of a user's script passes, so it is always marked "
    "and its count includes the guard's"
)

__all__ = ["explain_decision", "why_unavailable"]


def why_unavailable(backend_spec: BackendSpec) -> str:
    """One line saying why ``backend_spec`` has no script view (every server but the fake one);
    "" for the fake server, where the view is there."""
    if backend_spec.virtual_time:
        return ""
    return (
        f"the script view needs the fake server: on {backend_spec} the scripts run inside the "
        "server's own Lua, which cannot be watched line by line; choose the fake server "
        "(fakeredis) to see which lines ran and what each call returned"
    )


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _sent(value: Any) -> str:
    """An argument as the server receives it (redis-py's encoding: numbers by their repr)."""
    return _text(value) if isinstance(value, bytes | str) else repr(value)


def _checked(
    t_ms_list: Sequence[int], costs: Sequence[int] | None, index: int
) -> tuple[list[int], list[int]]:
    times = [int(t) for t in t_ms_list]
    spent = [1] * len(times) if costs is None else [int(c) for c in costs]
    if len(spent) != len(times):
        raise ConfigError(f"costs: {len(spent)} costs for {len(times)} requests")
    if not 0 <= index < len(times):
        raise ConfigError(
            f"index: request {index} is not among the {len(times)} requests (0-based)"
        )
    if any(b < a for a, b in zip(times, times[1:], strict=False)):
        raise ConfigError("t_ms_list: the requests' instants must not go back in time")
    if any(c < 1 for c in spent):
        raise ConfigError("costs: every cost must be at least 1")
    return times, spent


def _call(c: RedisCall, guarded: bool) -> Call:
    line = c.line
    if guarded:  # the guard's own frames are on line 1: the script's line is the next one out
        line = next((n for n in c.frames if n != 1), 1)
    return Call(c.command, c.args, c.reply, line, c.protected, c.error)


def _own_text(source: str) -> tuple[str, bool]:
    """A script's own text, and whether it ran behind the user scripts' guard."""
    if source.startswith(_GUARD_HEAD) and source.endswith(_GUARD_TAIL):
        return source[len(_GUARD_HEAD) : len(source) - len(_GUARD_TAIL)], True
    return source, False


def _traced(replay: Replay, t_ms: int, cost: int) -> tuple[Decided, ScriptRun | None]:
    """The request decided with its script call traced; the run of the decision's own script."""
    with traced_scripts(replay.backend.server) as recorder:
        decided = replay.decide(t_ms, cost)
    source = decided.script.source
    runs = [r for r in recorder.runs if r.source == source]
    return decided, (runs[-1] if runs else None)


def explain_decision(
    policy: Policy,
    t_ms_list: Sequence[int],
    costs: Sequence[int] | None,
    index: int,
    client: str = "c",
) -> Why:
    """Why ``client``'s request ``index`` (0-based) was decided as it was, its requests at
    ``t_ms_list`` (ms, in order) with ``costs`` (None: each 1) decided by ``policy`` on a fresh
    fake server, the ``index``-th traced."""
    if not isinstance(policy, Policy):
        raise ConfigError(f"policy: must be a Policy, got {policy!r}")
    times, spent = _checked(t_ms_list, costs, index)
    replay = Replay(policy, client)
    try:
        for t, c in zip(times[:index], spent[:index], strict=True):
            replay.decide(t, c)
        decided, run = _traced(replay, times[index], spent[index])
    finally:
        replay.close()
    return _why(policy, client, index, times[index], spent[index], decided, run)


@dataclass(frozen=True)
class _Seen:
    """What the trace showed of one call: the script's own lines, the lines that ran with their
    counts, the calls, and whether the script ran behind the user scripts' guard."""

    source_lines: tuple[str, ...]
    hits: tuple[tuple[int, int], ...]
    calls: tuple[Call, ...]
    guarded: bool = False


def _seen(
    decided: Decided, run: ScriptRun | None, keys: tuple[str, ...], argv: tuple[str, ...]
) -> _Seen:
    script = decided.script
    if script.command:  # the server's own command: the call is the decision
        return _Seen((), (), (Call(script.command, keys + argv, _plain(decided.reply), None),))
    text, guarded = _own_text(script.source)
    lines = tuple(text.splitlines())
    if run is None:
        return _Seen(lines, (), (), guarded)
    calls = tuple(_call(c, guarded) for c in run.calls)
    return _Seen(lines, tuple((n, k) for n, k in run.hits if n <= len(lines)), calls, guarded)


def _why(
    policy: Policy,
    client: str,
    index: int,
    t_ms: int,
    cost: int,
    decided: Decided,
    run: ScriptRun | None,
) -> Why:
    keys, argv = tuple(map(_sent, decided.keys)), tuple(map(_sent, decided.args))
    reply = decided.reply
    seen = _seen(decided, run, keys, argv)
    worked = arithmetic_for(policy.algorithm, Facts(keys, argv, seen.calls))
    notes = [] if worked is not None else [no_arithmetic(policy.algorithm)]
    if seen.guarded:
        notes.append(GUARD_NOTE)
    return Why(
        algorithm=policy.name,
        client=client,
        index=index,
        t_ms=t_ms,
        cost=cost,
        script=decided.script.command or decided.script.name,
        keys=keys,
        argv=argv,
        source_lines=seen.source_lines,
        ran=frozenset(line for line, _ in seen.hits),
        hits=seen.hits,
        calls=seen.calls,
        reply=tuple(map(_text, reply)) if isinstance(reply, list | tuple) else (_text(reply),),
        allowed=decided.decision.allowed,
        arithmetic=() if worked is None else worked.lines,
        verdict=None if worked is None else worked.admits,
        note="; ".join(notes),
    )


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return _text(value)
