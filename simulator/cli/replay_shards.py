"""``replay --shards N``: a trace split by client, the shards replayed at once, one CSV out.

A per-client limiter decides each client's requests from that client's requests alone, so the
trace is dealt by client into shards (:mod:`simulator.comparison.split`: every request of one
client in one shard, each shard in time order with each request's line), each shard is replayed
on a fake server of its own - here one after another, or as Dask tasks (``--scheduler``) - and
each writes its decisions to a file of its own. The decisions are then written out in input
order through the same writer as the serial replay (what is out of order is sorted on disk), so
the output is the serial replay's, byte for byte.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from typing import Any

from simulator.cli.args import UsageError, positive_int, scheduler_address

__all__ = ["add_shard_options", "replay_sharded"]

#: One shard's replay as a task takes it: algorithm, limit, window_ms, params, the shard file,
#: the file for its decisions and the user's script, if the algorithm is one.
ShardReplay = tuple[str, int, int, dict[str, float], str, str, Any]


def add_shard_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shards",
        type=positive_int,
        default=1,
        metavar="N",
        help="split the trace by client into N shards, each replayed on a fake server of its "
        "own (fakeredis only; the same output as one); default 1",
    )
    p.add_argument(
        "--scheduler",
        type=scheduler_address,
        default=None,
        metavar="ADDRESS",
        help="with --shards: run the shards as Dask tasks, local (a LocalCluster) or "
        "tcp://HOST:PORT (the workers must see TMPDIR); default: here, one after another",
    )


def _replay_shard(task: ShardReplay) -> int:
    """One shard on a fake server of its own (here or on a worker): its decisions, a pickled
    batch per pipeline, into its file. The number of decisions."""
    from simulator.backends import FakeRedisBackend
    from simulator.comparison.split import read_shard
    from simulator.playback.run import replay_requests
    from simulator.userscripts.shipping import install

    algorithm, limit, window_ms, params, shard_file, out_file, script = task
    install(script)
    with open(out_file, "wb") as fh:
        done = replay_requests(
            read_shard(shard_file),
            algorithm,
            limit,
            window_ms,
            FakeRedisBackend(),
            on_rows=lambda rows: pickle.dump(rows, fh, pickle.HIGHEST_PROTOCOL),
            params=params,
        )
    return done.decided


def _batches(path: str) -> Any:
    with open(path, "rb") as fh:
        while True:
            try:
                yield pickle.load(fh)
            except EOFError:
                return


def replay_sharded(args: argparse.Namespace) -> int:
    """``replay`` with ``--shards N`` (N > 1)."""
    from simulator.algorithms import ALGORITHMS
    from simulator.cli.args import params_for
    from simulator.cli.chosen import say_chosen
    from simulator.cli.runs import OutputError, sigterm_interrupts
    from simulator.cli.tally import ReplayTally
    from simulator.comparison.split import MAX_SHARDS, split_trace
    from simulator.engine.shards import not_per_client
    from simulator.engine.workers import SERIAL, dask_client, run_tasks
    from simulator.playback.output import DecisionCsv, HeaderColumns
    from simulator.playback.spool import SpoolError, work_folder
    from simulator.policy import resolve
    from simulator.userscripts.shipping import shipped

    if args.shards > MAX_SHARDS:
        raise UsageError(f"--shards: at most {MAX_SHARDS}, got {args.shards}")
    if not args.backend.virtual_time:
        raise UsageError("--shards: each shard runs on a fake server of its own (fakeredis)")
    why = not_per_client(ALGORITHMS[args.algorithm])
    if why is not None:
        raise UsageError(f"--shards: {why}")
    window_ms = round(args.window * 1000)
    params = params_for(args.algorithm, args.param, strict=True)
    tally = ReplayTally()
    try:
        with sigterm_interrupts(), work_folder() as workdir:
            split = split_trace(args.trace, args.source, workdir, args.shards)
            script = shipped(args.algorithm)
            tasks: list[ShardReplay] = [
                (args.algorithm, args.limit, window_ms, params, str(f), f"{f}.out", script)
                for k, f in enumerate(split.shard_files)
                if split.shard_requests[k]
            ]
            headers = None
            if args.headers is not None:
                policy = resolve(args.algorithm, args.limit, window_ms, params)
                headers = HeaderColumns.of(args.headers, policy)

            def write(chosen: list[ShardReplay]) -> None:
                # In input order, as the serial replay writes: each shard's rows are sorted back.
                sink = DecisionCsv(args.out, False, None, workdir, split.costs, headers)
                complete = False
                try:
                    for task in chosen:
                        for rows in _batches(task[5]):
                            tally(rows)
                            sink(rows)
                    complete = True
                finally:
                    sink.close(complete)

            finished: list[int] = []
            try:
                with dask_client(SERIAL if args.scheduler is None else args.scheduler) as client:
                    for i, _, exc in run_tasks(client, _replay_shard, tasks):
                        if exc is not None:
                            raise exc
                        finished.append(i)
            except KeyboardInterrupt:
                _keep_finished(args, [tasks[i] for i in sorted(finished)], len(tasks), write)
                raise
            write(tasks)
    except (SpoolError, OutputError) as exc:
        raise UsageError(str(exc)) from None
    where = f"; wrote {args.out}" if args.out else ""
    say_chosen(args, sys.stderr)  # as the serial replay does, with the summary
    print(f"{tally.summary(args.algorithm)} ({len(tasks)} shards){where}", file=sys.stderr)
    return 0


def _keep_finished(args: argparse.Namespace, done: list[Any], total: int, write: Any) -> None:
    """The run stopped before every shard was replayed: the rows of the shards that were are
    written (in input order among themselves; the other shards' clients are missing), and the
    message says how many shards that is."""
    if not done:
        print(f"none of the {total} shards was finished before the stop", file=sys.stderr)
        return
    try:
        write(done)
    except BaseException as exc:  # a second Ctrl-C, a full disk: the stop still goes on
        print(f"the finished shards' rows could not be written ({exc})", file=sys.stderr)
        return
    where = f" to {args.out}" if args.out else ""
    print(
        f"{len(done)} of {total} shards were finished before the stop: their rows written{where} "
        "(the other shards' clients are missing)",
        file=sys.stderr,
    )
