"""The store goes away: what N app servers do while the limiter's server cannot be reached.

The server is unreachable for one span and slow for another (each call then takes ``slow_ms``;
past the app servers' ``timeout_ms`` they give up on it, though the server counted the request).
Meanwhile every app server follows one mode: ``fail_open`` (admit), ``fail_closed`` (refuse) or
``local`` (an in-process limiter of ``limit / N``, the same algorithm's reference, per app
server). Against the same requests on a server that never went away: the extra admits, the false
refusals, and how long after the server is back the decisions are again those it would have made.

Beside it, the limiter that is two commands, ``INCR`` then ``PEXPIRE`` on the first hit: when the
connection drops between them, the counter never expires and the user is refused for good. The
script is one command, with no such point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.algorithms import EchoMQ
from simulator.checks import ConfigError
from simulator.policy import lookup
from simulator.studies.production.common import (
    USER,
    Clock,
    arrivals,
    check_setup,
    max_in_window,
)

__all__ = ["OutageSetup", "MODES", "outage_run", "outage_summary", "split_commands_run"]

#: What an app server does when it cannot ask the server.
MODES = ("fail_open", "fail_closed", "local")


@dataclass(frozen=True)
class OutageSetup:
    """One user's requests over ``servers`` app servers; the server down during
    ``[down_from_ms, down_until_ms)`` and slow during ``[slow_from_ms, slow_until_ms)``."""

    algorithm: str = "sliding_log"
    limit: int = 100
    window_ms: int = 10_000
    servers: int = 4
    rate_per_s: float = 20.0
    duration_ms: int = 60_000
    down_from_ms: int = 15_000
    down_until_ms: int = 25_000
    slow_from_ms: int = 40_000
    slow_until_ms: int = 45_000
    slow_ms: int = 300
    timeout_ms: int = 100
    seed: int = 1

    def __post_init__(self) -> None:
        lookup(self.algorithm, owner="OutageSetup.algorithm")
        ints = {"limit": 1, "window_ms": 1, "servers": 1, "duration_ms": 1, "seed": 0}
        ints |= {f: 0 for f in ("down_from_ms", "down_until_ms", "slow_from_ms", "slow_until_ms")}
        check_setup("OutageSetup", self, ints | {"slow_ms": 0, "timeout_ms": 0}, ("rate_per_s",))
        for span in ("down", "slow"):
            lo, hi = getattr(self, f"{span}_from_ms"), getattr(self, f"{span}_until_ms")
            if hi < lo:
                raise ConfigError(
                    f"OutageSetup.{span}_until_ms: must be >= {span}_from_ms ({lo}), got {hi}"
                )


def _cut(setup: OutageSetup, t: int) -> str:
    """``down``, ``slow`` (the call times out), ``late`` (slow, within the timeout) or ``up``."""
    if setup.down_from_ms <= t < setup.down_until_ms:
        return "down"
    if setup.slow_from_ms <= t < setup.slow_until_ms:
        return "slow" if setup.slow_ms > setup.timeout_ms else "late"
    return "up"


def outage_run(setup: OutageSetup = OutageSetup(), mode: str = "fail_open") -> pd.DataFrame:
    """One row per request: ``t_ms``, ``server`` (the app server), ``state`` of the limiter's
    server, ``allowed`` in this mode and ``baseline`` (the same request on a server always up)."""
    if mode not in MODES:
        raise ConfigError(f"mode: one of {', '.join(MODES)}, got {mode!r}")
    arr = arrivals(setup.rate_per_s, setup.duration_ms, setup.servers, setup.seed)
    cls = lookup(setup.algorithm, owner="OutageSetup.algorithm")
    ref = cls.reference
    if mode == "local" and ref is None:
        raise ConfigError(f"OutageSetup.algorithm: {cls.name} has no reference for mode 'local'")
    clock, base_clock = Clock(), Clock()
    limiter = cls(clock.backend(), setup.limit, setup.window_ms)
    baseline = cls(base_clock.backend(), setup.limit, setup.window_ms)
    local_limit = max(1, setup.limit // setup.servers)
    local = [ref(local_limit, setup.window_ms) for _ in range(setup.servers)]
    rows = []
    for t, s in zip(arr.t_ms.tolist(), arr.server.tolist(), strict=True):
        base_clock.t_ms = t
        base = baseline.decide(USER, t).allowed
        state = _cut(setup, t)
        if state in ("up", "late"):
            clock.t_ms = t
            allowed = limiter.decide(USER, t).allowed
        else:
            if state == "slow":  # the server counts it; the app server has stopped waiting
                clock.t_ms = t
                limiter.decide(USER, t)
            if mode == "fail_open":
                allowed = True
            elif mode == "fail_closed":
                allowed = False
            else:
                allowed = local[s].decide(USER, t).allowed
        rows.append((t, s, state, allowed, base))
    frame = pd.DataFrame(rows, columns=["t_ms", "server", "state", "allowed", "baseline"])
    return frame.assign(mode=mode, algorithm=setup.algorithm)


def judged(t_ms: np.ndarray, allowed: np.ndarray, limit: int, window_ms: int) -> pd.DataFrame:
    """Each request against the exact limit: ``beyond`` (admitted while ``limit`` were already
    admitted in its trailing window) and ``false_refusal`` (refused while there was room)."""
    done = np.concatenate([[0], np.cumsum(allowed)])
    starts = np.searchsorted(t_ms, t_ms - window_ms, side="right")
    before = done[np.arange(len(t_ms))] - done[starts]  # admitted in (t - W, t] before this one
    return pd.DataFrame(
        {"beyond": allowed & (before >= limit), "false_refusal": ~allowed & (before < limit)}
    )


def _recovery_ms(t_ms: np.ndarray, wrong: np.ndarray, back_ms: int, until_ms: float) -> int:
    """Ms from ``back_ms`` to the last wrong decision (beyond the limit, or a false refusal)
    before ``until_ms`` (0: none)."""
    late = t_ms[wrong & (t_ms >= back_ms) & (t_ms < until_ms)]
    return 0 if len(late) == 0 else int(late.max()) - back_ms + 1


def outage_summary(frames: pd.DataFrame, setup: OutageSetup) -> pd.DataFrame:
    """Per mode (and ``server always up``, the same requests on a server that never went
    away): admitted, admitted beyond the limit, false refusals (refused while the trailing window
    had room), the most admitted in any window, and the time after the outage and after the slow
    span until the last wrong decision."""
    rows = []
    first = frames[frames["mode"] == frames["mode"].iloc[0]] if len(frames) else frames
    runs = [("server always up", first, "baseline")]
    runs += [(mode, f, "allowed") for mode, f in frames.groupby("mode", sort=False)]
    for mode, f, column in runs:
        t_ms, allowed = f["t_ms"].to_numpy(), f[column].to_numpy(dtype=bool)
        j = judged(t_ms, allowed, setup.limit, setup.window_ms)
        wrong = (j["beyond"] | j["false_refusal"]).to_numpy()
        rows.append(
            {
                "mode": mode,
                "requests": len(f),
                "admitted": int(allowed.sum()),
                "beyond_limit": int(j["beyond"].sum()),
                "false_refusals": int(j["false_refusal"].sum()),
                "most_in_window": max_in_window(t_ms[allowed], setup.window_ms),
                "limit": setup.limit,
                "recovery_after_down_ms": _recovery_ms(
                    t_ms, wrong, setup.down_until_ms, max(setup.slow_from_ms, setup.down_until_ms)
                ),
                "recovery_after_slow_ms": _recovery_ms(t_ms, wrong, setup.slow_until_ms, math.inf),
            }
        )
    return pd.DataFrame(rows)


def split_commands_run(
    limit: int = 10, window_ms: int = 1_000, rate_per_s: float = 20.0, duration_ms: int = 10_000,
    drop_at_ms: int = 3_000, seed: int = 1,
) -> pd.DataFrame:  # fmt: skip
    """The first-hit window as two commands (``INCR``; ``PEXPIRE`` when it made the key) beside
    EchoMQ's script, the connection dropping between the two commands at the first new window
    after ``drop_at_ms``. Rows: ``way``, ``t_ms``, ``allowed``; ``attrs['pttl_ms']`` is the
    two-command counter's TTL at the end (-1: it never expires)."""
    arr = arrivals(rate_per_s, duration_ms, 1, seed)
    clock = Clock()
    backend = clock.backend()
    script = EchoMQ(backend, limit, window_ms)
    key, dropped, rows = "rl:split:{user}", False, []
    for t in arr.t_ms.tolist():
        clock.t_ms = t
        rows.append(("one script", t, script.decide(USER, t).allowed))
        backend.clock.activate()
        count = int(backend.client.incr(key))
        if count == 1:
            if t >= drop_at_ms and not dropped:
                dropped = True  # the connection drops here: PEXPIRE is never sent
            else:
                backend.client.pexpire(key, window_ms)
        rows.append(("two commands", t, count <= limit))
    frame = pd.DataFrame(rows, columns=["way", "t_ms", "allowed"])
    backend.clock.activate()
    frame.attrs["pttl_ms"] = int(backend.client.pttl(key))
    frame.attrs["drop_at_ms"] = drop_at_ms
    return frame


def admitted_per_second(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """Admitted per second and ``by`` (for the charts)."""
    return (
        frame.assign(t_s=frame["t_ms"] // 1000)
        .groupby([by, "t_s"], sort=False)["allowed"]
        .sum()
        .astype(np.int64)
        .reset_index(name="admitted")
    )
