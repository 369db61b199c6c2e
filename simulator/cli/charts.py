"""``python -m simulator charts``: every chart job, or the ones named with ``--only``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulator.cli.args import add_scheduler_options, add_script_option, out_folder
from simulator.cli.jobs import JOB_NAMES

__all__ = ["register", "cmd_charts"]


def cmd_charts(args: argparse.Namespace) -> int:
    from simulator.cli.jobs import CHART_JOBS

    out_dir = Path(args.out_dir)
    for name, job in CHART_JOBS.items():
        if args.only and name not in args.only:
            continue
        for path in job(out_dir, args.full, scheduler=args.scheduler):
            print(f"wrote {path}", flush=True)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "charts",
        help="regenerate the charts and tables under data/",
        description="Writes every chart (PNG and SVG) and its data under OUT_DIR.",
    )
    p.add_argument(
        "--out-dir",
        type=out_folder,
        default="data",
        metavar="DIR",
        help="output folder (default data; made if missing, checked before any chart is drawn)",
    )
    p.add_argument(
        "--full", action="store_true", help="full-size studies where a job has a reduced default"
    )
    p.add_argument(
        "--only",
        nargs="+",
        action="extend",  # --only a --only b runs both
        choices=list(JOB_NAMES),
        default=None,
        metavar="JOB",
        help=f"run only these chart jobs (any of: {', '.join(JOB_NAMES)})",
    )
    add_scheduler_options(p, "the accuracy job's load sweep and adversary searches", workers=False)
    add_script_option(p)
    p.set_defaults(func=cmd_charts)
