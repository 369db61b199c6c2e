"""The runs of ``bench compare``, each in a child process of its own (so that its peak memory is
its own): the comparison on ``backend`` (a spec), here or on ``workers`` Dask workers (then
always :data:`SHARDS` shards, so that one worker and two run the same tasks). Each task done is
a line on standard error (``bench compare`` passes it on as its progress).

``python -m simulator.bench.compare_runs --lines 200000``: the bench over a shorter log."""

from __future__ import annotations

import sys
import time
from typing import Any

from simulator.bench.compare import BASELINE, CANDIDATES, LINES, bench_compare

__all__ = ["run", "main", "SHARDS", "PROGRESS"]

#: The shards of a run on Dask, whatever the number of workers.
SHARDS = 2
#: How a child's progress line starts on its standard error.
PROGRESS = "bench progress: "


def _server_peak_kb(backend: Any) -> int:
    """The valkey-server's peak resident memory (``VmHWM``), in kB; 0 where there is none."""
    server = getattr(backend, "owned", None)
    try:
        with open(f"/proc/{server.pid}/status") as fh:  # type: ignore[union-attr]
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except (AttributeError, OSError, StopIteration, ValueError):
        return 0


def run(path: str, spec_text: str, workers: int, out: str) -> dict[str, Any]:
    from simulator.backends import make_backend
    from simulator.backends.specs import resolve_spec
    from simulator.comparison import Listeners, compare
    from simulator.comparison.score import _peak_rss_kb
    from simulator.engine.workers import dask_client

    spec = resolve_spec(spec_text)
    workers_kb: list[int] = []
    tasks = (len(CANDIDATES) + 1) * (SHARDS if workers else 1)

    def on_task(part: Any) -> None:
        workers_kb.append(part.peak_rss_kb)
        print(f"{PROGRESS}{len(workers_kb)} of {tasks} tasks done ({part.candidate})", file=sys.stderr,
              flush=True)  # fmt: skip

    listeners = Listeners(on_task=on_task)
    server_kb = 0
    if workers:
        with dask_client("local", workers=workers) as client:
            client.wait_for_workers(workers)
            start = time.perf_counter()
            backend = None if spec.virtual_time else spec  # each task a server of its own
            score, _ = compare(
                path, BASELINE, list(CANDIDATES), fmt="clf", shards=SHARDS,
                scheduler=client, backend=backend, listeners=listeners,
            )  # fmt: skip
            wall = time.perf_counter() - start
    else:
        live = make_backend(spec)
        try:
            start = time.perf_counter()
            real = None if live.virtual_time else live
            score, _ = compare(
                path, BASELINE, list(CANDIDATES), fmt="clf", backend=real, listeners=listeners
            )
            wall = time.perf_counter() - start
            server_kb = _server_peak_kb(live)
        finally:
            live.close()  # and its own server stopped
    score.to_csv(out, index=False)
    return {
        "wall_s": wall,
        "requests": int(score["requests"].iloc[0]),
        "configurations": len(score),
        "peak_kb": _peak_rss_kb(),
        "workers_kb": max(workers_kb) if workers else 0,
        "server_kb": server_kb,
    }


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m simulator.bench.compare_runs", description=__doc__.splitlines()[0]
    )
    p.add_argument("--lines", type=int, default=LINES, help=f"the log's lines (default {LINES:,})")
    bench_compare(lines=max(1_000, p.parse_args(argv).lines))


if __name__ == "__main__":
    main()
