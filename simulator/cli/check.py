"""``python -m simulator check FILE --as NAME``: grade a limiter script against a reference."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.cli.args import MAX_SEED, UsageError, add_param_option, seed_number

__all__ = ["register", "cmd_check"]


def cmd_check(args: argparse.Namespace) -> int:
    from simulator.userscripts import register_script
    from simulator.userscripts.check import check

    mine = register_script(args.file, "checked_script").name
    try:
        if args.against is not None:
            theirs = register_script(args.against, "against_script").name
            what = f"{args.against}"
        else:
            theirs = args.as_
            what = f"the {args.as_} reference"
        params = dict(args.param)
        _check_params(params, {mine: str(args.file), theirs: what})
        reference = args.against is None
        verdict = check(
            mine, theirs, reference=reference, seed=args.seed, params=params, only=args.only
        )
    finally:
        ALGORITHMS.pop("checked_script", None)
        ALGORITHMS.pop("against_script", None)
    print(f"{args.file} against {what}: {verdict}")
    return 0 if verdict.agrees else 1


def _check_params(params: dict[str, float], sides: dict[str, str]) -> None:
    """Every ``--param`` must be taken by at least one side (a misspelt name is no silent no-op)."""
    for name in params:
        if not any(name in {q.name for q in ALGORITHMS[a].params_declared} for a in sides):
            raise UsageError(
                f"--param {name}: neither {' nor '.join(sides.values())} takes it "
                '(a script takes burst when its argv holds "burst")'
            )


def field_names(text: str) -> tuple[str, ...]:
    """``--only``'s value: fields of the reply or headers, comma-separated."""
    from simulator.userscripts.fields import FIELDS, HEADER_FIELDS

    known = (*FIELDS, *HEADER_FIELDS)
    names = tuple(name.strip() for name in text.split(","))
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(
                f"{name!r} is not a field: one of {', '.join(known)} (comma-separated)"
            )
    return names


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="grade a limiter script against an algorithm's reference (or another script)",
        description="Plays a battery of traces (the practice case, window seams, many requests in "
        "one millisecond, idle gaps longer than the window, many clients, odd client ids, "
        "seeded random traffic; and costly requests when both sides take a cost) through FILE "
        "on a fresh fake server and through the reference of --as (or through --against "
        "FILE2), with the same --param values on both sides, and compares every field the "
        "script's reply declares: allowed, count, remaining, reset, retry_after, and the "
        "header fields they make (RateLimit r and t, Retry-After), each exactly but count, "
        "which may differ by 1e-9 of its size (an estimate is a float). It prints 'agrees on N "
        "decisions over M traces, on every field', or the first decision that differs (the "
        "trace, the request's index, t_ms and client, the first differing field, expected and "
        "got) and how many differ in all, trace by trace and by field; then the fields it "
        "compared. Exit status 0 when they agree, 1 when they differ, 2 for a "
        "script or declaration that cannot run.",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="the script (.lua) with its declaration")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--as",
        dest="as_",
        choices=sorted(REFERENCES),
        metavar="NAME",
        help=f"the algorithm it implements: one of {', '.join(sorted(REFERENCES))}",
    )
    which.add_argument(
        "--against", type=Path, metavar="FILE2", help="a second script to compare it with"
    )
    p.add_argument(
        "--seed",
        type=seed_number,
        default=0,
        help=f"seed of the battery's random traces (0 to {MAX_SEED:,}; default 0)",
    )
    p.add_argument(
        "--only",
        type=field_names,
        metavar="FIELDS",
        help="compare only these fields, comma-separated (e.g. allowed: the decisions alone); "
        "default: every field the script's reply declares",
    )
    add_param_option(p)
    p.set_defaults(func=cmd_check)
