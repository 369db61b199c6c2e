"""The ``charts`` jobs: each runs its study, writes its tables and saves its figures.

Studies return frames, charts turn frames into Figures; a job is where the two meet the disk.
:data:`CHART_JOBS` lists them by the name ``charts --only`` takes. Each job takes the output
folder, whether to run full size and where its sweeps run (``--scheduler``), and returns the
paths it wrote.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from simulator.cli.production_job import production
from simulator.paths import DATA_DIR

__all__ = ["CHART_JOBS", "JOB_NAMES", "burst", "accuracy", "queue", "memory"]


def burst(out_dir: Path, full: bool, scheduler: Any = None) -> list[Path]:
    """The boundary-burst chart and its decision log."""
    from simulator.algorithms import ALGORITHMS
    from simulator.charts import save
    from simulator.charts.burst import boundary_burst_figure
    from simulator.engine.run import boundary_burst

    frame = pd.concat([boundary_burst(a) for a in ALGORITHMS], ignore_index=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out_dir / "boundary_burst.csv", index=False)
    figure = boundary_burst_figure(frame, 100, 60_000, 59, 61)
    return [out_dir / "boundary_burst.csv", *save(figure, "boundary_burst", out_dir)]


def accuracy(out_dir: Path, full: bool, scheduler: Any = None) -> list[Path]:
    """The accuracy study, the contracts comparison and the adversary search; ``full`` = >= 1M
    decisions, 10k clients.

    The load sweep and the adversary searches (every algorithm with its defaults, then the
    buckets with a small burst) run as sweeps (one Dask task per load and kind, one per
    algorithm and variant; ``scheduler`` as for ``sweep``) into ``out_dir/sweeps/``, and their
    tables and charts are read from those datasets.
    """
    from simulator.charts import save
    from simulator.charts.accuracy import (
        error_figure,
        families_figure,
        load_sweep_figure,
        schedule_figure,
        with_cloudflare,
    )
    from simulator.charts.contracts import contracts_figure
    from simulator.studies.accuracy import lua_check, study
    from simulator.studies.adversary import confirm_on_lua, schedule_of
    from simulator.studies.contracts import contracts_study

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    size = "full" if full else "default"
    decisions, _, summary = study(size, progress=True)
    print(
        f"accuracy {size}: {len(decisions):,} decisions, {int(summary['clients'].sum()):,} clients",
        file=sys.stderr,
    )
    contracts = contracts_study(size, progress=True)
    check = lua_check(size, 50_000 if full else 5_000, progress=True)
    specs = accuracy_sweeps(full)
    results = run_sweeps(specs, out_dir / "sweeps", scheduler)
    (sweep_rows, load_points), searches = results[0], results[1:]
    # The tables as they always were: the study's columns, then the load sweep's load and kind.
    # The load sweep is the sliding counter's alone, so its table keeps the counter's name.
    sweep = (
        sweep_rows.drop(columns=[*load_points[0], "task"])
        .rename(columns={"admitted_pct": "counter_admitted_pct"})
        .assign(load=sweep_rows["load"], kind=sweep_rows["kind"])
    )
    # The searches: every algorithm with its defaults, then the variants; the study's columns.
    worst_rows = pd.concat([rows for rows, _ in searches], ignore_index=True)
    axes = {c for _, points in searches for p in points for c in p} | {"task"}
    kept = ("algorithm", "limit", "window_s")
    worst = worst_rows.drop(columns=[c for c in worst_rows if c in axes and c not in kept])
    limit, window_ms = 100, 60_000
    frames = {  # the schedule chart: the worst any adversary found, each with its defaults
        row.algorithm: confirm_on_lua(
            row.algorithm, schedule_of(row.algorithm, row.worst_schedule), limit, window_ms
        )[1]
        for row in worst.itertuples()
        if not row.params
    }
    paths: list[Path] = []
    tables = {
        "accuracy_summary.csv": with_cloudflare(summary),
        "accuracy_lua_check.csv": check,
        "accuracy_load_sweep.csv": sweep,
        "accuracy_contracts.csv": contracts,
        "adversary_worst_cases.csv": worst,
    }
    for name, table in tables.items():
        table.to_csv(out_dir / name, index=False)
        paths.append(out_dir / name)
    paths += save(families_figure(summary), "accuracy_families", out_dir)
    paths += save(error_figure(decisions), "accuracy_error_distribution", out_dir)
    paths += save(load_sweep_figure(sweep), "accuracy_load_sweep", out_dir)
    paths += save(contracts_figure(contracts), "accuracy_contracts", out_dir)
    found_by = {row.algorithm: row.worst_by for row in worst.itertuples() if not row.params}
    paths += save(
        schedule_figure(frames, limit, window_ms, found_by), "adversary_schedule", out_dir
    )
    return paths


def accuracy_sweeps(full: bool) -> tuple[Any, ...]:
    """The sweeps of the accuracy job: the load sweep (sliding counter against the exact log,
    Poisson and on/off traffic, nine loads), the adversary search for every algorithm (users'
    scripts included: on the Lua path, a shorter search) and for each bucket with a small burst
    (:func:`simulator.studies.contracts.small_burst_variants`).

    No wall-time budget: the committed tables must not depend on how busy the machine was.
    """
    from simulator.algorithms import ALGORITHMS
    from simulator.studies.contracts import small_burst_variants
    from simulator.sweeps import parse_spec

    loads = [0.25, 0.5, 0.8, 1, 1.25, 1.5, 2, 3, 4]
    load_grid = {
        "algorithm": "sliding_counter",
        "kind": ["poisson", "on_off"],
        "load": loads,
        "client_count": 200 if full else 40,
    }
    generations = 300 if full else 60
    search_grid = {"algorithm": list(ALGORITHMS), "generation_budget": generations}
    specs = [
        parse_spec({"name": "accuracy_load_sweep", "study": "accuracy", "grid": load_grid}),
        parse_spec({"name": "adversary_worst_cases", "study": "adversary", "grid": search_grid}),
    ]
    variants = small_burst_variants(100)  # the search's limit
    if variants:  # one burst for all of them: the grid's product is the variants themselves
        small = {
            "algorithm": [name for _, name, _ in variants],
            "generation_budget": generations,
            "params": {"burst": sorted({p["burst"] for _, _, p in variants})},
        }
        specs.append(
            parse_spec({"name": "adversary_small_burst", "study": "adversary", "grid": small})
        )
    return tuple(specs)


def run_sweeps(specs: Any, root: Path, scheduler: Any) -> list[tuple[pd.DataFrame, list[dict]]]:
    """Run the sweeps on one cluster (none when every task is finished already); each one's
    rows in grid order and its grid points. A failed task stops the job (SweepFailed)."""
    from simulator.engine.workers import SERIAL, dask_client
    from simulator.sweeps import read_dataset, run_sweep
    from simulator.sweeps.run import SweepFailed, unfinished

    if not any(unfinished(spec, root) for spec in specs):
        scheduler = SERIAL  # nothing to run: no cluster to start
    results = []
    with dask_client(scheduler) as client:
        for spec in specs:
            outcome = run_sweep(spec, root, SERIAL if client is None else client, progress=True)
            if outcome.failed:
                raise SweepFailed(spec.name, outcome)
            results.append((read_dataset(outcome.folder, outcome.tasks), outcome.points))
    return results


def queue(out_dir: Path, full: bool, scheduler: Any = None) -> list[Path]:
    """The EchoMQ queue studies: their figures and tables."""
    from simulator.charts import save
    from simulator.charts.queue import (
        basic_figure,
        crash_figure,
        fairness_figure,
        global_vs_local_figure,
    )
    from simulator.studies import queue_studies as qs

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []

    def table(frame: pd.DataFrame, name: str) -> None:
        frame.to_csv(out_dir / name)
        paths.append(out_dir / name)

    steps = ("dequeue pad", "global vs local", "fairness", "crash")
    with tqdm(total=len(steps), desc="queue studies", unit="study", disable=None) as bar:
        pad = qs.pad_study(full)
        jobs = qs.job_summary(pad.jobs).drop(columns="dropped")
        table(qs.dequeue_summary(pad.dequeues).join(jobs), "queue_basic.csv")
        paths += save(basic_figure(pad), "queue_basic", out_dir)
        bar.update()
        glob = qs.global_vs_local(full)
        table(qs.window_table(glob), "queue_global_vs_local.csv")
        paths += save(global_vs_local_figure(glob), "queue_global_vs_local", out_dir)
        bar.update()
        fair = qs.fairness(full)
        fair_table = qs.fairness_table(fair.jobs)
        table(fair_table, "queue_fairness.csv")
        paths += save(fairness_figure(fair_table), "queue_fairness", out_dir)
        bar.update()
        crashed = qs.crash(full)
        table(qs.crash_table(crashed), "queue_crash.csv")
        paths += save(crash_figure(crashed), "queue_crash", out_dir)
        bar.update()
    return paths


def memory(out_dir: Path, full: bool, scheduler: Any = None) -> list[Path]:
    """Charts from the committed memory tables (no server needed; ``memory`` measures them)."""
    from simulator.charts import save
    from simulator.charts.memory import bigkey_figure, encoding_cliff_figure, per_user_figure
    from simulator.studies.memory_tables import read_tables

    source = out_dir if list(Path(out_dir).glob("memory_per_user_*.csv")) else DATA_DIR
    tables = read_tables(source)
    paths = save(per_user_figure(tables["per_user"]), "memory_per_user", out_dir)
    paths += save(encoding_cliff_figure(tables["encoding"]), "memory_encoding_cliff", out_dir)
    paths += save(bigkey_figure(tables["bigkey"]), "memory_bigkey", out_dir)
    return paths


#: Every chart job by the name ``charts --only`` takes, in the order ``charts`` runs them.
CHART_JOBS: dict[str, Callable[..., list[Path]]] = {
    "burst": burst,
    "accuracy": accuracy,
    "queue": queue,
    "memory": memory,
    "production": production,
}
JOB_NAMES = tuple(CHART_JOBS)
