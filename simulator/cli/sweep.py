"""``python -m simulator sweep SPEC``: a study over a grid, one Dask task per grid point."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from simulator.cli.args import add_scheduler_options, add_script_option
from simulator.sweeps.run import NO_WORKERS_S

__all__ = ["register", "cmd_sweep"]


def cmd_sweep(args: argparse.Namespace) -> int:
    from simulator.sweeps import load_spec, run_sweep
    from simulator.sweeps.run import describe_point

    spec = load_spec(args.spec)  # every mistake in it is reported before anything starts
    if args.list:
        from simulator.sweeps.spec import iter_points

        for point in iter_points(spec):
            print(describe_point(point))
        return 0
    outcome = run_sweep(
        spec,
        args.out_dir,
        args.scheduler,
        progress=True,
        workers=args.workers,
        no_workers_s=args.no_workers_timeout or None,
    )
    finished = outcome.skipped + outcome.done
    print(
        f"sweep {spec.name}: {finished} of {outcome.total} tasks finished "
        f"({outcome.done} now, {outcome.skipped} before); dataset {outcome.folder}",
        file=sys.stderr,
    )
    if outcome.failed:
        print(
            f"sweep {spec.name}: {len(outcome.failed)} tasks failed (listed above with their "
            "parameters); the others are kept: run the same command again to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def non_negative_seconds(text: str) -> float:
    """A number of seconds, 0 or more (argparse reports the value it refuses)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= seconds <= 1e9:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1e9 seconds, got {text!r}")
    return seconds


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        help="a study over a grid of parameters, on Dask; resumable",
        description="Runs the study SPEC names (accuracy, adversary or burst) at every point of "
        "its grid, one Dask task per point, and writes each finished task as one parquet file "
        "under OUT_DIR/<name>/ (every parameter a column). Run it again to go on after Ctrl-C "
        "or a crash: finished tasks are skipped. See docs/scale_out.md for the spec format.",
    )
    p.add_argument("spec", metavar="SPEC", help="the sweep spec (a TOML file)")
    p.add_argument(
        "--out-dir",
        default="data/sweeps",
        metavar="DIR",
        help="where the dataset folders go (default data/sweeps)",
    )
    p.add_argument(
        "--list", action="store_true", help="print the grid points and stop (nothing runs)"
    )
    add_scheduler_options(p)
    p.add_argument(
        "--no-workers-timeout",
        type=non_negative_seconds,
        default=NO_WORKERS_S,
        metavar="SECONDS",
        help="how long to wait while the scheduler has no workers before giving up (exit "
        f"status 2, finished tasks kept); 0 waits for ever (default {NO_WORKERS_S:g})",
    )
    add_script_option(p)  # a spec may name it as an algorithm; its tasks carry it to the workers
    p.set_defaults(func=cmd_sweep)
