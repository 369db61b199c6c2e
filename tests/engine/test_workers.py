"""The order a run hears its tasks in, when a busy machine lets several finish in one wait.

On a loaded machine the process that waits for results is slow to look: by the time it does,
several tasks have finished, and Dask hands them back as a set. They are yielded in the order
they were sent, so the first failure a sweep names is its earliest point's, however slow the
machine (``tests/sweeps/test_sweep_edges.py`` asks for the first point of its grid).
"""

from __future__ import annotations

import distributed
import pytest

from simulator.engine.workers import run_tasks


class Finished:
    """A future whose task is over: its result or its error."""

    def __init__(self, fn, item) -> None:
        self.fn, self.item = fn, item

    def result(self):
        return self.fn(self.item)

    def release(self) -> None:
        pass

    def __hash__(self) -> int:  # a set's order that is not the order sent: last sent first
        return -self.item


class Client:
    """A scheduler whose one worker has run every task by the time anyone looks."""

    def nthreads(self) -> dict[str, int]:
        return {"worker": 1}

    def submit(self, fn, item, pure: bool = False) -> Finished:
        return Finished(fn, item)

    def cancel(self, futures) -> None:
        pass


def fails(item: int) -> int:
    raise ValueError(f"point {item}")


@pytest.fixture
def all_at_once(monkeypatch):
    monkeypatch.setattr(
        distributed, "wait", lambda futures, timeout, return_when: (set(futures), set())
    )


def test_tasks_finished_in_one_wait_are_heard_in_the_order_sent(all_at_once):
    heard = [(i, str(exc)) for i, _, exc in run_tasks(Client(), fails, range(5))]
    assert heard == [(i, f"point {i}") for i in range(5)]
