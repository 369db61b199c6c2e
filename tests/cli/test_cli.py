"""The command line, driven as a user would: with the user's argv, through ``main`` in this
process (``run``: the same status and output, without a Python start-up each). The program as
a whole (``python -m simulator ...`` in a process of its own) is started where only a real
process shows the point: a signal, a file size limit, a variable read at import
(``tests/backends/test_script_limits.py``, ``tests/algorithms/test_toy.py``, ...)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import algorithm_case, shipped, shipped_algorithms
from conftest import run_main as run

from simulator.algorithms import ALGORITHMS

ROOT = Path(__file__).resolve().parents[2]
APACHE_LOG = ROOT / "data" / "traces" / "apache_combined_sample.log"


@pytest.mark.every_algorithm
def test_burst_prints_the_practice_case_numbers():
    """Each shipped algorithm's line says what its file (``[practice]``) says it lets through of
    the two bursts of 100; one registered from elsewhere just has to have its line."""
    out = run("burst")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split() for line in out.stdout.splitlines()[2:]}
    assert set(lines) == set(ALGORITHMS)  # a line for every registered algorithm
    for name in shipped_algorithms():
        want = algorithm_case(name)["practice"]["admitted"]
        assert int(lines[name][1]) == want, (
            f"{name}: tests/algorithms/cases/{name}.toml, [practice]"
        )


def test_burst_options():
    out = run("burst", "--limit", "10", "--window", "1", "--first", "0.9", "--second", "1.1")
    assert out.returncode == 0, out.stderr
    # the name column is as wide as the longest algorithm name
    assert re.search(r"fixed_window +20 of 20", out.stdout)


#: The sample log's first 2,000 lines: enough for every algorithm to refuse some and admit some
#: (the whole log's 10,000 are replayed by compare's tests).
APACHE_HEAD = 2_000


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_replay_the_apache_log(tmp_path, algorithm):
    log = tmp_path / "head.log"
    log.write_text("".join(APACHE_LOG.read_text().splitlines(keepends=True)[:APACHE_HEAD]))
    out_csv = tmp_path / "out.csv"
    args = ["replay", str(log), "--format", "clf", "--algorithm", algorithm]
    out = run(*args, "--limit", "20", "--window", "60", "--backend", "fakeredis", "--out", out_csv)
    assert out.returncode == 0, out.stderr
    frame = pd.read_csv(out_csv)
    assert len(frame) == APACHE_HEAD
    assert list(frame["line"]) == list(range(1, APACHE_HEAD + 1))
    for column in ("t_ms", "client", "allowed", "remaining", "reset_ms", "retry_after_ms"):
        assert column in frame.columns
    assert frame["client"].iloc[0] == "83.149.9.216"
    assert 0 < frame["allowed"].sum() < APACHE_HEAD
    assert frame.loc[frame["allowed"] == 1, "retry_after_ms"].isna().all()
    assert "admitted" in out.stderr


def test_replay_csv_in_any_order_ties_in_file_order(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("client,t_ms\nb,2000\na,10\na,10\na,10\nb,5\n")
    out_csv = tmp_path / "o.csv"
    out = run(
        "replay",
        str(trace),
        "--algorithm",
        "sliding_log",
        "--limit",
        "2",
        "--window",
        "1",
        "--backend",
        "fakeredis",
        "--out",
        str(out_csv),
    )
    assert out.returncode == 0, out.stderr
    frame = pd.read_csv(out_csv)
    assert list(frame["client"]) == ["b", "a", "a", "a", "b"]
    assert list(frame["allowed"]) == [1, 1, 1, 0, 1]


@pytest.mark.parametrize(
    "content, needle",
    [
        ("t_ms,client\n1,a\nabc,b\n", ":3: t_ms 'abc' is not a number"),
        ("t_ms,client\n1,a\n-4,b\n", ":3: t_ms '-4' is out of range: must be from 0 to"),
        ("t_ms,client\n1,a,extra\n", ":2: expected 2 fields"),
        ("time,who\n1,a\n", ":1: header lacks t_ms, client"),
    ],
)
def test_malformed_trace_names_the_line(tmp_path, content, needle):
    trace = tmp_path / "bad.csv"
    trace.write_text(content)
    out = run("replay", str(trace), "--algorithm", "fixed_window", "--limit", "5", "--window", "1")
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_malformed_access_log_line(tmp_path):
    log = tmp_path / "bad.log"
    lines = APACHE_LOG.read_text().splitlines()[:3] + ["garbage line"]
    log.write_text("\n".join(lines) + "\n")
    out = run(
        "replay",
        str(log),
        "--format",
        "clf",
        "--algorithm",
        "echomq",
        "--limit",
        "5",
        "--window",
        "1",
    )
    assert out.returncode == 2 and "bad.log:4:" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["--algorithm", "leaky_bucket", "--limit", "5", "--window", "1"],
            "unknown algorithm 'leaky_bucket'",
        ),
        (
            ["--algorithm", "echomq", "--limit", "0", "--window", "1"],
            "--limit: must be an integer from 1 to",
        ),
        (
            ["--algorithm", "echomq", "--limit", "5", "--window", "-1"],
            "--window: must be a number > 0",
        ),
    ],
)
def test_bad_options_exit_2_naming_the_field(tmp_path, args, needle):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n1,a\n")
    out = run("replay", str(trace), *args)
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_missing_trace_file(tmp_path):
    out = run(
        "replay",
        str(tmp_path / "nope.csv"),
        "--algorithm",
        "echomq",
        "--limit",
        "1",
        "--window",
        "1",
    )
    assert out.returncode == 2 and "nope.csv: cannot open" in out.stderr


@pytest.mark.parametrize("command", ["burst", "replay", "charts", "bench"])
def test_help_explains_options_with_units(command):
    out = run(command, "--help")
    assert out.returncode == 0
    if command in ("burst", "replay"):
        assert "seconds" in out.stdout and "--limit" in out.stdout


@pytest.mark.slow
def test_charts_writes_the_boundary_burst_chart(tmp_path):
    out = run("charts", "--out-dir", str(tmp_path), "--only", "burst")
    assert out.returncode == 0, out.stderr
    for name in ("boundary_burst.png", "boundary_burst.svg", "boundary_burst.csv"):
        assert (tmp_path / name).stat().st_size > 1000
    frame = pd.read_csv(tmp_path / "boundary_burst.csv")
    assert frame.groupby("algorithm")["allowed"].sum().to_dict()["fixed_window"] == 200


def golden_log() -> str:
    """Every shipped algorithm's log of one tiny scenario, as CSV (one registered from elsewhere,
    such as the toy of ``tests/toy/``, is not part of it)."""
    from simulator.engine.run import simulate
    from simulator.engine.scenario import Poisson, Polite, Scenario

    frames = [
        simulate(Scenario(a, 3, 1000, 5000, (Poisson("p", 3.0), Polite("q", 2.0)), seed=11))
        for a in ALGORITHMS
        if shipped(a)
    ]
    return pd.concat(frames, ignore_index=True).to_csv(index=False)


def test_golden_tiny_scenario_frame():
    """A tiny scenario's decision log equals the stored CSV. Regenerate it deliberately (a new
    algorithm, a new column) with ``PYTHONPATH=tests python tests/cli/test_cli.py --regenerate-golden`` and review
    the diff: the rows of the algorithms that were there must not change."""
    golden = ROOT / "tests" / "golden" / "tiny_scenario.csv"
    assert golden_log() == golden.read_text()


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate-golden"]:
    (ROOT / "tests" / "golden" / "tiny_scenario.csv").write_text(golden_log())
