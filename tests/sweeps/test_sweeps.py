"""Sweeps without a cluster: the spec's checks, the dataset, resuming, a failed task, the
registry's algorithms and their parameters as axes, and a sharded run equal to the whole run.

Everything here runs serially in this process (``scheduler="serial"``); tests/sweeps/test_scale_out.py
runs the same on real Dask clusters.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError
from simulator.cli import main
from simulator.engine.run import simulate
from simulator.engine.scenario import BurstAt, OnOff, Poisson, Polite, Scenario
from simulator.sweeps import grid_points, load_spec, parse_spec, read_dataset, run_sweep
from simulator.sweeps import studies as sweep_studies
from simulator.sweeps.dataset import task_path

BURST = {"name": "b", "study": "burst", "grid": {"algorithm": "all", "limit": [5, 10]}}


def quiet(line: str) -> None:
    pass


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'study = "burst"\n[grid]\nalgorithm = ["fixed_window", "nope"]',
            "grid.algorithm[1]: unknown 'nope'",
        ),
        ('study = "burst"\n[grid]\nlimit = [10, 0]', "grid.limit[1]: must be an integer from 1"),
        ('study = "burst"\n[grid]\nload = [1]', "grid.load: the burst study has no such axis"),
        ('study = "accuracy"\n[grid]\nkind = "gaussian"', "grid.kind: unknown 'gaussian'"),
        ('study = "accuracy"\n[grid]\nseed = []', "grid.seed: an empty list leaves no grid points"),
        ('study = "memory"', "memory is not a sweep study"),
        ('study = "burst"\n[grid]\nlimit = [10', "not valid TOML"),
        (
            'study = "burst"\n[grid]\nalgorithm = ["fixed_window"]\n[grid.params]\nburst = [1]',
            "grid.params.burst: none of the algorithms",
        ),
        ('study = "burst"\nshards = 2', "unknown key 'shards'"),
    ],
)
def test_a_bad_spec_is_one_message_naming_the_field(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_spec(write(tmp_path, text))


def test_a_bad_spec_on_the_command_line_exits_2_with_one_line(tmp_path, capsys):
    path = write(tmp_path, 'study = "burst"\n[grid]\nlimit = 0\n')
    assert main(["sweep", str(path), "--scheduler", "serial", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s.toml: grid.limit: must be an integer" in err
    assert "Traceback" not in err and not (tmp_path / "s").exists()


def test_the_example_spec_is_valid():
    spec = load_spec(Path(__file__).resolve().parents[2] / "data" / "sweeps" / "example.toml")
    assert spec.name == "example" and len(grid_points(spec)) == 48


def test_a_sweep_writes_one_file_per_task_with_every_parameter_as_a_column(tmp_path):
    spec = parse_spec(BURST)
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    n = len(ALGORITHMS) * 2
    assert (outcome.done, outcome.skipped, outcome.failed) == (n, 0, [])
    assert len(list((tmp_path / "b").glob("*.parquet"))) == n
    frame = read_dataset(tmp_path / "b", outcome.tasks)
    for column in ("algorithm", "limit", "window_s", "first_s", "second_s", "per_burst", "task"):
        assert column in frame.columns
    assert list(frame["algorithm"]) == [a for a in ALGORITHMS for _ in (5, 10)]
    fixed = frame[frame["algorithm"] == "fixed_window"]
    assert list(fixed["admitted"]) == [10, 20]  # 2 x limit at the seam
    assert not list((tmp_path / "b").glob(".*"))  # no temporary file left


def test_a_sweep_run_again_skips_what_is_finished_and_redoes_what_is_missing(tmp_path):
    spec = parse_spec(BURST)
    first = run_sweep(spec, tmp_path, "serial", out=quiet)
    whole = read_dataset(first.folder, first.tasks)
    again = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert (again.done, again.skipped) == (0, len(first.tasks))
    task_path(first.folder, first.tasks[3]).unlink()  # as if stopped before that task
    resumed = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert (resumed.done, resumed.skipped) == (1, len(first.tasks) - 1)
    pd.testing.assert_frame_equal(read_dataset(first.folder, first.tasks), whole)


def test_a_failed_task_is_reported_with_its_parameters_and_the_others_are_kept(
    tmp_path, monkeypatch, capsys
):
    real = sweep_studies.STUDIES["burst"]

    def sometimes(point):
        if point["algorithm"] == "sliding_log" and point["limit"] == 10:
            raise RuntimeError("the disk caught fire")
        return real.run(point)

    monkeypatch.setitem(
        sweep_studies.STUDIES, "burst", real.__class__(real.name, real.axes, sometimes)
    )
    spec = parse_spec(BURST)
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert outcome.done == len(outcome.tasks) - 1 and len(outcome.failed) == 1
    point, message = outcome.failed[0]
    assert point["algorithm"] == "sliding_log" and "the disk caught fire" in message
    err = capsys.readouterr().err
    assert "algorithm=sliding_log limit=10" in err and "the disk caught fire" in err
    monkeypatch.setitem(sweep_studies.STUDIES, "burst", real)
    retried = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert (retried.done, retried.failed) == (1, [])


def test_a_registered_algorithm_and_its_own_parameter_are_axes_with_no_other_edit(
    tmp_path,
    forever,  # noqa: F811
):
    grid = {"algorithm": ["forever", "fixed_window"], "limit": 3, "params": {"allowance": [1, 4]}}
    spec = parse_spec({"name": "f", "study": "burst", "grid": grid})
    points = grid_points(spec)
    assert [p.get("param_allowance") for p in points] == [1, 4, None]
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    frame = read_dataset(outcome.folder, outcome.tasks)
    assert list(frame["admitted"]) == [1, 4, 6]  # forever: its allowance in all; fixed: 2 x 3
    accuracy = {"algorithm": "forever", "client_count": 5, "load": 2.0, "duration_s": 120}
    spec = parse_spec(
        {"name": "fa", "study": "accuracy", "grid": accuracy | {"params": {"allowance": [50]}}}
    )
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert outcome.failed == [] and len(read_dataset(outcome.folder)) == 1
    with pytest.raises(ConfigError, match=r"allowance.*must be an integer"):
        parse_spec(
            {
                "name": "x",
                "study": "burst",
                "grid": {"algorithm": "forever", "params": {"allowance": [0]}},
            }
        )


def test_the_adversary_study_runs_as_worst_cases_does():
    from simulator.studies.adversary import SearchConfig, worst_cases

    spec = parse_spec(
        {
            "name": "a",
            "study": "adversary",
            "grid": {"algorithm": "sliding_log", "generation_budget": 5},
        }
    )
    (point,) = grid_points(spec)
    rows = sweep_studies.STUDIES["adversary"].run(point)
    expected, _ = worst_cases(("sliding_log",), SearchConfig(generations=5, budget_s=float("inf")))
    pd.testing.assert_frame_equal(rows, expected)


# --- sharded simulation --------------------------------------------------------------------------


def crowd(algorithm: str) -> Scenario:
    clients = (
        *(Poisson(f"p{i}", rate_per_s=3) for i in range(25)),
        Polite("polite", rate_per_s=8),
        BurstAt("burst", n=12, at_s=(0.5, 1.0)),
        OnOff("onoff", rate_per_s=30, on_ms=300, off_ms=200),
        Poisson("p3", rate_per_s=4),  # a second spec on p3's counter: the same shard
        Poisson("costly", rate_per_s=6, cost=((1, 0.6), (3, 0.4))),  # costs drawn per client
    )
    return Scenario(algorithm, 6, 1000, 4000, clients, seed=11)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_a_sharded_run_is_the_whole_run_row_for_row(algorithm):
    scenario = crowd(algorithm)
    whole = simulate(scenario)
    sharded = simulate(scenario, shards=4, scheduler="serial")
    key = ["client", "t_ms"]
    pd.testing.assert_frame_equal(
        sharded.sort_values(key, kind="stable", ignore_index=True),
        whole.sort_values(key, kind="stable", ignore_index=True),
    )
    assert not whole["allowed"].all()  # the limit was reached: decisions to get wrong


def test_sharding_is_refused_for_a_limiter_whose_clients_share_state(monkeypatch):
    shared = type("Shared", (ALGORITHMS["fixed_window"],), {"per_client": False})
    monkeypatch.setitem(ALGORITHMS, "fixed_window", shared)
    with pytest.raises(ConfigError, match="fixed_window is not a per-client limiter"):
        simulate(crowd("fixed_window"), shards=2, scheduler="serial")
    assert main(["burst", "--shards", "2", "--scheduler", "serial"]) == 2


def test_sharding_takes_no_backend():
    from simulator.backends import FakeRedisBackend

    with pytest.raises(ConfigError, match="fake server of its own"):
        simulate(crowd("sliding_log"), FakeRedisBackend(), shards=2, scheduler="serial")


def test_burst_with_users_in_shards_prints_what_one_process_prints(capsys):
    assert main(["burst", "--users", "30", "--limit", "5"]) == 0
    whole = capsys.readouterr().out
    assert (
        main(["burst", "--users", "30", "--limit", "5", "--shards", "3", "--scheduler", "serial"])
        == 0
    )
    assert capsys.readouterr().out == whole
    assert "150 of 300" in whole  # sliding_log: 5 per user


# --- the buckets, their variants and users' scripts ----------------------------------------------

FW2 = """--[[ ratelimit
keys = ["rl:fw2:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit", "cost"]
reply = { allowed = 1, count = 2 }
]]
local count = redis.call('INCRBY', KEYS[1], tonumber(ARGV[4]))
if count == tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count <= tonumber(ARGV[3]) then return {1, count} end
return {0, count}
"""


@pytest.fixture
def user_script(tmp_path):
    """A user's script registered as ``fw2`` (a fixed window), forgotten afterwards."""
    from simulator.userscripts import register_script

    path = tmp_path / "fw2.lua"
    path.write_text(FW2)
    register_script(path, "fw2")
    yield path
    ALGORITHMS.pop("fw2", None)


def test_the_charts_adversary_sweeps_cover_every_algorithm_then_the_small_bursts(user_script):
    from simulator.cli.jobs import accuracy_sweeps

    load, search, small = accuracy_sweeps(full=False)
    assert load.grid["algorithm"] == ("sliding_counter",)
    assert search.grid["algorithm"] == tuple(ALGORITHMS)  # the buckets and the user's script
    assert {"token_bucket", "gcra", "fw2"} <= set(search.grid["algorithm"])
    assert small.grid["algorithm"] == ("token_bucket", "gcra") and small.params == {"burst": (10,)}
    assert [p.get("param_burst") for p in grid_points(small)] == [10, 10]


def test_a_bucket_variant_in_a_sweep_is_its_row_of_worst_cases():
    from simulator.studies.adversary import SearchConfig, worst_cases

    grid = {"algorithm": "gcra", "generation_budget": 4, "params": {"burst": [10]}}
    (point,) = grid_points(parse_spec({"name": "v", "study": "adversary", "grid": grid}))
    rows = sweep_studies.STUDIES["adversary"].run(point)
    config = SearchConfig(generations=4, budget_s=float("inf"))
    expected, _ = worst_cases((), config, variants=[("gcra small burst", "gcra", {"burst": 10})])
    pd.testing.assert_frame_equal(rows, expected)
    assert rows[["params", "burst_then_rate_max", "searched_on"]].iloc[0].tolist() == [
        "burst=10",
        109,
        "bulk kernel",
    ]


def test_a_users_script_is_a_sweep_algorithm_on_the_lua_path_and_its_version_a_column(
    tmp_path, user_script
):
    grid = {"algorithm": ["fw2", "fixed_window"], "limit": 4, "window_s": 1, "generation_budget": 3}
    spec = parse_spec({"name": "u", "study": "adversary", "grid": grid})
    points = grid_points(spec)
    assert "script_sha" in points[0] and "script_sha" not in points[1]
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    frame = read_dataset(outcome.folder, outcome.tasks)
    assert outcome.failed == [] and frame["searched_on"].tolist() == [
        "lua (no bulk kernel)",
        "bulk kernel",
    ]
    assert frame["lua_max"].tolist() == [8, 8]  # a grid window's 2x, the same as the built-in
    accuracy = {"algorithm": "fw2", "client_count": 4, "load": 2.0, "duration_s": 30}
    spec = parse_spec({"name": "ua", "study": "accuracy", "grid": accuracy})
    outcome = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert outcome.failed == [] and len(read_dataset(outcome.folder)) == 1
    # an edited script is another version: its tasks are not finished any more
    user_script.write_text(FW2.replace("return {0, count}", "return {0, count + 0}"))
    from simulator.userscripts import register_script

    register_script(user_script, "fw2")
    assert grid_points(spec)[0]["script_sha"] != outcome.points[0]["script_sha"]
    again = run_sweep(spec, tmp_path, "serial", out=quiet)
    assert again.skipped == 0 and again.done == 1


def test_a_users_script_shards_and_is_sent_to_the_worker_with_its_shard(user_script):
    from simulator.engine import shards
    from simulator.userscripts.shipping import install, shipped

    scenario = crowd("fw2")
    whole = simulate(scenario)
    sharded = simulate(scenario, shards=3, scheduler="serial")
    key = ["client", "t_ms"]
    pd.testing.assert_frame_equal(
        sharded.sort_values(key, kind="stable", ignore_index=True),
        whole.sort_values(key, kind="stable", ignore_index=True),
    )
    # a worker that never saw the script registers it from what the shard carries
    script = shipped("fw2")
    assert script is not None and shipped("fixed_window") is None
    ALGORITHMS.pop("fw2")
    install(script)
    assert ALGORITHMS["fw2"].per_client and shards.not_per_client(ALGORITHMS["fw2"]) is None
    assert simulate(scenario)["allowed"].tolist() == whole["allowed"].tolist()
