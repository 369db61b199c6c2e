"""``bench compare``: four candidates scored over a large synthetic access log, serial vs Dask.

A synthetic access log (:mod:`simulator.comparison.synthetic`: Zipf clients, a diurnal rate,
bursts; ``--decisions N`` x 500 lines, 5,000,000 by default) is compared with a baseline and four
candidates, each a child process of its own: once here, one task after another (one shard), and
once split into two shards on a LocalCluster of two worker processes (started before the clock
starts). Each child prints its wall time, decisions per second (requests x configurations) and
its peak resident memory (``VmHWM``), and the Dask child the workers' peaks too (each task
reports its own process's); the two scorecards are compared. Nothing is asserted about time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["bench_compare", "BASELINE", "CANDIDATES"]

BASELINE = "fixed_window:limit=100,window=60"
CANDIDATES = (
    "sliding_log:limit=100,window=60",
    "sliding_counter:limit=100,window=60",
    "token_bucket:limit=100,window=60,burst=20",
    "gcra:limit=100,window=60,burst=20",
)

_CHILD = """
import json, sys, time
from simulator.bench.compare import BASELINE, CANDIDATES
from simulator.comparison import Listeners, compare
from simulator.comparison.score import _peak_rss_kb

path, workers, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
workers_kb = []
if workers:
    from simulator.engine.workers import dask_client
    with dask_client("local", workers=workers) as client:
        client.wait_for_workers(workers)
        start = time.perf_counter()
        score, _ = compare(path, BASELINE, list(CANDIDATES), fmt="clf", shards=workers,
                           scheduler=client,
                           listeners=Listeners(on_task=lambda p: workers_kb.append(p.peak_rss_kb)))
        wall = time.perf_counter() - start
else:
    start = time.perf_counter()
    score, _ = compare(path, BASELINE, list(CANDIDATES), fmt="clf")
    wall = time.perf_counter() - start
score.to_csv(out, index=False)
print(json.dumps({"wall_s": wall, "requests": int(score["requests"].iloc[0]),
                  "configurations": len(score), "peak_kb": _peak_rss_kb(),
                  "workers_kb": max(workers_kb) if workers_kb else 0}))
"""


def _child(path: Path, workers: int, out: Path) -> dict:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(workers), str(out)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise RuntimeError(f"bench compare child failed: {said[-1] if said else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_compare(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    from simulator.comparison.synthetic import SyntheticLog, write_log

    lines = decisions * 500
    shape = SyntheticLog(lines, clients=max(1000, lines // 25), seed=1)
    out(
        f"compare: a synthetic access log of {lines:,} lines ({shape.clients:,} Zipf clients, "
        f"s={shape.zipf}, {shape.rate_per_s:g} req/s diurnal, bursts), baseline {BASELINE} and "
        f"{len(CANDIDATES)} candidates (real Lua on fakeredis); {os.cpu_count()} cores, load "
        f"average {os.getloadavg()[0]:.2f} at the start"
    )
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        log = Path(tmp) / "synthetic.log"
        start = time.perf_counter()
        write_log(log, shape)
        out(
            f"log written in {time.perf_counter() - start:.1f} s ({log.stat().st_size / 1e6:,.0f} MB)"
        )
        runs = {
            "serial, 1 shard": _child(log, 0, Path(tmp) / "serial.csv"),
            "2 shards, 2 workers": _child(log, 2, Path(tmp) / "dask.csv"),
        }
        same = (Path(tmp) / "serial.csv").read_bytes() == (Path(tmp) / "dask.csv").read_bytes()
    out(f"{'where':<20} {'wall s':>8} {'decisions/s':>12} {'peak RSS':>9} {'worker peak':>12}")
    for name, r in runs.items():
        rate = r["requests"] * r["configurations"] / r["wall_s"]
        worker = f"{r['workers_kb'] / 1024:,.0f} MB" if r["workers_kb"] else ""
        out(
            f"{name:<20} {r['wall_s']:>8.1f} {rate:>12,.0f} {r['peak_kb'] / 1024:>6,.0f} MB {worker:>12}"
        )
    speedup = runs["serial, 1 shard"]["wall_s"] / runs["2 shards, 2 workers"]["wall_s"]
    out(
        f"speed-up serial -> 2 workers: {speedup:.2f}x; same scorecard: {same}; load average at "
        f"the end {os.getloadavg()[0]:.2f}"
    )
