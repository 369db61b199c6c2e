"""compare on a Dask cluster that loses a worker, all of them, or its scheduler: a task whose
worker died runs again (its result is the same: a shard's replay depends on nothing else); a
lost scheduler is one message, what finished before it kept by the caller."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from distributed import KilledWorker
from distributed.comm.core import CommClosedError

from simulator.checks import ConfigError
from simulator.comparison import run as compare_run
from simulator.engine import workers

CLIENT = SimpleNamespace(scheduler=SimpleNamespace(address="tcp://10.0.0.1:8786"))


def tasks(n: int) -> list:
    who = SimpleNamespace(name="gcra:limit=3")
    return [SimpleNamespace(shard_file=f"shard-{k:05d}.pickle", candidate=who) for k in range(n)]


def fake_run_tasks(script):
    """A run_tasks whose k-th call yields ``script[k](items)``: (index, result, exc) triples."""
    calls = []

    def run(client, fn, items, scatter=False, window=None, no_workers_s=None, say=None):
        items = list(items)
        calls.append([t.shard_file for t in items])
        yield from script[len(calls) - 1](items)

    return run, calls


def test_a_task_whose_worker_died_runs_again_and_every_part_is_kept(monkeypatch):
    def first(items):
        yield 0, "part-0", None
        yield 1, None, KilledWorker("task", "tcp://w1", None)
        yield 2, None, CommClosedError("in <TCP ...>: Stream is closed")

    def second(items):
        for j, t in enumerate(items):
            yield j, f"part-{t.shard_file[6:11].lstrip('0') or '0'}", None

    run, calls = fake_run_tasks([first, second])
    monkeypatch.setattr(workers, "run_tasks", run)
    seen: list = []
    parts = compare_run._run(tasks(3), CLIENT, None, seen.append)
    assert parts == ["part-0", "part-1", "part-2"] and seen == parts
    assert calls[1] == ["shard-00001.pickle", "shard-00002.pickle"]  # only the lost ones again


def test_a_worker_lost_every_time_is_one_message(monkeypatch):
    def always(items):
        for j, _ in enumerate(items):
            yield j, None, KilledWorker("task", "tcp://w1", None)

    run, _ = fake_run_tasks([always] * compare_run.TASK_ATTEMPTS)
    monkeypatch.setattr(workers, "run_tasks", run)
    with pytest.raises(ConfigError, match=r"shard-00000.pickle \(gcra:limit=3\): its worker was"):
        compare_run._run(tasks(1), CLIENT, None, lambda part: None)


def test_a_lost_scheduler_is_one_message_and_the_parts_before_it_were_handed_on(monkeypatch):
    def broken(items):
        yield 0, "part-0", None
        raise CommClosedError("in <TCP (closed)>: Stream is closed")

    run, _ = fake_run_tasks([broken])
    monkeypatch.setattr(workers, "run_tasks", run)
    seen: list = []
    with pytest.raises(ConfigError, match=r"scheduler tcp://10.0.0.1:8786 was lost"):
        compare_run._run(tasks(2), CLIENT, None, seen.append)
    assert seen == ["part-0"]


def test_no_workers_for_long_is_the_run_tasks_message(monkeypatch):
    def idle(items):
        raise workers.NoWorkers("no workers on the scheduler tcp://10.0.0.1:8786 for 120 s")
        yield  # a generator

    run, _ = fake_run_tasks([idle])
    monkeypatch.setattr(workers, "run_tasks", run)
    with pytest.raises(workers.NoWorkers, match="no workers"):
        compare_run._run(tasks(1), CLIENT, None, lambda part: None)
