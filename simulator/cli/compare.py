"""``python -m simulator compare TRACE --baseline SPEC --candidate SPEC ...``: which limiter for
this traffic? Each candidate replayed over the trace with the real Lua, scored side by side."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from simulator.cli.args import (
    UsageError,
    add_backend_options,
    add_script_option,
    positive_int,
    scheduler_address,
)
from simulator.cli.traceargs import add_trace_options, trace_source

__all__ = ["register", "cmd_compare"]


def _check_foreign(args: argparse.Namespace, backend: Any, specs: list[Any]) -> None:
    """On a server the program did not start: refused, or each user's script rehearsed on the
    fake server over the trace's first requests (see simulator.userscripts.foreign)."""
    from simulator.cli.rehearsal import first_requests, rehearse_requests
    from simulator.playback.traces import iter_trace
    from simulator.userscripts.foreign import REHEARSAL_REQUESTS, check_foreign, is_foreign

    if not is_foreign(backend):
        return
    first = first_requests(iter_trace(args.trace, args.source, REHEARSAL_REQUESTS))
    for spec in specs:
        rehearsal = rehearse_requests(first, spec.limit, spec.window_ms, spec.params)
        check_foreign(backend, [spec.algorithm], args, rehearsal)


def _candidates(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """The baseline and the candidates the command line names, checked before anything is read."""
    from simulator.backends.choice import shortest_window_ms
    from simulator.cli.chosen import choose
    from simulator.comparison import load_candidates, parse_spec
    from simulator.comparison.spec import resolve_candidates

    baseline = parse_spec(args.baseline, what="--baseline")
    candidates = [parse_spec(text, baseline, "--candidate") for text in args.candidate]
    for path in args.candidates:
        candidates += load_candidates(path, baseline)
    if not candidates:
        raise UsageError("give at least one --candidate SPEC or --candidates FILE.toml")
    resolve_candidates(baseline, candidates)  # a label given twice, before anything is read
    _check_outputs(args)
    everyone = (baseline, *candidates)
    choose(  # --backend not named: the fastest that decides alike, the report's first line says
        args,
        [c.policy.algorithm for c in everyone],
        window_ms=min(shortest_window_ms(c.window_ms, c.params) for c in everyone),
    )
    if args.backend.foreign and args.scheduler is not None:
        raise UsageError(
            "--scheduler runs every shard on a server of its own, one the program starts; on a "
            "server somebody else runs (--backend URL) the shards run here, one after another: "
            "leave --scheduler out"
        )
    return baseline, candidates


CHART_NAMES = (
    "compare_flips_over_time",
    "compare_client_flips",
    "compare_scorecard",
    "compare_client_peaks",
)


def _check_outputs(args: argparse.Namespace) -> None:
    """``--out``, ``--clients-out`` and ``--charts`` checked before anything is computed: each
    can be written, none is the trace, no two name the same file (also through a link or
    ``./``), and the charts' folder is made if it is not there."""
    from simulator.playback.output import OutputError, check_output

    named: dict[str, str] = {}
    outputs = [
        ("--out", args.out),
        ("--clients-out", args.clients_out),
        ("--limits-out", args.limits_out),
        ("--report", args.report),
    ]
    if args.charts is not None:
        outputs += [
            ("--charts", args.charts / f"{n}.{e}") for n in CHART_NAMES for e in ("png", "svg")
        ]
    for option, out in outputs:
        if out is None:
            continue
        real = os.path.realpath(out)
        if real in named:
            raise UsageError(
                f"{option} {out}: is the same file as {named[real]}; each output needs its own"
            )
        named[real] = f"{option} {out}"
    if args.charts is not None:
        if args.charts.exists() and not args.charts.is_dir():
            raise UsageError(f"--charts {args.charts}: is not a folder")
        try:
            args.charts.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"--charts {args.charts}: cannot make the folder ({exc.strerror})"
            ) from None
    for option, out in outputs:
        try:
            if out is not None:
                check_output(out, args.trace)
        except OutputError as exc:
            raise UsageError(str(exc).replace("--out", option, 1)) from None


def _run_compare(args: argparse.Namespace, baseline: Any, candidates: list[Any]) -> Any:
    """The comparison with a progress bar; what was finished is kept if it stops early."""
    from tqdm import tqdm

    from simulator.cli.chosen import note_expired, open_chosen, tried_here
    from simulator.cli.runs import open_backend, sigterm_interrupts
    from simulator.comparison import Listeners, compare

    total = len(candidates) + 1
    finished: list[dict[str, Any]] = []
    try:
        if args.scheduler is not None:
            tried_here(args)  # a chosen server that does not start: the fake server everywhere
        own = args.scheduler is not None and not args.backend.virtual_time  # one per Dask task
        with (
            sigterm_interrupts(),
            open_backend("fakeredis") if own else open_chosen(args) as backend,
        ):
            real = args.backend if own else None if backend.virtual_time else backend
            _check_foreign(args, backend, [baseline, *candidates])
            with tqdm(
                desc=f"read {args.trace.name}", unit="req", file=sys.stderr, disable=None
            ) as bar:
                tasks_done: list[str] = []

                def on_task(part: Any) -> None:
                    note_expired(args, part.server_keys_expired)  # its server's, while it ran
                    tasks_done.append(part.candidate)
                    bar.set_description(f"{len(tasks_done)} tasks done ({total} configurations)")

                return compare(
                    args.trace,
                    baseline,
                    candidates,
                    fmt=args.source,
                    shards=args.shards,
                    scheduler=args.scheduler,
                    backend=real,
                    listeners=Listeners(bar.update, on_task, finished.append),
                )
    except BaseException:  # Ctrl-C, SIGTERM, a failed server or script: keep what was finished
        _keep_finished(args, finished, total)
        raise


def _write(
    args: argparse.Namespace, scorecard: Any, clients: Any, table: Any = None, peaks: Any = None
) -> None:
    """The files asked for: the scorecard, the clients, the other limits, the charts. A disk
    that fills on the way is one message naming the file (the scorecard is on standard output
    already)."""
    option = "--out"
    try:
        if args.out is not None:
            scorecard.to_csv(args.out, index=False)
            print(f"wrote {args.out}", file=sys.stderr)
        option = "--clients-out"
        if args.clients_out is not None:
            clients.to_csv(
                args.clients_out, index=False, encoding="utf-8", errors="surrogateescape"
            )
            print(f"wrote {args.clients_out}", file=sys.stderr)
        option = "--limits-out"
        if args.limits_out is not None and table is not None:
            table.to_csv(args.limits_out, index=False)
            print(f"wrote {args.limits_out}", file=sys.stderr)
        option = "--charts"
        if args.charts is not None:
            from simulator.charts.compare import save_compare_charts

            for path in save_compare_charts(scorecard, clients, args.charts, peaks, table):
                print(f"wrote {path}", file=sys.stderr)
    except OSError as exc:
        where = {
            "--out": args.out,
            "--clients-out": args.clients_out,
            "--limits-out": args.limits_out,
        }.get(option, args.charts)
        raise UsageError(
            f"{option} {where}: cannot be written ({exc.strerror or exc}); the scorecard "
            "is printed above"
        ) from None


def _plan(args: argparse.Namespace) -> tuple[Any, tuple[int, ...]]:
    """``--budget``, ``--limits`` and ``--shards`` read before anything else (before a server
    starts): a bad one is one message."""
    from simulator.checks import ConfigError, check_int
    from simulator.comparison.budget import parse_budget
    from simulator.comparison.limits import parse_limits
    from simulator.comparison.split import MAX_SHARDS

    check_int("compare", "shards", args.shards, 1, MAX_SHARDS)  # as compare() says it
    if not 0 < args.most_ratio < float("inf"):
        raise ConfigError(f"--most-ratio {args.most_ratio:g}: must be a number above 0")
    if args.limits_out is not None and args.limits is None:
        raise UsageError(f"--limits-out {args.limits_out}: give --limits too (the limits to try)")
    limits = parse_limits(args.limits) if args.limits is not None else ()
    return parse_budget(args.budget), limits


def _print_head(args: argparse.Namespace, facts: dict[str, Any]) -> None:
    """The coverage first (and its warning), then what the trace holds."""
    print(facts.get("coverage", "coverage: not measured"))
    if facts.get("coverage_warning"):
        print(facts["coverage_warning"])
    step = facts["resolution_ms"]
    shown = f"{step / 1000:g} s" if step >= 1000 else f"{step} ms"
    print(
        f"{args.trace}: {facts['requests']:,} requests from {facts['clients']:,} clients over "
        f"{(facts['t_max_ms'] - facts['t_min_ms']) / 1000:,.0f} s; time resolution {shown}"
        + (" (requests within one step are decided in file order)" if step > 1 else "")
    )


def _warn_server_clock(args: argparse.Namespace) -> None:
    """A named server of the run's own that expired keys on its own clock: some decisions may
    differ from the simulated clock's (a chosen one was decided again instead)."""
    expired = vars(args).get("keys_expired", 0)
    if expired and not args.backend.virtual_time:
        keys = f"{expired:,} key{'s' * (expired != 1)}"
        print(
            f"warning: {args.backend} expired {keys} on its own clock before the "
            "simulated run was done with them, so some decisions may differ from the simulated "
            "clock's; --backend fakeredis decides on the simulated clock",
            file=sys.stderr,
        )


def cmd_compare(args: argparse.Namespace) -> int:
    from simulator.cli.chosen import decide_again, say_chosen
    from simulator.comparison.choice import rule, verdict
    from simulator.comparison.limits import limits_table, variants, without_variants
    from simulator.comparison.report import gate
    from simulator.comparison.text import format_clients, format_limits, format_scorecard

    args.source = trace_source(args)  # the format, key and time checked before anything is read
    budget, limits = _plan(args)
    baseline, candidates = _candidates(args)
    everyone = [baseline, *candidates]
    runs = [*candidates, *variants(everyone, limits)]
    card, every_client = _run_compare(args, baseline, runs)
    if decide_again(args):  # the chosen Valkey expired keys on its own clock: all again, here
        card, every_client = _run_compare(args, baseline, runs)
    _warn_server_clock(args)
    scorecard, clients = without_variants(card, every_client)
    say_chosen(args, sys.stdout)  # the report's first line, printed only once the run is done
    _print_head(args, scorecard.attrs["trace"])
    print(format_scorecard(scorecard))
    print()
    print(f"Rule: {rule(args.most_ratio)}")
    print(verdict(scorecard, args.most_ratio))
    if len(clients):
        print()
        print(format_clients(clients, args.top))
    table = peaks = None
    if limits:
        from simulator.comparison.limits import trace_peaks

        peaks = trace_peaks(args.trace, args.source, everyone)
        table = limits_table(card, everyone, limits, peaks)
        print()
        print(format_limits(table))
    over = gate(scorecard, budget, args.most_ratio)
    if budget is not None:
        print()
        print(
            f"budget {budget.said()}: "
            + ("over: " + "; ".join(over) if over else "the pick is within it")
        )
    _write(args, scorecard, clients, table, peaks)
    if args.report is not None:
        _write_report(args, scorecard, clients, budget, table)
    return 1 if over else 0


def _write_report(
    args: argparse.Namespace, scorecard: Any, clients: Any, budget: Any, table: Any
) -> None:
    from simulator.cli.chosen import backend_line
    from simulator.comparison.report import plan_report

    text = plan_report(
        scorecard,
        clients,
        trace=str(args.trace),
        backend=backend_line(args),
        most_ratio=args.most_ratio,
        budget=budget,
        limits=table,
        top=args.top,
    )
    try:
        args.report.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise UsageError(
            f"--report {args.report}: cannot be written ({exc.strerror or exc}); the scorecard "
            "is printed above"
        ) from None
    print(f"wrote {args.report}", file=sys.stderr)


def _keep_finished(args: argparse.Namespace, rows: list[dict[str, Any]], total: int) -> None:
    """The run stopped early: the configurations finished are printed, and written to
    ``--out``."""
    if not rows:
        return
    import pandas as pd

    from simulator.cli.chosen import say_chosen
    from simulator.comparison import SCORE_COLUMNS
    from simulator.comparison.text import format_scorecard

    done = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    say_chosen(args, sys.stdout)
    print(format_scorecard(done, legend=False))
    where = ""
    if args.out is not None:
        try:
            done.to_csv(args.out, index=False)
            where = f"; written to {args.out}"
        except OSError as exc:
            where = f"; --out {args.out} cannot be written ({exc.strerror or exc})"
    print(
        f"{len(rows)} of {total} configurations were finished before the stop{where}",
        file=sys.stderr,
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="which limiter for this traffic? candidates scored against a baseline",
        description="Replays TRACE through the baseline and every candidate (the real Lua "
        "scripts) and scores each candidate decision for decision: flips against the "
        "baseline (admitted before and refused now, and the reverse), errors against the exact "
        "sliding log of its own limit and window, Retry-After percentiles, the most admitted "
        "in one window, memory per active client (measured on Valkey) and, on a real server, "
        "server CPU per decision. SPEC is ALGORITHM:key=value,... e.g. "
        "sliding_counter:limit=100,window=60 or token_bucket:limit=100,window=60,burst=20 "
        "(window in seconds; a candidate without limit or window takes the baseline's).",
    )
    p.add_argument(
        "trace",
        type=Path,
        metavar="TRACE",
        help="CSV with header t_ms,client[,cost], or a log (--format, --log-format below), "
        "plain, .gz or .zst",
    )
    add_trace_options(p)
    p.add_argument("--baseline", required=True, metavar="SPEC", help="the configuration now")
    p.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="SPEC",
        help="a candidate (repeatable): ALGORITHM:key=value,... as --baseline is written, or a "
        "gateway's configuration in its own words and units (docs/gateways.md): "
        "nginx:rate=10r/s,burst=20[,nodelay], traefik:average=6,period=1m,burst=1, "
        "spring:replenishRate=10,burstCapacity=20, "
        "envoy:max_tokens=10,fill_interval=1s, kong:minute=100[,second=N]",
    )
    p.add_argument(
        "--candidates",
        action="append",
        default=[],
        type=Path,
        metavar="FILE.toml",
        help="candidates as [[candidate]] tables (algorithm, limit, window, own parameters, name)",
    )
    p.add_argument("--out", type=Path, default=None, metavar="SCORE.csv", help="the scorecard CSV")
    p.add_argument(
        "--clients-out",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="every client a candidate decided differently from the baseline, as CSV",
    )
    p.add_argument(
        "--charts",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the charts (flips over time, flips per client, the scorecard) as PNG and SVG in this folder (made if it is not there)",
    )
    p.add_argument(
        "--most-ratio",
        type=float,
        default=1.25,
        metavar="X",
        help="the protection the pick asks for: no client above X times the limit in any "
        "window (default 1.25)",
    )
    p.add_argument(
        "--limits",
        default=None,
        metavar="N,N,...|LO..HI:STEP",
        help="replay the baseline and every candidate at each of these limits too (e.g. "
        "5,10,20,50 or 5..50:5): refused, clients refused, flips, wrongly refused per limit, "
        "and each client's peak in one window",
    )
    p.add_argument(
        "--limits-out",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="the table of --limits as CSV",
    )
    p.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="FIELD=N[%],...",
        help="the most the configuration the pick would adopt may change, e.g. "
        "flips_to_refused=0.1%%,clients_affected=5 (%% of the trace's requests or clients); "
        "over it, exit status 1",
    )
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="PLAN.md",
        help="write the plan as Markdown: the question, the coverage, the scorecard, the "
        "clients most affected, the pick and the budget",
    )
    p.add_argument(
        "--top",
        type=positive_int,
        default=5,
        metavar="N",
        help="clients listed per candidate (default 5)",
    )
    p.add_argument(
        "--shards",
        type=positive_int,
        default=1,
        metavar="N",
        help="split the trace by client into N shards; the same scorecard as one shard. Each "
        "shard runs on a fake server of its own, or on the run's server one after another; "
        "with --scheduler on valkey (the default where it is chosen) every task starts a "
        "valkey-server of its own",
    )
    p.add_argument(
        "--scheduler",
        type=scheduler_address,
        default=None,
        metavar="ADDRESS",
        help="run candidates x shards as Dask tasks: local (a LocalCluster), tcp://HOST:PORT "
        "(the workers must see this machine's temporary folder: TMPDIR on a shared disk) or "
        "serial; default: here, one after another",
    )
    add_backend_options(p, chosen=True)  # not named: simulator.cli.chosen picks
    add_script_option(p)
    p.set_defaults(func=cmd_compare)
