"""``python -m simulator replay``: a trace through one algorithm, streamed from file to file."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simulator.algorithms import ALGORITHMS
from simulator.backends import BackendError, ScriptError
from simulator.cli.args import (
    UsageError,
    add_backend_options,
    add_limit_options,
    add_param_option,
    add_script_option,
    algorithm_name,
    params_for,
    positive_int,
    print_time_notes,
    without_commands,
)
from simulator.cli.replay_shards import add_shard_options
from simulator.cli.traceargs import add_trace_options, trace_source
from simulator.records import HEADER_STYLES

__all__ = ["register", "cmd_replay"]


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a trace file into a decision CSV, streaming: memory stays bounded at any length."""
    from simulator.backends.choice import shortest_window_ms
    from simulator.cli.chosen import choose, decide_again, say_chosen
    from simulator.cli.runs import OutputError, check_output
    from simulator.playback.spool import SpoolError

    args.source = trace_source(args)  # the format, key and time checked before anything is read
    window_ms = round(args.window * 1000)
    params = params_for(args.algorithm, args.param, strict=True)
    choose(  # --backend not named: the fastest that decides alike, said with the summary
        args,
        [ALGORITHMS[args.algorithm]],
        shards=args.shards > 1,
        window_ms=shortest_window_ms(window_ms, params),
    )
    try:
        check_output(args.out, args.trace)  # before anything is computed
    except OutputError as exc:
        raise UsageError(str(exc)) from None
    if args.headers is not None:
        _check_header_policy(args)
    if args.shards > 1:
        from simulator.cli.replay_shards import replay_sharded

        return replay_sharded(args)
    bar_options: dict[str, Any] = {"unit": "req", "disable": None, "file": sys.stderr}
    try:
        with _stdout_held(args):
            done, tally = _replay_through_files(args, bar_options)
            if decide_again(args):  # the chosen Valkey expired keys on its own clock
                done, tally = _replay_through_files(args, bar_options)
    except SpoolError as exc:  # the temporary folder is full
        raise UsageError(str(exc)) from None
    say_chosen(args, sys.stderr)  # once the run is done: bad input stays one line
    print(
        tally.summary(args.algorithm) + (f"; wrote {args.out}" if args.out else ""),
        file=sys.stderr,
    )
    _warn_server_clock(args, done)
    return 0


def _warn_server_clock(args: argparse.Namespace, done: Any) -> None:
    """A named real server whose clock may have changed decisions, said after the summary: on
    a server the run started, by the keys it expired (exact); on somebody else's, by how fast
    the run went against the window (its counts are not this run's alone)."""
    if args.backend.virtual_time:
        return
    expired = vars(args).get("keys_expired", 0)
    if not args.backend.foreign and expired:
        keys = f"{expired:,} key{'s' * (expired != 1)}"
        print(
            f"warning: {args.algorithm} on {args.backend}: the server expired {keys} "
            "on its own clock before the simulated run was done with them, so some decisions "
            "may differ from the simulated clock's; --backend fakeredis replays it on the "
            "simulated clock",
            file=sys.stderr,
        )
    elif args.backend.foreign and not done.server_clock_safe:
        print(
            f"warning: {args.algorithm} on {args.backend}: the replay ran slower than real "
            "time over less than a window; server-side expiry may have changed decisions",
            file=sys.stderr,
        )


@contextlib.contextmanager
def _stdout_held(args: argparse.Namespace) -> Iterator[None]:
    """Decisions bound for standard output on a chosen real server, held in a temporary file
    until the run is done (it may be decided again on the fake server) and then copied out,
    also when the run stops early: nothing computed is lost, nothing is written twice."""
    from simulator.cli.chosen import chosen

    if args.out is not None or chosen(args) is None or args.backend.virtual_time:
        yield
        return
    fd, name = tempfile.mkstemp(prefix="replay-", suffix=".csv")
    os.close(fd)
    args.out = Path(name)
    try:
        yield
    finally:
        args.out = None
        sys.stdout.flush()
        with open(name, "rb") as held:
            shutil.copyfileobj(held, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        os.unlink(name)


def _check_header_policy(args: argparse.Namespace) -> None:
    """``--headers`` with a policy whose fields a header cannot hold is refused up front."""
    from simulator.headers import check_policy

    params = params_for(args.algorithm, args.param, strict=True)
    declared = {p.name for p in ALGORITHMS[args.algorithm].params_declared}
    burst = int(params.get("burst", args.limit)) if "burst" in declared else None
    try:
        check_policy(
            args.limit, round(args.window * 1000), burst, names=("--limit", "--param burst")
        )
    except ValueError as exc:
        raise UsageError(f"{exc}: too large for --headers") from None


def _replay_through_files(args: argparse.Namespace, bar_options: dict[str, Any]) -> tuple[Any, Any]:
    """The replay itself: trace file in, decision CSV out, a temporary folder for the sorts.

    The trace is read twice: once to check every line, count the requests and sort those out
    of order into runs in the folder; once more, merged with those runs, while it is replayed.
    Returns what :func:`~simulator.playback.run.replay_requests` did and the summary's tally.
    """
    from tqdm import tqdm

    from simulator.backends.embedded import expired_keys
    from simulator.cli.chosen import chosen, note_expired, open_chosen
    from simulator.cli.runs import (
        DecisionCsv,
        KeyGroup,
        OutputError,
        leftover_keys_in_groups,
        run_keys,
        sigterm_interrupts,
        stop_between_pipelines,
    )
    from simulator.cli.tally import ReplayTally
    from simulator.engine.realtime import ServerClockWarning, runs_on_real_time
    from simulator.playback.output import HeaderColumns
    from simulator.playback.run import Streaming, replay_requests
    from simulator.playback.scan import scan_trace
    from simulator.playback.spool import work_folder
    from simulator.policy import resolve
    from simulator.userscripts.foreign import is_foreign

    with sigterm_interrupts(), work_folder() as workdir:
        with tqdm(desc=f"read {args.trace.name}", **bar_options) as bar:
            scan = scan_trace(args.trace, args.source, workdir, bar.update)
        if not scan.requests:
            raise UsageError(f"{args.trace}: the trace holds no requests")
        with open_chosen(args) as backend, stop_between_pipelines() as stop:
            _, lacking = without_commands([args.algorithm], backend)
            if lacking is not None:
                raise UsageError(lacking)
            if chosen(args) is None:  # a chosen backend's line says which clock, at the end
                print_time_notes([args.algorithm], backend)
            span_s = (scan.t_max_ms - scan.t_min_ms) / 1000
            if (
                runs_on_real_time(backend, ALGORITHMS[args.algorithm])
                and span_s > args.max_realtime
            ):
                raise UsageError(
                    f"{args.algorithm} on {args.backend} runs on real time and this trace spans "
                    f"{span_s:,.1f} s (over --max-realtime {args.max_realtime:g}); replay it on "
                    "fakeredis, or raise --max-realtime"
                )
            window_ms = round(args.window * 1000)
            params = params_for(args.algorithm, args.param, strict=True)
            policy = resolve(args.algorithm, args.limit, window_ms, params)  # once, for all below

            def key_groups() -> Iterator[KeyGroup]:
                # A long trace's keys are looked up a slice of it at a time, never all at once.
                for part in scan.in_file_order(131_072):
                    first, last = part.positions[0] + 1, part.positions[-1] + 1
                    whole = first == 1 and last == scan.requests
                    which = None if whole else f"requests {first:,} to {last:,} of the trace"
                    requests = zip(part.clients, part.t_ms, strict=True)
                    yield (
                        which,
                        run_keys(policy, requests, backend),
                    )

            problem = (
                None
                if args.reuse_keys
                else leftover_keys_in_groups(backend, args.backend, key_groups)
            )
            if problem is not None:  # refused before the output file is touched
                raise UsageError(problem)
            _check_foreign(args, backend, scan, window_ms, params)
            tally = ReplayTally()
            complete = False
            try:
                headers = None
                if args.headers is not None:
                    headers = HeaderColumns.of(args.headers, policy)
                sink = DecisionCsv(
                    args.out, scan.in_order, stop, workdir, costs=scan.costs, headers=headers
                )

                def on_rows(rows: Any) -> None:
                    tally(rows)
                    sink(rows)

                try:
                    with tqdm(
                        total=scan.requests,
                        desc=f"replay {args.algorithm} on {args.backend}",
                        **bar_options,
                    ) as bar:
                        with warnings.catch_warnings():
                            if not backend.virtual_time and not is_foreign(backend):
                                # our own server counts its expiries: that, not a guess
                                warnings.simplefilter("ignore", ServerClockWarning)
                            done = replay_requests(
                                scan.in_time_order(),
                                policy,
                                None,
                                None,
                                backend,
                                on_progress=bar.update,
                                on_rows=on_rows,
                                streaming=Streaming(args.pipeline, scan.requests),
                            )
                    complete = True
                    note_expired(args, expired_keys(backend))  # before the keys are read again
                except (BackendError, ScriptError) as exc:
                    sink.close(complete)
                    said = f"{exc}; the {sink.written} decisions made are in {sink.where}"
                    raise type(exc)(said) from exc
                finally:
                    sink.close(complete)
            except OutputError as exc:  # a full disk: what was written whole stays
                raise UsageError(str(exc)) from None
    return done, tally


def _check_foreign(
    args: argparse.Namespace, backend: Any, scan: Any, window_ms: int, params: Any
) -> None:
    """On a server the program did not start: refused, or the script rehearsed on the fake
    server over the trace's first requests (see simulator.userscripts.foreign)."""
    from simulator.cli.rehearsal import first_requests, rehearse_requests
    from simulator.userscripts.foreign import check_foreign, is_foreign

    if not is_foreign(backend):
        return
    first = first_requests(scan.in_time_order())
    rehearsal = rehearse_requests(first, args.limit, window_ms, params)
    check_foreign(backend, [args.algorithm], args, rehearsal)


def register(sub: Any) -> None:
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
        help="CSV with header t_ms,client[,cost] (whole ms, any origin, from 0 to 2^52-1; a "
        "decimal such as 12.5 is floored; cost: what each request counts, a whole number >= 1, "
        "default 1), or a log (--format, --log-format below), plain, .gz or .zst",
    )
    p.add_argument(
        "--algorithm", type=algorithm_name, required=True, help=f"one of: {', '.join(ALGORITHMS)}"
    )
    add_limit_options(p, None, None)
    add_trace_options(p)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="output CSV (default: standard output), written as the replay goes: if it stops "
        "early, every decision made so far is in it. Checked before the run: a missing folder, "
        "a folder, a file that cannot be written or the trace itself is refused",
    )
    p.add_argument(
        "--headers",
        choices=HEADER_STYLES,
        default=None,
        help="also write the response header fields each client would have read, as columns "
        "(seconds, rounded up): draft = RateLimit-Policy and RateLimit "
        "(draft-ietf-httpapi-ratelimit-headers-11), legacy = RateLimit-Limit/-Remaining/-Reset, "
        "or both; Retry-After with each on a refusal",
    )
    add_param_option(p)
    add_backend_options(p, chosen=True)  # not named: simulator.cli.chosen picks
    p.add_argument(
        "--pipeline",
        type=positive_int,
        default=None,
        metavar="N",
        help="on a real server, requests sent per pipeline (default 1000; 1 = one round trip "
        "per decision); decisions are the same either way",
    )
    add_script_option(p)
    add_shard_options(p)
    p.set_defaults(func=cmd_replay)
