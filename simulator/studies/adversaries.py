"""The clients an adversary plays: burst schedules, hand-made or found by the search.

    BurstSchedule  n[i] requests at millisecond at_ms[i]: what :func:`~simulator.studies.
                   adversary.search` evolves
    SeamTimer      L requests 1 ms before a grid seam and L right on it (the aligned window's 2x)
    EndBunching    L requests at the very end of one grid window and L again at the end of the
                   next, 1 ms earlier, so both bursts sit in one trailing window (the counter's
                   estimate assumes last window's requests were spread evenly; here they were not)
    BurstThenRate  a bucket's whole burst at once, then one request as each token comes back

Each is played by the burst player of :mod:`simulator.engine.traffic`, ahead of the run (none reacts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.checks import ConfigError
from simulator.engine.clients import register_process
from simulator.engine.scenario import ClientSpec
from simulator.engine.traffic import burst_at

__all__ = [
    "Burst",
    "BurstSchedule",
    "SeamTimer",
    "EndBunching",
    "BurstThenRate",
    "hand_made",
    "schedule_of",
]

Burst = tuple[int, int]  # (at_ms, n)


@dataclass(frozen=True)
class BurstSchedule(ClientSpec):
    """``n[i]`` requests at millisecond ``at_ms[i]``."""

    at_ms: tuple[int, ...] = ()
    n: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.at_ms) != len(self.n):
            raise ConfigError("BurstSchedule.n: needs one count per time in at_ms")
        if any(not isinstance(t, int) or t < 0 for t in self.at_ms):
            raise ConfigError(f"BurstSchedule.at_ms: must be integers >= 0, got {self.at_ms!r}")
        if any(not isinstance(k, int) or k < 1 for k in self.n):
            raise ConfigError(f"BurstSchedule.n: must be integers >= 1, got {self.n!r}")

    def bursts(self) -> list[Burst]:
        return sorted(zip(self.at_ms, self.n, strict=True))


@dataclass(frozen=True)
class SeamTimer(ClientSpec):
    """``n`` requests ``before_ms`` before grid seam ``seam`` (a multiple of W) and ``n`` on it."""

    window_ms: int = 60_000
    n: int = 100
    seam: int = 1
    before_ms: int = 1

    def bursts(self) -> list[Burst]:
        at = self.seam * self.window_ms
        return [(at - self.before_ms, self.n), (at, self.n)]


@dataclass(frozen=True)
class EndBunching(ClientSpec):
    """``n`` requests at the end of each of ``windows`` grid windows, each 1 ms earlier than the
    last (``lead_ms + k`` before the end of window k), so consecutive bursts are < W apart."""

    window_ms: int = 60_000
    n: int = 100
    windows: int = 2
    lead_ms: int = 1

    def bursts(self) -> list[Burst]:
        w = self.window_ms
        return [((k + 1) * w - self.lead_ms - k, self.n) for k in range(self.windows)]


for _spec in (BurstSchedule, SeamTimer, EndBunching):
    register_process(_spec, burst_at, reacts=False)  # the same player as BurstAt's


@dataclass(frozen=True)
class BurstThenRate(ClientSpec):
    """``n`` requests at once at ``at_ms``, then one every ``window_ms / rate`` ms (1 ms late, so
    a bucket has refilled) until the window since the burst ends: what a bucket saved up, then
    its refill as it comes. Against a bucket of ``burst`` tokens at ``rate`` per window, one
    trailing window holds ``burst + rate - 1`` of them."""

    window_ms: int = 60_000
    n: int = 100
    rate: int = 100
    at_ms: int = 0

    def bursts(self) -> list[Burst]:
        gap = self.window_ms / self.rate
        trickle = [(self.at_ms + math.ceil(k * gap) + 1, 1) for k in range(1, self.rate)]
        return [(self.at_ms, self.n), *[b for b in trickle if b[0] < self.at_ms + self.window_ms]]


register_process(BurstThenRate, burst_at, reacts=False)


def hand_made(
    limit: int, window_ms: int, burst: int
) -> dict[str, SeamTimer | EndBunching | BurstThenRate]:
    """The hand-made adversaries of the worst-case table by column name, for a limit of
    ``limit`` per ``window_ms`` (``burst``: a bucket's, the limit by default)."""
    L, w = limit, window_ms
    return {
        "seam_timer": SeamTimer("seam", w, L, seam=1, before_ms=1),
        "end_bunching": EndBunching("bunch", w, L, windows=2, lead_ms=1),
        "burst_then_rate": BurstThenRate("refill", w, burst, L, at_ms=w),
    }


def schedule_of(algorithm: str, text: str) -> BurstSchedule:
    """The schedule a row of the worst-case table names (``100@59999ms 100@119998ms``)."""
    bursts = [part.removesuffix("ms").split("@") for part in text.split()]
    return BurstSchedule(
        f"search-{algorithm}", tuple(int(t) for _, t in bursts), tuple(int(n) for n, _ in bursts)
    )
