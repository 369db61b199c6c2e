"""The explorer's time bar: one client's requests, one at a time, with the servers' keys.

The reader chooses a *moment* - a request of the client shown - and the bar keeps it: a new run,
another server shown, another algorithm beside it or a zoom leave the same request chosen (the
same instant, and among requests at that very millisecond the same one: request 101 of the
boundary burst stays request 101). A first run, or a preset, starts at the client's first
request that any algorithm refused.

A step decides that client's requests again on a fresh fake server for each server shown
(:class:`~simulator.explore.steps.Stepper`, made from the run's policy and kept while the run is
shown), moves the rule and the shaded windows of the rows to its instant, and writes what each
server held before and after it into the right column: one server, or two side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pandas as pd

from simulator.explore.page import Page
from simulator.explore.runs import Outcome
from simulator.explore.steps import Step, Stepper

__all__ = ["TimeBar", "Moment", "index_of", "moment_of"]

#: Asked between two requests decided: True once a newer run makes these steps pointless.
Stale = Callable[[], bool]


def _never() -> bool:
    return False


#: A request as the reader chose it: its instant (ms) and how many of the client's requests
#: came before it at that same instant.
Moment = tuple[int, int]


def moment_of(times: np.ndarray, i: int) -> Moment:
    """The moment of request ``i`` among the instants ``times`` (sorted)."""
    t = int(times[i])
    return t, i - int(np.searchsorted(times, t, side="left"))


def index_of(times: np.ndarray, moment: Moment) -> int:
    """The request of ``times`` (sorted) at ``moment``: the same one when the instant is there,
    else the first one after it (or the last)."""
    if not len(times):
        return 0
    t, rank = moment
    lo, hi = np.searchsorted(times, t, side="left"), np.searchsorted(times, t, side="right")
    if hi > lo:
        return min(int(lo) + rank, int(hi) - 1)
    return min(int(lo), len(times) - 1)


class TimeBar:
    """The time bar of ``page``; ``hush()`` holds back the page's own change handlers while
    the bar moves its slider itself; ``render()`` writes the steps shown into the page and
    ``moved(i)`` tells the timeline which request is shown."""

    def __init__(
        self,
        page: Page,
        hush: Callable[[], AbstractContextManager[None]],
        render: Callable[[], None] = lambda: None,
        moved: Callable[[int], None] = lambda i: None,
    ) -> None:
        self.page, self._hush, self._render, self._moved = page, hush, render, moved
        self.outcome: Outcome | None = None
        self.client: str | None = None
        #: The request chosen, kept across runs and servers shown (None: none chosen yet).
        self.moment: Moment | None = None
        #: The request shown of each server shown, the first one's first.
        self.steps: dict[str, Step] = {}
        #: A request asked for by number (from 0; an address), taken by the next retime.
        self.wanted_index: int | None = None
        self._steppers: dict[tuple[int, str, str], Stepper] = {}

    @property
    def step(self) -> Step | None:
        """The request shown on the first server shown, if any."""
        return next(iter(self.steps.values()), None)

    def shown(self, outcome: Outcome, client: str | None) -> None:
        """A new run is drawn, with ``client`` shown: the steps of the last one are let go
        (another client's moment is not this one's)."""
        if client != self.client:
            self.moment = None
        self.close()
        self.outcome, self.client = outcome, client

    def close(self) -> None:
        for stepper in self._steppers.values():
            stepper.close()
        self._steppers.clear()

    def algorithms(self) -> list[str]:
        """The algorithms whose servers are shown (the run has their logs), at most two."""
        o = self.outcome
        if o is None:
            return []
        chosen = [self.page.state_of.value, self.page.beside.value]
        shown: list[str] = []
        for a in chosen:
            if a in o.frames and a not in shown:
                shown.append(a)
        return shown

    def _mine(self, algorithm: str) -> pd.DataFrame:
        assert self.outcome is not None
        frame = self.outcome.frames[algorithm]
        return frame[frame["client"] == self.client]

    def times(self, algorithm: str | None = None) -> np.ndarray:
        """The instants (ms) of the client shown under ``algorithm`` (default: the first
        server shown)."""
        shown = self.algorithms()
        algorithm = algorithm or (shown[0] if shown else None)
        if algorithm is None or self.client is None:
            return np.array([], dtype="int64")
        return self._mine(algorithm)["t_ms"].to_numpy(dtype="int64")

    def retime(self, stale: Stale = _never) -> None:
        """After a run or a change of the servers shown: the bar over the first server's
        requests, at the moment chosen (a first run: at its first refusal)."""
        self.step_now(self.aim(), keep=True, stale=stale)

    def aim(self) -> int:
        """The cheap half of :meth:`retime`: the bar's range and the request it is at, the
        moment chosen set to it if none was (the steps themselves follow)."""
        times = self.times()
        asked, self.wanted_index = self.wanted_index, None
        if asked is not None:
            self.moment = None
            i = int(np.clip(asked, 0, max(len(times) - 1, 0)))
        else:
            i = self._first_refusal() if self.moment is None else index_of(times, self.moment)
        page = self.page
        with self._hush():
            page.scrub.max = page.play.max = max(len(times) - 1, 0)
            page.scrub.value = i
        if self.moment is None and len(times):
            self.moment = moment_of(times, i)
        return i

    def _first_refusal(self) -> int:
        """The client's first request that any algorithm of the run refused (the moment a new
        case is about), as a request of the first server shown; the first request if none."""
        o, shown = self.outcome, self.algorithms()
        if o is None or not shown:
            return 0
        first: Moment | None = None
        for algorithm in o.frames:
            mine = self._mine(algorithm)
            refused = np.flatnonzero(~mine["allowed"].to_numpy(dtype=bool))
            if len(refused):
                at = moment_of(mine["t_ms"].to_numpy(dtype="int64"), int(refused[0]))
                first = at if first is None else min(first, at)
        return 0 if first is None else index_of(self.times(shown[0]), first)

    def nudge(self, by: int) -> None:
        """One request on (``by`` 1) or back (-1), within the bar."""
        scrub = self.page.scrub
        scrub.value = int(np.clip(scrub.value + by, 0, scrub.max))

    def stepper(self, algorithm: str) -> Stepper | None:
        """The steps of the client shown under ``algorithm`` (made when first asked for)."""
        o, client = self.outcome, self.client
        if o is None or client is None or algorithm not in o.frames:
            return None
        key = (id(o), algorithm, client)
        if key not in self._steppers:
            mine = self._mine(algorithm)
            self._steppers[key] = Stepper(
                o.settings.policies[algorithm],
                client,
                mine["t_ms"].to_numpy(dtype="int64").tolist(),
                mine["cost"].to_numpy(dtype="int64").tolist(),
                mine["allowed"].to_numpy(dtype=bool).tolist(),
            )
        return self._steppers[key]

    def step_now(self, i: int, *, keep: bool = False, stale: Stale = _never) -> None:
        """Show request ``i`` of the first server shown on every server shown (decided now if
        not yet); the moment chosen becomes that request's, unless ``keep`` (the bar only
        followed the moment chosen, which may fall between two of this server's requests).
        ``stale()`` is asked between the requests decided on the way: a newer run stops it
        (:class:`~simulator.explore.job.Cancelled`)."""
        page, o, shown = self.page, self.outcome, self.algorithms()
        first = self.stepper(shown[0]) if shown else None
        if first is None or o is None or not len(first):
            self.steps = {}
            page.instant.value = "<i>no request of this client</i>"
            self._render()
            return
        times = np.asarray(first.times, dtype="int64")
        i = int(np.clip(i, 0, len(first) - 1))
        moment = moment_of(times, i)
        if not keep or self.moment is None:
            self.moment = moment
        steps = {shown[0]: first.at(i, stale)}
        for algorithm in shown[1:]:
            other = self.stepper(algorithm)
            if other is not None and len(other):
                steps[algorithm] = other.at(index_of(np.asarray(other.times), moment), stale)
        self.steps = steps
        t_rel = steps[shown[0]].t_ms - o.origin_ms
        self._moved(i)
        page.instant.value = (
            f"&nbsp;request&nbsp;{i + 1:,} of&nbsp;{len(first):,} at "
            f"<b>{t_rel / 1000:,.3f}&nbsp;s</b>"
        )
        self._render()
