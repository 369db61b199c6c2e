"""``python -m simulator burst``: the boundary-burst practice case, every algorithm."""

from __future__ import annotations

import argparse
import math
from typing import Any

import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.cli.args import (
    UsageError,
    add_backend_options,
    add_limit_options,
    add_param_option,
    add_scheduler_options,
    add_script_option,
    counted,
    params_for,
    print_time_notes,
    second_of_run,
    without_commands,
)
from simulator.engine.sizes import BYTES_PER_DECISION, burst_too_big, most_burst_requests
from simulator.policy import resolve

__all__ = ["register", "cmd_burst", "most_requests"]


def most_requests() -> int:
    """The most requests a burst may send per algorithm (2 x users x per burst): every
    algorithm's decisions are held until the summary, in at most half this machine's memory."""
    return most_burst_requests(len(ALGORITHMS))


def _check_size(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a burst whose decisions would not fit in memory."""
    n = args.limit if args.per_burst is None else args.per_burst
    requests = 2 * args.users * n
    problem = burst_too_big(requests, len(ALGORITHMS))
    if problem is None:
        return
    if args.per_burst is None:
        named = f"--limit {args.limit:,} (each burst sends the limit when --per-burst is not given)"
    else:
        named = f"--per-burst {args.per_burst:,}"
    raise UsageError(
        f"{named}: 2 bursts x {args.users:,} user{'s' if args.users > 1 else ''} x {n:,} = "
        f"{problem}; give a smaller --per-burst or fewer --users"
    )


def _own_params(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Every algorithm's own parameters from ``--param``; a name no algorithm declares is refused."""
    named = {name for name, _ in args.param}
    declared = {q.name for cls in ALGORITHMS.values() for q in cls.params_declared}
    if named - declared:
        raise UsageError(
            f"--param {sorted(named - declared)[0]}: no algorithm has such a parameter "
            f"(declared: {', '.join(sorted(declared)) or 'none'})"
        )
    return {a: params_for(a, args.param, strict=False) for a in ALGORITHMS}


def _check_shards(args: argparse.Namespace, sharded: bool) -> None:
    """Shards run on fake servers of their own, and only for algorithms that decide per client."""
    if not sharded:
        return
    if not args.backend.virtual_time:
        raise UsageError(
            f"--shards: each shard runs on a fake server of its own; not with --backend {args.backend}"
        )
    from simulator.engine.shards import not_per_client

    refused = [why for cls in ALGORITHMS.values() if (why := not_per_client(cls))]
    if refused:
        raise UsageError(f"--shards: {refused[0]}")


def _check_clash(
    first: list[tuple[str, int]], limit: int, window_ms: int, params: dict[str, dict[str, float]]
) -> None:
    """Refuse two algorithms writing one key: alike on every backend, before a server starts."""
    from simulator.backends import FakeRedisBackend
    from simulator.engine.own_keys import run_keys
    from simulator.userscripts.guard import shared_key

    unstarted = FakeRedisBackend(lambda: 0)  # keys are names: no server needed to list them
    clash = shared_key(
        {a: run_keys(resolve(a, limit, window_ms, params[a]), first, unstarted) for a in ALGORITHMS}
    )
    if clash is not None:
        raise UsageError(f"burst: {clash}")


def _choose(
    args: argparse.Namespace, backend: Any, span_s: float
) -> tuple[list[str], list[str], str | None]:
    """The algorithms that run, those skipped for real time too long, and the line about those
    whose command this server lacks."""
    from simulator.engine.realtime import runs_on_real_time

    lacking, lacking_line = without_commands(list(ALGORITHMS), backend)
    print_time_notes([a for a in ALGORITHMS if a not in lacking], backend)
    chosen, skipped = [], []
    for a in ALGORITHMS:
        if a in lacking:
            continue
        if runs_on_real_time(backend, ALGORITHMS[a]) and span_s > args.max_realtime:
            skipped.append(a)
        else:
            chosen.append(a)
    return chosen, skipped, lacking_line


def _print_table(
    args: argparse.Namespace,
    summary: pd.DataFrame,
    lacking_line: str | None,
    skipped: list[str],
    span_s: float,
) -> None:
    n = args.limit if args.per_burst is None else args.per_burst
    who = "" if args.users == 1 else f" from each of {args.users:,} users"
    print(
        f"{n} requests at second {args.first:g} and {n} at second {args.second:g}{who}; "
        f"limit {args.limit} per {args.window:g} s"
    )
    width = max(16, *map(len, ALGORITHMS))
    print(
        f"{'algorithm':<{width}} {'admitted':>9} "
        f"{'most in any ' + format(args.window, 'g') + ' s':>18}"
    )
    for algorithm, row in summary.iterrows():
        print(
            f"{algorithm:<{width}} {int(row['admitted']):>5} of {int(row['requests']):<3}"
            f"{int(row['max_in_window']):>14}  ({row['ratio_to_limit']:.2f}x limit)"
        )
    if lacking_line is not None:
        print(lacking_line)
    for algorithm in skipped:
        print(
            f"{algorithm:<{width}} skipped: on {args.backend} it runs on real time and this burst "
            f"lasts {span_s:g} s (over --max-realtime {args.max_realtime:g}); try "
            f"--window 0.5 --first 0.45 --second 0.55, or raise --max-realtime"
        )


def cmd_burst(args: argparse.Namespace) -> int:
    import contextlib

    from simulator.cli.runs import open_backend, stop_between_calls
    from simulator.engine.own_keys import leftover_keys, run_keys
    from simulator.engine.run import Crowd, boundary_burst
    from simulator.metrics import burst_summary
    from simulator.userscripts.foreign import check_foreign, removed_afterwards

    _check_size(args)
    params = _own_params(args)
    span_s = max(args.first, args.second) + 0.001
    window_ms = round(args.window * 1000)
    names = ["user"] if args.users == 1 else [f"user{i}" for i in range(args.users)]
    requests = [(u, math.floor(s * 1000.0)) for u in names for s in (args.first, args.second)]
    sharded = args.shards > 1 or args.scheduler is not None
    _check_shards(args, sharded)
    # Two keys that share a name share the client's hash tag, so one user's keys tell.
    _check_clash([r for r in requests if r[0] == names[0]], args.limit, window_ms, params)
    frames = []
    with open_backend(args.backend) as backend, _cluster(args, sharded) as client:
        chosen, skipped, lacking_line = _choose(args, backend, span_s)

        def keys() -> list[str]:
            return [
                k
                for a in chosen
                for k in run_keys(resolve(a, args.limit, window_ms, params[a]), requests, backend)
            ]

        problem = None if args.reuse_keys else leftover_keys(backend, args.backend, keys)
        if problem is not None:
            raise UsageError(problem)
        check_foreign(backend, chosen, args, _rehearsal(args, params))
        stopping = contextlib.nullcontext() if backend.virtual_time else stop_between_calls(backend)
        with stopping, removed_afterwards(backend, keys, args.reuse_keys):
            crowd = Crowd(args.users, args.shards, client)
            fresh = None if backend.virtual_time else backend  # a fresh fake server each
            for a in chosen:
                frames.append(
                    boundary_burst(
                        a,
                        args.limit,
                        args.window,
                        args.first,
                        args.second,
                        args.per_burst,
                        fresh,
                        params[a],
                        crowd,
                    )
                )
    summary = burst_summary(pd.concat(frames, ignore_index=True), window_ms, args.limit)
    _print_table(args, summary, lacking_line, skipped, span_s)
    return 0


def _rehearsal(args: argparse.Namespace, params: dict[str, Any]) -> Any:
    """The same burst of one algorithm on a given (fake) server: a user's script's rehearsal
    before it meets a server the program did not start."""
    from simulator.engine.run import Crowd, boundary_burst

    def rehearse(algorithm: str, fake: Any) -> object:
        return boundary_burst(
            algorithm,
            args.limit,
            args.window,
            args.first,
            args.second,
            args.per_burst,
            fake,
            params[algorithm],
            Crowd(args.users, 1, None),
        )

    return rehearse


def register(sub: Any) -> None:
    p = sub.add_parser(
        "burst",
        help="the boundary-burst practice case, all algorithms",
        description="Two bursts around a window seam; prints per algorithm how many were admitted "
        "and the most admitted inside any window span.",
    )
    add_limit_options(p, 100, 60.0)
    p.add_argument(
        "--first",
        type=second_of_run,
        default=59.0,
        metavar="SECOND",
        help="second of the first burst (default 59)",
    )
    p.add_argument(
        "--second",
        type=second_of_run,
        default=61.0,
        metavar="SECOND",
        help="second of the second burst (default 61)",
    )
    most = most_requests()
    p.add_argument(
        "--per-burst",
        type=counted(most // 2),
        default=None,
        metavar="N",
        help="requests in each burst (default: the limit). Every decision is held until the "
        f"summary: 2 x users x N may be at most {most:,} on this machine (half its memory, "
        f"about {BYTES_PER_DECISION} bytes per decision and algorithm)",
    )
    p.add_argument(
        "--users",
        type=counted(most // 2),
        default=1,
        metavar="N",
        help="clients that each send both bursts (default 1; 1 to "
        f"{most // 2:,} on this machine, and 2 x users x per burst at most {most:,}); admitted "
        "counts add up over them, the most in any window is one client's",
    )
    p.add_argument(
        "--shards",
        type=counted(1_000_000),  # what simulate() takes
        default=1,
        metavar="N",
        help="split the users into N shards, each simulated on its own fake server in a Dask "
        "task (default 1: one process, no Dask); the decisions are the same",
    )
    add_scheduler_options(p, "the shards")
    add_param_option(p)
    add_backend_options(p)
    add_script_option(p)
    p.set_defaults(func=cmd_burst)


def _cluster(args: argparse.Namespace, sharded: bool) -> Any:
    """One Dask client for every algorithm's shards (no cluster when the run is not sharded)."""
    import contextlib

    from simulator.engine.workers import SERIAL, dask_client

    if not sharded or args.scheduler == SERIAL:
        return contextlib.nullcontext(SERIAL if sharded else None)
    return dask_client(args.scheduler, args.workers)
