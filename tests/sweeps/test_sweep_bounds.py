"""A sweep point too big for the machine is refused when the spec is read, with the bound
``burst`` keeps on the command line: before any point runs, naming the value."""

from __future__ import annotations

import pytest
from conftest import run_main

from simulator.checks import ConfigError
from simulator.engine.sizes import most_burst_requests
from simulator.sweeps import parse_spec


def burst_spec(**grid: object) -> dict:
    return {"name": "b", "study": "burst", "grid": {"algorithm": "fixed_window", **grid}}


def test_a_limit_whose_bursts_would_not_fit_is_refused_at_parse_time():
    with pytest.raises(ConfigError, match=r"grid: limit = 1,125,899,906,842,624 .*fit in this"):
        parse_spec(burst_spec(limit=[5, 2**50]))


def test_a_per_burst_too_big_is_named_and_the_largest_that_fits_passes():
    most = most_burst_requests(1) // 2
    parse_spec(burst_spec(limit=5, per_burst=most))  # the largest that fits
    with pytest.raises(ConfigError, match=rf"per_burst = {most + 1:,}"):
        parse_spec(burst_spec(limit=5, per_burst=[1, most + 1]))


def test_the_sweep_command_refuses_a_huge_point_before_it_runs(tmp_path):
    spec = tmp_path / "huge_point.toml"
    spec.write_text('name = "h"\nstudy = "burst"\n[grid]\nalgorithm = "fixed_window"\n'
                    f"limit = {2**50}\n")  # fmt: skip
    done = run_main("sweep", spec, "--scheduler", "serial", "--out-dir", tmp_path / "out")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "limit = 1,125,899,906,842,624" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "h").exists()
