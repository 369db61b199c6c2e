"""Running a sweep: the tasks not finished yet go to Dask; each result is written as it comes.

The tasks run on the workers and hand their rows back; this process writes each one's file the
moment it arrives (so the workers need no shared disk, and the dataset is where the command
runs). Tasks whose file exists already, made by this code and read back whole, are skipped: a
sweep stopped by Ctrl-C, a crash or a lost cluster goes on where it stopped; a file that does
not read whole is said and computed again. A worker that dies mid-task has its task run again
on another (Dask reschedules it); a task that raises is reported with its parameters, and the
others go on. A worker whose code differs from this process's (another version installed
there) fails its tasks with a message saying so: its rows could not be told apart from this
code's.

Some things stop the whole sweep with one message (a :class:`~simulator.engine.scenario.ConfigError`,
exit status 2 from the command), the finished files kept: the output folder is a file or cannot
be written, another sweep holds it (:mod:`~simulator.sweeps.folder`), a write fails (a full
disk), a task is refused by the user's own input (a bad value, a user's script that fails), or
the scheduler has had no workers for ``no_workers_s`` seconds. Only a few tasks per worker are
out at once, made from the grid as they go, so a grid of any size starts at once, holds little
memory and stops at once on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.checks import ConfigError
from simulator.sweeps.dataset import code_fingerprint, finished, task_id, write_task
from simulator.sweeps.folder import check_folder, holding
from simulator.sweeps.spec import SweepSpec, grid_points, grid_size, iter_points
from simulator.sweeps.studies import Refused, run_point

__all__ = [
    "SweepOutcome",
    "SweepFailed",
    "run_sweep",
    "unfinished",
    "describe_point",
    "KEEP_POINTS",
]

#: A sweep of up to this many points keeps them and their task ids in its outcome (to read the
#: dataset in grid order); a bigger one keeps none, so that its memory does not grow with it.
KEEP_POINTS = 10_000

#: How long a sweep waits by default for a scheduler that has no workers before it gives up.
NO_WORKERS_S = 600.0


@dataclass
class SweepOutcome:
    """What a run of a sweep did: tasks in the grid, skipped as finished, done now, failed."""

    folder: Path
    points: list[dict[str, Any]]
    tasks: list[str]
    skipped: int = 0
    done: int = 0
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    #: Tasks in the grid (``points`` and ``tasks`` are empty past :data:`KEEP_POINTS`).
    total: int = 0
    #: Files found that did not read whole (computed again).
    broken: int = 0

    def __post_init__(self) -> None:
        self.total = self.total or len(self.tasks)

    @property
    def complete(self) -> bool:
        return self.skipped + self.done == self.total


class SweepFailed(RuntimeError):
    """Tasks of a sweep failed (the others were kept); raised where all of them are needed."""

    def __init__(self, name: str, outcome: SweepOutcome) -> None:
        point, message = outcome.failed[0]
        super().__init__(
            f"sweep {name}: {len(outcome.failed)} of {outcome.total} tasks failed, e.g. "
            f"{describe_point(point)}: {message}; the finished ones are kept in {outcome.folder}"
        )
        self.outcome = outcome


def unfinished(spec: SweepSpec, root: str | Path) -> int:
    """How many of the sweep's tasks are not finished by this code under ``root``."""
    tasks = (task_id(spec.study, p) for p in iter_points(spec))
    done, _, _ = finished(Path(root) / spec.name, tasks, code_fingerprint())
    return grid_size(spec) - len(done)


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
    no_workers_s: float | None = NO_WORKERS_S,
) -> SweepOutcome:
    """Run the unfinished tasks of ``spec`` into ``root/<spec.name>/``; see the module text.

    ``scheduler``: None or ``"local"`` (a LocalCluster of ``workers`` processes, default one
    per core), ``"tcp://HOST:PORT"``, a ``distributed.Client``, or ``"serial"``.
    ``no_workers_s``: how long to wait for a scheduler with no workers (None: for ever).
    """
    from simulator.engine.workers import check_scheduler

    check_scheduler(scheduler)
    folder = check_folder(Path(root) / spec.name)
    with holding(folder):
        return _run(spec, folder, scheduler, progress, out, workers, no_workers_s)


def _run(
    spec: SweepSpec,
    folder: Path,
    scheduler: Any,
    progress: bool,
    out: Callable[[str], None],
    workers: int | None,
    no_workers_s: float | None,
) -> SweepOutcome:
    from tqdm import tqdm

    from simulator.engine.workers import dask_client, describe, run_tasks
    from simulator.userscripts.shipping import shipped

    total = grid_size(spec)
    keep = total <= KEEP_POINTS
    points = grid_points(spec) if keep else []
    tasks = [task_id(spec.study, p) for p in points]
    code = code_fingerprint()
    ids = tasks if keep else (task_id(spec.study, p) for p in iter_points(spec))
    done, stale, broken = finished(folder, ids, code)
    outcome = SweepOutcome(folder, points, tasks, skipped=len(done), total=total)
    outcome.broken = len(broken)
    out(
        f"sweep {spec.name} ({spec.study}): {total} tasks, {len(done)} finished already"
        + (f", {len(stale)} made by other code (run again)" if stale else "")
        + (f", {len(broken)} whose file does not read whole (run again)" if broken else "")
        + f"; results in {folder}"
    )
    if len(done) == total:
        return outcome

    def jobs() -> Any:  # made as the window moves on, never all at once
        for point in iter_points(spec):
            task = task_id(spec.study, point)
            if task not in done:
                yield spec.study, task, point, shipped(point["algorithm"])

    with (
        dask_client(scheduler, workers) as client,
        tqdm(
            total=total,
            initial=len(done),
            desc=f"sweep {spec.name}",
            unit="task",
            disable=not progress or None,
            file=sys.stderr,
        ) as bar,
    ):
        out(f"running on {describe(client)}")
        sent: dict[int, tuple[str, dict[str, Any]]] = {}

        def remembered() -> Any:  # each sent task's id and point, until its result is in
            for j, job in enumerate(jobs()):
                sent[j] = (job[1], job[2])
                yield job

        results = run_tasks(client, run_point, remembered(), no_workers_s=no_workers_s, say=out)
        with contextlib.closing(results):
            for j, result, exc in results:
                task, point = sent.pop(j)
                _take(spec, outcome, task, point, result, exc, code, bar)
    return outcome


def _take(
    spec: SweepSpec,
    outcome: SweepOutcome,
    task: str,
    point: dict[str, Any],
    result: Any,
    exc: BaseException | None,
    code: str,
    bar: Any,
) -> None:
    """One task's result: its file written, or its failure reported (or the sweep stopped)."""
    n = outcome.skipped + outcome.done
    kept = f"the {n} finished tasks are kept in {outcome.folder}" if n else "no task had finished"
    if isinstance(result, Refused):
        raise ConfigError(
            f"sweep {spec.name}: task {task} ({describe_point(point)}): {result.message}; {kept}"
        )
    if exc is None:
        rows, worker_code = result
        if worker_code == code:
            try:
                write_task(outcome.folder, task, rows, code)
            except OSError as err:
                raise ConfigError(
                    f"sweep {spec.name}: cannot write task {task} into {outcome.folder} "
                    f"({err.strerror or err}); {kept}: run the same command again when it can "
                    "be written"
                ) from None
            outcome.done += 1
        else:
            exc = RuntimeError(
                f"the worker runs other code (fingerprint {worker_code}, here {code}): "
                "install this version of the package on every worker"
            )
    if exc is not None:
        message = f"{type(exc).__name__}: {exc}"
        outcome.failed.append((point, message))
        bar.write(f"task {task} failed ({describe_point(point)}): {message}", file=sys.stderr)
    bar.update()
