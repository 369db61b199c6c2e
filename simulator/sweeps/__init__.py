"""Sweeps: one study over a grid of parameters, one Dask task per grid point, one file per task.

A question such as "how does each algorithm's error change with the limit, the window, the
traffic and the seed?" is a grid: algorithms x limits x windows x traffic kinds x seeds x the
algorithms' own parameters. A sweep spec (:mod:`~simulator.sweeps.spec`, a small TOML file)
names the study and the grid; every grid point is one task (:mod:`~simulator.sweeps.studies`)
that returns its rows, with every parameter as a column; each finished task is written as one
parquet file under ``data/sweeps/<name>/`` (:mod:`~simulator.sweeps.dataset`), so that a sweep
stopped by Ctrl-C or a crash goes on where it stopped when run again, and a failed task is
reported with its parameters without losing the others (:mod:`~simulator.sweeps.run`).
"""

from simulator.sweeps.dataset import read_dataset
from simulator.sweeps.run import SweepOutcome, run_sweep
from simulator.sweeps.spec import SweepSpec, grid_points, load_spec, parse_spec
from simulator.sweeps.studies import STUDIES

__all__ = [
    "STUDIES",
    "SweepSpec",
    "SweepOutcome",
    "grid_points",
    "load_spec",
    "parse_spec",
    "read_dataset",
    "run_sweep",
]
