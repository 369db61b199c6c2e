"""The ``charts`` jobs: each runs its study, writes its tables and saves its figures.

Studies return frames, charts turn frames into Figures; a job is where the two meet the disk.
:data:`CHART_JOBS` lists them by the name ``charts --only`` takes. Each job takes the output
folder and whether to run full size, and returns the paths it wrote.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from simulator.paths import DATA_DIR

__all__ = ["CHART_JOBS", "JOB_NAMES", "burst", "accuracy", "queue", "memory"]


def burst(out_dir: Path, full: bool) -> list[Path]:
    """The boundary-burst chart and its decision log."""
    from simulator.algorithms import ALGORITHMS
    from simulator.charts import save
    from simulator.charts.burst import boundary_burst_figure
    from simulator.model import boundary_burst

    frame = pd.concat([boundary_burst(a) for a in ALGORITHMS], ignore_index=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out_dir / "boundary_burst.csv", index=False)
    figure = boundary_burst_figure(frame, 100, 60_000, 59, 61)
    return [out_dir / "boundary_burst.csv", *save(figure, "boundary_burst", out_dir)]


def accuracy(out_dir: Path, full: bool) -> list[Path]:
    """The accuracy study and the adversary search; ``full`` = >= 1M decisions, 10k clients."""
    from simulator.algorithms import ALGORITHMS
    from simulator.charts import save
    from simulator.charts.accuracy import (
        error_figure,
        families_figure,
        load_sweep_figure,
        schedule_figure,
        with_cloudflare,
    )
    from simulator.charts.contracts import contracts_figure
    from simulator.studies.accuracy import load_sweep, lua_check, study
    from simulator.studies.adversary import SearchConfig, confirm_on_lua, worst_cases
    from simulator.studies.contracts import contracts_study, small_burst_variants

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
    sweep = pd.concat(
        [
            load_sweep((0.25, 0.5, 0.8, 1, 1.25, 1.5, 2, 3, 4), 200 if full else 40, kind)
            for kind in ("poisson", "on_off")
        ],
        ignore_index=True,
    )
    # No wall-time budget: the committed tables must not depend on how busy the machine was.
    config = SearchConfig(generations=300 if full else 60, budget_s=float("inf"))
    variants = small_burst_variants(config.limit)
    with tqdm(
        total=len(ALGORITHMS) + len(variants),
        desc="adversary search",
        unit="algorithm",
        disable=None,
    ) as bar:
        worst, results = worst_cases(
            tuple(ALGORITHMS), config, on_algorithm=lambda a: bar.update(), variants=variants
        )
    frames = {
        a: confirm_on_lua(a, r.schedule, config.limit, config.window_ms)[1]
        for a, r in results.items()
        if a in ALGORITHMS
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
    paths += save(
        schedule_figure(frames, config.limit, config.window_ms), "adversary_schedule", out_dir
    )
    return paths


def queue(out_dir: Path, full: bool) -> list[Path]:
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


def memory(out_dir: Path, full: bool) -> list[Path]:
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
CHART_JOBS: dict[str, Callable[[Path, bool], list[Path]]] = {
    "burst": burst,
    "accuracy": accuracy,
    "queue": queue,
    "memory": memory,
}
JOB_NAMES = tuple(CHART_JOBS)
