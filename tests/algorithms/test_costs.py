"""Requests that cost more than one: in scenarios, in trace files, and beyond what can be admitted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS, REFERENCES, BulkDecider
from simulator.checks import ConfigError
from simulator.cli import main
from simulator.engine.run import simulate
from simulator.engine.scenario import ConstantRate, Poisson, Polite, Scenario
from simulator.playback.run import replay


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_scenario_with_a_cost_mix_decides_as_the_reference(name):
    mix = ((1, 0.7), (3, 0.2), (12, 0.1))  # 12 is more than the limit of 10 ever admits
    scenario = Scenario(
        name, 10, 1000, 6000, (Poisson("a", 8.0, cost=mix), ConstantRate("b", 4.0, cost=2)), seed=3
    )
    frame = simulate(scenario)
    assert set(frame.loc[frame["client"] == "b", "cost"]) == {2}
    assert set(frame.loc[frame["client"] == "a", "cost"]) == {1, 3, 12}
    ref = REFERENCES[name](10, 1000)
    for row in frame.itertuples():
        d = ref.decide(row.client, row.t_ms, row.cost)
        assert (row.allowed, row.count, row.remaining, row.reset_ms) == (
            d.allowed,
            d.count,
            d.remaining,
            d.reset_ms,
        )
    never = frame[frame["cost"] == 12]
    assert not never["allowed"].any() and (never["retry_after_ms"] == -1).all()


def test_costs_leave_the_arrivals_as_they_were():
    plain = simulate(Scenario("sliding_log", 5, 1000, 5000, (Poisson("a", 9.0),), seed=1))
    mixed = simulate(
        Scenario("sliding_log", 5, 1000, 5000, (Poisson("a", 9.0, cost=((1, 1), (2, 1))),), seed=1)
    )
    assert plain["t_ms"].tolist() == mixed["t_ms"].tolist()
    assert plain["run_id"].iloc[0] != mixed["run_id"].iloc[0]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_polite_client_gives_up_a_request_that_can_never_be_admitted(name):
    frame = simulate(Scenario(name, 5, 1000, 3000, (Polite("p", 2.0, cost=6),)))
    assert len(frame) == 6  # one ask per request, no retry loop
    assert not frame["allowed"].any() and (frame["retry_after_ms"] == -1).all()


@pytest.mark.parametrize(
    "cost, message",
    [
        (0, "Poisson.cost: must be an integer from 1"),
        (1.5, "Poisson.cost: an integer >= 1 or"),
        (((2, 0),), r"Poisson.cost\[0\] weight"),
        (((0, 1),), r"Poisson.cost\[0\] cost"),
    ],
)
def test_a_bad_cost_names_the_field(cost, message):
    with pytest.raises(ConfigError, match=message):
        Poisson("a", 1.0, cost=cost)


def test_a_trace_with_a_cost_column_replays_with_costs(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    rows = [(0, "a", 1), (10, "a", 3), (20, "b", 5), (30, "a", 2), (40, "a", 1), (50, "b", 6)]
    trace.write_text("t_ms,client,cost\n" + "".join(f"{t},{c},{k}\n" for t, c, k in rows))
    out = tmp_path / "out.csv"
    assert (
        main(
            ["replay", str(trace), "--algorithm", "fixed_window", "--limit", "5"]
            + ["--window", "1", "--backend", "fakeredis", "--out", str(out)]
        )
        == 0
    )
    got = pd.read_csv(out)
    assert list(got.columns[:4]) == ["line", "t_ms", "client", "cost"]
    assert got["cost"].tolist() == [1, 3, 5, 2, 1, 6]
    # a: 1, 4, refused at 6 (counted: 6), refused at 7; b: 5, then 6 > 5 can never be
    assert got["allowed"].tolist() == [1, 1, 1, 0, 0, 0]
    assert got["retry_after_ms"].iloc[-1] == -1
    frame = replay(
        pd.DataFrame(
            {
                "t_ms": [t for t, *_ in rows],
                "client": [c for _, c, _ in rows],
                "cost": [k for *_, k in rows],
            }
        ),
        "fixed_window",
        5,
        1000,
    )
    assert frame["allowed"].astype(int).tolist() == got["allowed"].tolist()
    assert frame["cost"].tolist() == got["cost"].tolist()


def test_a_trace_without_costs_writes_no_cost_column(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n")
    out = tmp_path / "out.csv"
    assert (
        main(
            [
                "replay",
                str(trace),
                "--algorithm",
                "gcra",
                "--limit",
                "1",
                "--window",
                "1",
                "--backend",
                "fakeredis",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "cost" not in pd.read_csv(out).columns


@pytest.mark.parametrize("bad", ["0", "-2", "1.5", "x", ""])
def test_a_bad_cost_in_a_trace_names_the_line(tmp_path, capsys, bad):
    trace = tmp_path / "t.csv"
    trace.write_text(f"t_ms,client,cost\n0,a,1\n5,a,{bad}\n")
    assert (
        main(["replay", str(trace), "--algorithm", "sliding_log", "--limit", "2", "--window", "1"])
        == 2
    )
    err = capsys.readouterr().err
    assert f"t.csv:3: cost {bad!r} must be a whole number from 1" in err


def test_a_trace_out_of_time_order_keeps_each_request_its_cost(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client,cost\n50,a,2\n0,a,3\n20,b,1\n10,a,4\n")
    out = tmp_path / "out.csv"
    assert (
        main(
            ["replay", str(trace), "--algorithm", "token_bucket", "--limit", "9"]
            + ["--window", "1", "--backend", "fakeredis", "--out", str(out)]
        )
        == 0
    )
    got = pd.read_csv(out)
    assert got["cost"].tolist() == [2, 3, 1, 4]
    assert got["allowed"].tolist() == [1, 1, 1, 1]
    assert got["remaining"].tolist()[1] == 6  # a at 0: 9 tokens, takes 3


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_bulk_costs_of_one_are_the_plain_kernel(name):
    from simulator.fastref import decide_bulk

    if not issubclass(ALGORITHMS[name], BulkDecider):
        pytest.skip(f"{name} has no bulk kernel (BulkDecider)")
    rng = np.random.default_rng(0)
    codes, t = rng.integers(0, 20, 3000), np.sort(rng.integers(0, 60_000, 3000))
    a = decide_bulk(name, codes, t, 5, 1000)
    b = decide_bulk(name, codes, t, 5, 1000, cost=np.ones(3000, dtype="int64"))
    assert np.array_equal(a.allowed, b.allowed) and np.array_equal(a.count, b.count)
