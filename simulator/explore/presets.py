"""Presets: the cases a newcomer should see first, each one click away in the explorer.

Each preset is a :class:`~simulator.explore.settings.Settings` with a name, the question it
answers, and which client to show. The first, *the boundary burst*, is the practice case of the
card: 100 requests at second 59 and 100 more at second 61 against a limit of 100 per minute.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from simulator.explore.settings import Settings, Traffic

__all__ = ["Preset", "PRESETS", "SAMPLE_TRACE", "TRY_FIRST"]

#: The access log shipped with the project, offered as the trace to replay.
SAMPLE_TRACE = (
    Path(__file__).resolve().parents[2] / "data" / "traces" / "apache_combined_sample.log"
)

_NOBODY = Traffic(steady=0, poisson=0, bursts=0, on_off=0, polite=0)


@dataclass(frozen=True)
class Preset:
    """A named case: its settings, the question it asks, and the client shown first."""

    name: str
    question: str
    settings: Settings
    client: str | None = None


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "boundary burst",
            "100 at second 59 and 100 at second 61, limit 100 per 60 s: which algorithms let "
            "200 through in two seconds?",
            Settings(
                limit=100,
                window_s=60.0,
                traffic=replace(_NOBODY, bursts=1, burst_n=100, burst_at_s=(59.0, 61.0)),
                duration_s=120.0,
            ),
            "bursts-1",
        ),
        Preset(
            "steady over the limit",
            "One client asks 2 per second against 1 per second (10 per 10 s): how is the "
            "excess refused, evenly or in blocks?",
            Settings(
                limit=10,
                window_s=10.0,
                traffic=replace(_NOBODY, steady=1, steady_rate_per_s=2.0),
                duration_s=40.0,
            ),
            "steady-1",
        ),
        Preset(
            "polite clients",
            "Three clients that wait the Retry-After they are sent: how long do they wait, and "
            "how many requests does each algorithm see?",
            Settings(
                limit=10,
                window_s=10.0,
                traffic=replace(_NOBODY, polite=3, polite_rate_per_s=2.0),
                duration_s=60.0,
            ),
            "polite-1",
        ),
        Preset(
            "one room floods",
            "One chat room sends 25 messages a second, nine others 0.5: with a budget per room "
            "(2 per second), are the quiet rooms ever refused?",
            Settings(
                limit=2,
                window_s=1.0,
                traffic=replace(
                    _NOBODY, steady=1, steady_rate_per_s=25.0, poisson=9, poisson_rate_per_s=0.5
                ),
                duration_s=20.0,
            ),
            "steady-1",
        ),
        Preset(
            "sample access log",
            "Ten minutes of a real access log, limit 60 per minute per client: who is refused, "
            "and do the algorithms agree?",
            Settings(
                limit=60,
                window_s=60.0,
                trace=str(SAMPLE_TRACE),
                trace_format="clf",
                trace_span_s=600.0,
            ),
        ),
    )
}

#: The short "try this first" shown beside the presets.
TRY_FIRST = (
    "Try this first: click <b>boundary burst</b>, then press play (or step) on the time bar and "
    "watch the fixed window's counter start again at second 60 while the sliding log still "
    "holds the first 100."
)
