"""The explorer's time bar: one client's requests, one at a time, with the server's keys.

After each run the bar spans the requests of the client shown under the algorithm whose server
is shown, at the request nearest the instant shown before (the first refusal on a first run, or
when another algorithm's server is chosen). A step decides that client's requests again on a
fresh fake server (:class:`~simulator.explore.steps.Stepper`, made from the run's policy and
kept while the run is shown), moves the rule and the shaded windows of the rows to its instant,
and writes what the server held before and after it into the right column.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pandas as pd

from simulator.explore.page import Page
from simulator.explore.runs import Outcome
from simulator.explore.steps import Step, Stepper
from simulator.explore.words import state_html

__all__ = ["TimeBar"]


class TimeBar:
    """The time bar of ``page``; ``hush()`` holds back the page's own change handlers while
    the bar moves its slider itself."""

    def __init__(self, page: Page, hush: Callable[[], AbstractContextManager[None]]) -> None:
        self.page, self._hush = page, hush
        self.outcome: Outcome | None = None
        self.client: str | None = None
        #: The request shown, if any.
        self.step: Step | None = None
        self._steppers: dict[tuple[int, str, str], Stepper] = {}

    def shown(self, outcome: Outcome, client: str | None) -> None:
        """A new run is drawn, with ``client`` shown: the steps of the last one are let go."""
        self.close()
        self.outcome, self.client = outcome, client

    def close(self) -> None:
        for stepper in self._steppers.values():
            stepper.close()
        self._steppers.clear()

    def _algorithm(self) -> str | None:
        """The algorithm whose server is shown, if the run has its log."""
        o, algorithm = self.outcome, self.page.state_of.value
        return algorithm if o is not None and algorithm in o.frames else None

    def _mine(self, algorithm: str) -> pd.DataFrame:
        assert self.outcome is not None
        frame = self.outcome.frames[algorithm]
        return frame[frame["client"] == self.client]

    def _times(self) -> np.ndarray:
        """The instants (ms) of the client shown under the algorithm whose server is shown."""
        algorithm = self._algorithm()
        if algorithm is None or self.client is None:
            return np.array([], dtype="int64")
        return self._mine(algorithm)["t_ms"].to_numpy(dtype="int64")

    def retime(self, to_refusal: bool = False) -> None:
        """After a run or a change of algorithm: the bar over the new requests, at the request
        nearest the instant shown before (the first refusal on a first run, or when another
        algorithm's server is chosen)."""
        times = self._times()
        was = self.step.t_ms if self.step is not None else None
        if was is None or self.outcome is None or to_refusal:
            i = self._first_refusal()
        else:
            i = int(np.clip(np.searchsorted(times, was), 0, max(len(times) - 1, 0)))
        page = self.page
        with self._hush():
            page.scrub.max = page.play.max = max(len(times) - 1, 0)
            page.scrub.value = i
        self.step_now(i)

    def _first_refusal(self) -> int:
        algorithm = self._algorithm()
        if algorithm is None:
            return 0
        refused = np.flatnonzero(~self._mine(algorithm)["allowed"].to_numpy(dtype=bool))
        return int(refused[0]) if len(refused) else 0

    def nudge(self, by: int) -> None:
        """One request on (``by`` 1) or back (-1), within the bar."""
        scrub = self.page.scrub
        scrub.value = int(np.clip(scrub.value + by, 0, scrub.max))

    def _stepper(self) -> Stepper | None:
        algorithm, o, client = self._algorithm(), self.outcome, self.client
        if algorithm is None or o is None or client is None:
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

    def step_now(self, i: int) -> None:
        """Show request ``i`` of the client shown (decided now if not yet)."""
        page, stepper, o = self.page, self._stepper(), self.outcome
        if stepper is None or o is None or not len(stepper):
            self.step = None
            page.instant.value = "<i>no request of this client</i>"
            page.state.value = ""
            return
        i = int(np.clip(i, 0, len(stepper) - 1))
        step = self.step = stepper[i]
        t_rel = step.t_ms - o.origin_ms
        page.rows.at(t_rel)  # a first-hit window ends at the reset of the row's last mark by then
        page.instant.value = (
            f"&nbsp;request {i + 1:,} of {len(stepper):,} at <b>{t_rel / 1000:.3f} s</b>"
        )
        page.state.value = state_html(stepper.algorithm, step, o.settings.limit)
