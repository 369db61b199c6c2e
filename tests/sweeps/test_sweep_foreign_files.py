"""A stray ``*.parquet`` in a sweep's folder would be read with its results by
``pandas.read_parquet(folder)``: a sweep refuses to write there, naming the file, and
``read_dataset`` reads the task files only."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.checks import ConfigError
from simulator.sweeps import parse_spec, read_dataset, run_sweep

BURST = {"name": "b", "study": "burst", "grid": {"algorithm": "fixed_window", "limit": [5, 6]}}


def quiet(line: str) -> None:
    pass


def test_a_sweep_refuses_a_folder_holding_a_foreign_parquet_file(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    pd.DataFrame({"x": [1]}).to_parquet(folder / "export.parquet")
    with pytest.raises(ConfigError, match=r"output folder .*b: holds export.parquet, not a task"):
        run_sweep(parse_spec(BURST), tmp_path, "serial", out=quiet)
    assert sorted(p.name for p in folder.iterdir()) == ["export.parquet"]


def test_the_results_read_whole_and_a_file_added_later_is_left_out(tmp_path):
    run_sweep(parse_spec(BURST), tmp_path, "serial", out=quiet)
    folder = tmp_path / "b"
    alone = pd.read_parquet(folder)
    assert sorted(alone["limit"].unique()) == [5, 6]
    pd.DataFrame({"x": [1]}).to_parquet(folder / "later.parquet")
    assert len(read_dataset(folder)) == len(alone)
