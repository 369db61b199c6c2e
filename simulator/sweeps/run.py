"""Running a sweep: the tasks not finished yet go to Dask; each result is written as it comes.

The tasks run on the workers and hand their rows back; this process writes each one's file the
moment it arrives (so the workers need no shared disk, and the dataset is where the command
runs). Tasks whose file exists already, made by this code, are skipped: a sweep stopped by
Ctrl-C, a crash or a lost cluster goes on where it stopped. A worker that dies mid-task has its
task run again on another (Dask reschedules it); a task that raises is reported with its
parameters, and the others go on. A worker whose code differs from this process's (another
version installed there) fails its tasks with a message saying so: its rows could not be told
apart from this code's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.sweeps.dataset import code_fingerprint, finished, task_id, write_task
from simulator.sweeps.spec import SweepSpec, grid_points
from simulator.sweeps.studies import run_point

__all__ = ["SweepOutcome", "SweepFailed", "run_sweep", "unfinished", "describe_point"]


@dataclass
class SweepOutcome:
    """What a run of a sweep did: tasks in the grid, skipped as finished, done now, failed."""

    folder: Path
    points: list[dict[str, Any]]
    tasks: list[str]
    skipped: int = 0
    done: int = 0
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.skipped + self.done == len(self.tasks)


class SweepFailed(RuntimeError):
    """Tasks of a sweep failed (the others were kept); raised where all of them are needed."""

    def __init__(self, name: str, outcome: SweepOutcome) -> None:
        point, message = outcome.failed[0]
        super().__init__(
            f"sweep {name}: {len(outcome.failed)} of {len(outcome.tasks)} tasks failed, e.g. "
            f"{describe_point(point)}: {message}; the finished ones are kept in {outcome.folder}"
        )
        self.outcome = outcome


def unfinished(spec: SweepSpec, root: str | Path) -> int:
    """How many of the sweep's tasks are not finished by this code under ``root``."""
    tasks = [task_id(spec.study, p) for p in grid_points(spec)]
    done, _ = finished(Path(root) / spec.name, tasks, code_fingerprint())
    return len(tasks) - len(done)


def describe_point(point: dict[str, Any]) -> str:
    """``algorithm=sliding_log limit=100 ...``: a grid point as its parameters."""
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items())


def run_sweep(
    spec: SweepSpec,
    root: str | Path,
    scheduler: Any = None,
    progress: bool = False,
    out: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    workers: int | None = None,
) -> SweepOutcome:
    """Run the unfinished tasks of ``spec`` into ``root/<spec.name>/``; see the module text.

    ``scheduler``: None or ``"local"`` (a LocalCluster of ``workers`` processes, default one
    per core), ``"tcp://HOST:PORT"``, a ``distributed.Client``, or ``"serial"``.
    """
    from tqdm import tqdm

    from simulator.workers import check_scheduler, dask_client, describe, run_tasks

    check_scheduler(scheduler)
    points = grid_points(spec)
    tasks = [task_id(spec.study, p) for p in points]
    folder = Path(root) / spec.name
    code = code_fingerprint()
    done, stale = finished(folder, tasks, code)
    outcome = SweepOutcome(folder, points, tasks, skipped=len(done))
    todo = [i for i, t in enumerate(tasks) if t not in done]
    out(
        f"sweep {spec.name} ({spec.study}): {len(tasks)} tasks, {len(done)} finished already"
        + (f", {len(stale)} made by other code (run again)" if stale else "")
        + f"; results in {folder}"
    )
    if not todo:
        return outcome
    from simulator.userscripts.shipping import shipped

    jobs = [(spec.study, tasks[i], points[i], shipped(points[i]["algorithm"])) for i in todo]
    with (
        dask_client(scheduler, workers) as client,
        tqdm(
            total=len(tasks),
            initial=len(done),
            desc=f"sweep {spec.name}",
            unit="task",
            disable=not progress or None,
            file=sys.stderr,
        ) as bar,
    ):
        out(f"running on {describe(client)}")
        for j, result, exc in run_tasks(client, run_point, jobs):
            i = todo[j]
            if exc is None:
                rows, worker_code = result
                if worker_code == code:
                    write_task(folder, tasks[i], rows, code)
                    outcome.done += 1
                else:
                    exc = RuntimeError(
                        f"the worker runs other code (fingerprint {worker_code}, here {code}): "
                        "install this version of the package on every worker"
                    )
            if exc is not None:
                message = f"{type(exc).__name__}: {exc}"
                outcome.failed.append((points[i], message))
                bar.write(
                    f"task {tasks[i]} failed ({describe_point(points[i])}): {message}",
                    file=sys.stderr,
                )
            bar.update()
    return outcome
