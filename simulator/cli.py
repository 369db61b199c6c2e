"""Command line: ``python -m simulator {burst,replay,charts,bench} ...``.

Bad input (an unknown algorithm, a limit of 0, a malformed trace line) gets one message naming
the field or line and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.backends import BackendError, ScriptError
from simulator.jobs import JOB_NAMES
from simulator.scenario import MAX_LIMIT, MAX_T_MS, MAX_WINDOW_MS, ConfigError
from simulator.traces import TraceError

__all__ = ["main", "build_parser", "UsageError"]


class UsageError(Exception):
    """Bad input from the command line; exit status 2."""


def positive_int(text: str) -> int:
    return _integer(text, 1, None)


def _integer(text: str, minimum: int, maximum: int | None) -> int:
    wanted = (
        f"an integer >= {minimum}"
        if maximum is None
        else f"an integer from {minimum} to {maximum:,}"
    )
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
    if value < minimum or (maximum is not None and value > maximum):
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}")
    return value


def limit_count(text: str) -> int:
    """A limit per window: 1 to MAX_LIMIT (scripts count in Lua numbers, exact below 2^53)."""
    return _integer(text, 1, MAX_LIMIT)


def _number(text: str, minimum: float, inclusive: bool, maximum: float | None = None) -> float:
    wanted = f"a number {'>=' if inclusive else '>'} {minimum:g}"
    if maximum is not None:
        wanted += f" and <= {maximum:,.0f}"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
    if (
        not math.isfinite(value)
        or value < minimum
        or (value == minimum and not inclusive)
        or (maximum is not None and value > maximum)
    ):
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    return _number(text, 0, inclusive=False)


def nonneg_float(text: str) -> float:
    return _number(text, 0, inclusive=True)


def window_seconds(text: str) -> float:
    """A window in seconds that is a whole number of milliseconds from 1 ms to MAX_WINDOW_MS."""
    seconds = _number(text, 0, inclusive=False, maximum=MAX_WINDOW_MS / 1000)
    if round(seconds * 1000) < 1:
        raise argparse.ArgumentTypeError(
            f"must be at least 0.001 (one millisecond: scripts count whole ms), got {text!r}"
        )
    return seconds


def second_of_run(text: str) -> float:
    """A time in the run, in seconds from its start (>= 0, within what a script can hold)."""
    return _number(text, 0, inclusive=True, maximum=MAX_T_MS / 1000)


def algorithm_name(text: str) -> str:
    if text not in ALGORITHMS:
        raise argparse.ArgumentTypeError(
            f"unknown algorithm {text!r}; choose from {', '.join(ALGORITHMS)}"
        )
    return text


def add_limit_options(
    p: argparse.ArgumentParser, limit: int | None, window_s: float | None
) -> None:
    p.add_argument(
        "--limit",
        type=limit_count,
        default=limit,
        required=limit is None,
        help=f"requests allowed per window (integer, 1 to {MAX_LIMIT:,})"
        + (f"; default {limit}" if limit else ""),
    )
    p.add_argument(
        "--window",
        type=window_seconds,
        default=window_s,
        required=window_s is None,
        metavar="SECONDS",
        help="window length in seconds (0.001 to "
        f"{MAX_WINDOW_MS / 1000:,.0f}; rounded to whole ms)"
        + (f"; default {window_s:g}" if window_s else ""),
    )


# --- burst -----------------------------------------------------------------------------------
def backend_spec(text: str) -> str:
    from simulator.backends.specs import BACKEND_SPECS, is_spec

    if is_spec(text):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown backend {text!r}; choose from {', '.join(BACKEND_SPECS)}"
    )


def add_backend_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        type=backend_spec,
        default="fakeredis",
        metavar="SPEC",
        help="where the scripts run: fakeredis (default, simulated clock), valkey (starts an "
        "embedded valkey-server on 127.0.0.1), cluster (starts a 3-master Valkey Cluster), "
        "redis://HOST:PORT/DB or redis+cluster://HOST:PORT (a running server). On a real server "
        "fixed_window, sliding_log and sliding_counter run on simulated time (their decisions do "
        "not depend on the server's clock); echomq, whose window is the key's TTL, runs on real time. "
        "A server the program starts takes only clients with the random password the program "
        "holds (valkey's own clients also connect through a unix socket of mode 0700); a process "
        "of the same user can still read that password (its config file, /proc)",
    )
    p.add_argument(
        "--max-realtime",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="longest real-time run accepted for echomq on a real server (default 10)",
    )
    p.add_argument(
        "--reuse-keys",
        action="store_true",
        help="on a server the program did not start, run even if keys this run uses exist "
        "already (left by an earlier run, they change the decisions; without this flag the "
        "run is refused)",
    )


def _print_time_notes(algorithms: Sequence[str], backend: Any) -> None:
    from simulator.realtime import time_note

    if not backend.virtual_time:
        for algorithm in algorithms:
            print(time_note(algorithm, backend), file=sys.stderr)


def cmd_burst(args: argparse.Namespace) -> int:
    import contextlib

    from simulator.metrics import burst_summary
    from simulator.model import boundary_burst
    from simulator.realtime import needs_real_time
    from simulator.runs import leftover_keys, open_backend, run_keys, stop_between_calls

    frames, skipped = [], []
    span_s = max(args.first, args.second) + 0.001
    window_ms = round(args.window * 1000)
    requests = [("user", math.floor(s * 1000.0)) for s in (args.first, args.second)]
    with open_backend(args.backend) as backend:
        _print_time_notes(list(ALGORITHMS), backend)
        chosen = []
        for a in ALGORITHMS:
            if needs_real_time(backend, a) and span_s > args.max_realtime:
                skipped.append(a)
            else:
                chosen.append(a)

        def keys() -> list[str]:
            return [
                k for a in chosen for k in run_keys(a, args.limit, window_ms, requests, backend)
            ]

        problem = None if args.reuse_keys else leftover_keys(backend, args.backend, keys)
        if problem is not None:
            raise UsageError(problem)
        stopping = contextlib.nullcontext() if backend.virtual_time else stop_between_calls(backend)
        with stopping:
            for a in chosen:
                frames.append(
                    boundary_burst(
                        a,
                        args.limit,
                        args.window,
                        args.first,
                        args.second,
                        args.per_burst,
                        None if backend.virtual_time else backend,  # a fresh fake server each
                    )
                )
    summary = burst_summary(pd.concat(frames, ignore_index=True), round(args.window * 1000))
    n = args.limit if args.per_burst is None else args.per_burst
    print(
        f"{n} requests at second {args.first:g} and {n} at second {args.second:g}; "
        f"limit {args.limit} per {args.window:g} s"
    )
    print(
        f"{'algorithm':<16} {'admitted':>9} {'most in any ' + format(args.window, 'g') + ' s':>18}"
    )
    for algorithm, row in summary.iterrows():
        print(
            f"{algorithm:<16} {int(row['admitted']):>5} of {int(row['requests']):<3}"
            f"{int(row['max_in_window']):>14}  ({row['ratio_to_limit']:.2f}x limit)"
        )
    for algorithm in skipped:
        print(
            f"{algorithm:<16} skipped: on {args.backend} it runs on real time and this burst "
            f"lasts {span_s:g} s (over --max-realtime {args.max_realtime:g}); try "
            f"--window 0.5 --first 0.45 --second 0.55, or raise --max-realtime"
        )
    return 0


# --- replay ----------------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a trace file into a decision CSV, streaming: memory stays bounded at any length."""
    from simulator.runs import OutputError, check_output
    from simulator.spool import SpoolError

    try:
        check_output(args.out, args.trace)  # before anything is computed
    except OutputError as exc:
        raise UsageError(str(exc)) from None
    bar_options: dict[str, Any] = {"unit": "req", "disable": None, "file": sys.stderr}
    try:
        done, tally = _replay_through_files(args, bar_options)
    except SpoolError as exc:  # the temporary folder is full
        raise UsageError(str(exc)) from None
    print(
        tally.summary(args.algorithm) + (f"; wrote {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    if not done.server_clock_safe:
        print(
            f"warning: {args.algorithm} on {args.backend}: the replay ran slower than real "
            "time over less than a window; server-side expiry may have changed decisions",
            file=sys.stderr,
        )
    return 0


def _replay_through_files(args: argparse.Namespace, bar_options: dict[str, Any]) -> tuple[Any, Any]:
    """The replay itself: trace file in, decision CSV out, a temporary folder for the sorts.

    The trace is read twice: once to check every line, count the requests and sort those out
    of order into runs in the folder; once more, merged with those runs, while it is replayed.
    Returns what :func:`~simulator.model.replay_requests` did and the summary's tally.
    """
    import tempfile
    from collections.abc import Iterator

    from tqdm import tqdm

    from simulator.model import replay_requests
    from simulator.realtime import needs_real_time
    from simulator.runs import (
        DecisionCsv,
        KeyGroup,
        OutputError,
        leftover_keys_in_groups,
        open_backend,
        run_keys,
        sigterm_interrupts,
        stop_between_pipelines,
    )
    from simulator.tally import ReplayTally
    from simulator.traces import scan_trace

    with sigterm_interrupts(), tempfile.TemporaryDirectory(prefix="replay-") as workdir:
        with tqdm(desc=f"read {args.trace.name}", **bar_options) as bar:
            scan = scan_trace(args.trace, args.format, workdir, bar.update)
        if not scan.requests:
            raise UsageError(f"{args.trace}: the trace holds no requests")
        with open_backend(args.backend) as backend, stop_between_pipelines() as stop:
            _print_time_notes([args.algorithm], backend)
            span_s = (scan.t_max_ms - scan.t_min_ms) / 1000
            if needs_real_time(backend, args.algorithm) and span_s > args.max_realtime:
                raise UsageError(
                    f"{args.algorithm} on {args.backend} runs on real time and this trace spans "
                    f"{span_s:,.1f} s (over --max-realtime {args.max_realtime:g}); replay it on "
                    "fakeredis, or raise --max-realtime"
                )
            window_ms = round(args.window * 1000)

            def key_groups() -> Iterator[KeyGroup]:
                # A long trace's keys are looked up a slice of it at a time, never all at once.
                for part in scan.in_file_order(131_072):
                    first, last = part.positions[0] + 1, part.positions[-1] + 1
                    whole = first == 1 and last == scan.requests
                    which = None if whole else f"requests {first:,} to {last:,} of the trace"
                    requests = zip(part.clients, part.t_ms, strict=True)
                    yield which, run_keys(args.algorithm, args.limit, window_ms, requests, backend)

            problem = (
                None
                if args.reuse_keys
                else leftover_keys_in_groups(backend, args.backend, key_groups)
            )
            if problem is not None:  # refused before the output file is touched
                raise UsageError(problem)
            tally = ReplayTally()
            complete = False
            try:
                sink = DecisionCsv(args.out, scan.in_order, stop, workdir)

                def on_rows(rows: list[Any]) -> None:
                    tally(rows)
                    sink(rows)

                try:
                    with tqdm(
                        total=scan.requests, desc=f"replay {args.algorithm}", **bar_options
                    ) as bar:
                        done = replay_requests(
                            scan.in_time_order(),
                            args.algorithm,
                            args.limit,
                            window_ms,
                            backend,
                            on_progress=bar.update,
                            pipeline=args.pipeline,
                            on_rows=on_rows,
                            total=scan.requests,
                        )
                    complete = True
                except (BackendError, ScriptError) as exc:
                    sink.close(complete)
                    said = f"{exc}; the {sink.written} decisions made are in {sink.where}"
                    raise type(exc)(said) from exc
                finally:
                    sink.close(complete)
            except OutputError as exc:  # a full disk: what was written whole stays
                raise UsageError(str(exc)) from None
    return done, tally


# --- charts ----------------------------------------------------------------------------------
#: Modules that add their own subcommands through a ``register(subparsers)`` function.
COMMAND_MODULES: list[str] = [
    "simulator.cli_memory",
]


def _resolve(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def cmd_charts(args: argparse.Namespace) -> int:
    from simulator.jobs import CHART_JOBS

    out_dir = Path(args.out_dir)
    for name, job in CHART_JOBS.items():
        if args.only and name not in args.only:
            continue
        for path in job(out_dir, args.full):
            print(f"wrote {path}", flush=True)
    return 0


# --- bench -----------------------------------------------------------------------------------
def cmd_bench(args: argparse.Namespace) -> int:
    from simulator.bench import SECTIONS

    for name in args.sections or list(SECTIONS):
        if name not in SECTIONS:
            raise UsageError(f"bench: unknown section {name!r}; known: {', '.join(SECTIONS)}")
        SECTIONS[name](args.decisions)
        print()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator",
        description="Rate-limit window workbench: real Lua limiters on a SimPy virtual clock.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    p.add_argument(
        "--per-burst",
        type=positive_int,
        default=None,
        metavar="N",
        help="requests in each burst (default: the limit)",
    )
    add_backend_options(p)
    p.set_defaults(func=cmd_burst)

    p = sub.add_parser(
        "replay",
        help="replay a request trace through one algorithm",
        description="Replays TRACE in time order (ties in file order) on the virtual clock and "
        "writes one CSV row per input row, in input order. The trace is streamed: memory stays "
        "bounded however long it is (what is out of order is sorted in a temporary folder, "
        "TMPDIR). Client ids are kept byte for byte, also bytes that are not UTF-8.",
    )
    p.add_argument(
        "trace",
        type=Path,
        metavar="TRACE",
        help="CSV with header t_ms,client (whole ms, any origin, from 0 to 2^52-1; a decimal "
        "such as 12.5 is floored), or an access log with --format clf",
    )
    p.add_argument(
        "--algorithm", type=algorithm_name, required=True, help=f"one of: {', '.join(ALGORITHMS)}"
    )
    add_limit_options(p, None, None)
    p.add_argument(
        "--format",
        choices=("csv", "clf"),
        default="csv",
        help="csv (t_ms,client) or clf (Apache/Nginx combined log; client = remote host)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="output CSV (default: standard output), written as the replay goes: if it stops "
        "early, every decision made so far is in it. Checked before the run: a missing folder, "
        "a folder, a file that cannot be written or the trace itself is refused",
    )
    add_backend_options(p)
    p.add_argument(
        "--pipeline",
        type=positive_int,
        default=None,
        metavar="N",
        help="on a real server, requests sent per pipeline (default 1000; 1 = one round trip "
        "per decision); decisions are the same either way",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "charts",
        help="regenerate the charts and tables under data/",
        description="Writes every chart (PNG and SVG) and its data under OUT_DIR.",
    )
    p.add_argument("--out-dir", default="data", metavar="DIR", help="output folder (default data)")
    p.add_argument(
        "--full", action="store_true", help="full-size studies where a job has a reduced default"
    )
    p.add_argument(
        "--only",
        nargs="+",
        choices=list(JOB_NAMES),
        default=None,
        metavar="JOB",
        help=f"run only these chart jobs (any of: {', '.join(JOB_NAMES)})",
    )
    p.set_defaults(func=cmd_charts)

    p = sub.add_parser(
        "bench",
        help="measure speed; prints figures and ratios",
        description="Runs the benchmark sections and prints decisions per second.",
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

    for spec in COMMAND_MODULES:
        _resolve(spec + ":register")(sub)
    return parser


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")  # charts are files here, never windows
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM (a job runner, `kill`) takes the same way out as Ctrl-C: servers stopped, files
    # closed, one message. Commands that must finish a call first install their own handler.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args) or 0)
    except (UsageError, ConfigError, TraceError) as exc:
        print(f"{parser.prog} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (BackendError, ScriptError) as exc:
        print(f"{parser.prog} {args.command}: failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = signal.SIGTERM if str(exc) == f"signal {int(signal.SIGTERM)}" else signal.SIGINT
        print(
            f"{parser.prog} {args.command}: interrupted ({signal.Signals(signum).name})",
            file=sys.stderr,
        )
        return 128 + signum
    finally:
        signal.signal(signal.SIGTERM, previous)
