"""``python -m simulator bench``: the benchmark sections, figures and ratios printed."""

from __future__ import annotations

import argparse
from typing import Any

from simulator.cli.args import UsageError, positive_int

__all__ = ["register", "cmd_bench"]


def cmd_bench(args: argparse.Namespace) -> int:
    from simulator.bench import SECTIONS

    for name in args.sections or list(SECTIONS):
        if name not in SECTIONS:
            raise UsageError(f"bench: unknown section {name!r}; known: {', '.join(SECTIONS)}")
        SECTIONS[name](args.decisions)
        print()
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure speed; prints figures and ratios",
        description=(
            "Runs the benchmark sections and prints their figures: decisions per second, "
            "seconds and MB; explorer-browser prints each wait of the explorer page in Chromium "
            "as its median and p90 (ms below a second, s above) with the load average."
        ),
    )
    p.add_argument("sections", nargs="*", metavar="SECTION", help="which sections (default: all)")
    p.add_argument(
        "--decisions",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="decisions per measurement (default 10000)",
    )
    p.set_defaults(func=cmd_bench)
