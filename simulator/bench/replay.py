"""Benchmark ``replay-stream``: how much memory and time a long trace file takes to replay.

A gateway's access log easily holds tens of millions of lines. The command line replays a trace
file streaming: it reads it in chunks, sorts what is out of order on disk, and writes the
decisions as they are made, so its memory does not grow with the trace. Before, it read the whole
trace into a frame, kept the whole decision log beside it, and for a trace out of order kept every
output row until the end: about 800 bytes per request.

Here a trace file is generated (in a temporary folder) and replayed end to end - read, decide,
write the CSV - in a child process, once as ``python -m simulator replay`` does now and once the
old way (the whole trace and log in memory through :func:`simulator.playback.run.replay`), for a trace
in time order and for the same requests written out of order, as an access log writes each line
when its request completes. Each child reports its own peak resident memory (``VmHWM``: the
replaying process alone, not the server), the parent times it. The two outputs must be the same
bytes (checked and printed).
"""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["bench_replay_stream", "write_bench_trace"]

CLIENTS = 50_000
REQUESTS_PER_MS = 20
ALGORITHM, LIMIT, WINDOW_S = "fixed_window", 20, 60
#: Rows replayed per backend at the default ``--decisions 10000`` (scaled in proportion).
ROWS = {"valkey": 5_000_000, "fakeredis": 50_000}
#: The longest a request waits before its line is written, in the trace out of order (ms).
COMPLETION_MS = 2000

# The child's own peak: VmHWM of its address space. (``ru_maxrss`` would do elsewhere, but on
# Linux it also counts the parent's size at the fork before ``exec``.)
_PEAK = """
def peak_kb():
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

_STREAMING = (
    _PEAK
    + """
import sys
from simulator.cli import main
code = main(sys.argv[1:])
print("PEAK_RSS_KB", peak_kb(), file=sys.stderr)
sys.exit(code)
"""
)

# What the command line did before: the whole trace and its log in memory; rows written as they
# come when the trace is in time order, kept and sorted at the end when it is not.
_IN_MEMORY = (
    _PEAK
    + """
import sys
from simulator.playback.run import replay
from simulator.playback.output import DecisionCsv
from simulator.cli.runs import open_backend
from simulator.playback.traces import read_trace
path, spec, out = sys.argv[1:4]
trace = read_trace(path)
t_ms = trace["t_ms"].to_numpy()
in_order = bool((t_ms[1:] >= t_ms[:-1]).all())
kept = []
with open_backend(spec, announce=False) as backend:
    sink = DecisionCsv(out, True)
    frame = replay(trace, "{algorithm}", {limit}, {window_ms}, backend,
                   on_rows=sink if in_order else kept.extend)
    if kept:
        sink(sorted(kept))
    sink.close()
refused = frame[~frame["allowed"]]
print(refused["client"].nunique(), frame["client"].nunique(), file=sys.stderr)
print("PEAK_RSS_KB", peak_kb(), file=sys.stderr)
"""
)


def write_bench_trace(path: Path, rows: int, in_order: bool, seed: int = 0) -> None:
    """``rows`` requests of :data:`CLIENTS` clients, :data:`REQUESTS_PER_MS` per ms, as a CSV."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    t_ms = np.sort(rng.integers(0, max(1, rows // REQUESTS_PER_MS), rows))
    clients = rng.integers(0, CLIENTS, rows)
    if not in_order:  # each line written when its request completes
        order = np.argsort(t_ms + rng.integers(0, COMPLETION_MS, rows), kind="stable")
        t_ms, clients = t_ms[order], clients[order]
    with path.open("w", newline="") as fh:  # in slices: the bench itself stays small
        for lo in range(0, rows, 500_000):
            names = np.char.add("client-", clients[lo : lo + 500_000].astype(str))
            part = pd.DataFrame({"t_ms": t_ms[lo : lo + 500_000], "client": names})
            part.to_csv(fh, index=False, header=lo == 0)


def _run(args: list[str]) -> tuple[float, float | None, str]:
    """Wall seconds, peak RSS in MB (None if the child failed) and stderr of one child."""
    env = {**os.environ, "TQDM_DISABLE": "1"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )
    wall_s = time.perf_counter() - start
    peak = re.search(r"PEAK_RSS_KB (\d+)", done.stderr)
    if done.returncode != 0 or peak is None:
        said = done.stderr.strip().splitlines()
        return wall_s, None, said[-1] if said else f"exit status {done.returncode}"
    return wall_s, int(peak.group(1)) / 1024, done.stderr


def bench_replay_stream(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    scale = decisions / 10_000
    out(
        f"replay-stream: python -m simulator replay on a CSV trace, end to end (read, decide, "
        f"write); {ALGORITHM}, limit {LIMIT} per {WINDOW_S} s, {CLIENTS:,} clients, "
        f"{REQUESTS_PER_MS} requests per ms; out of order = each line written when its request "
        f"completes (up to {COMPLETION_MS / 1000:g} s later); peak RSS of the replaying process "
        "(not the server); one run each"
    )
    out(
        f"{'backend':<10} {'rows':>10}  {'order':<12} {'path':<10} {'peak RSS':>9} "
        f"{'decisions/s':>12}  {'vs in memory':<22} same output"
    )
    rows_out: list[dict[str, object]] = []
    window = ["--algorithm", ALGORITHM, "--limit", str(LIMIT), "--window", str(WINDOW_S)]
    old = _IN_MEMORY.format(algorithm=ALGORITHM, limit=LIMIT, window_ms=WINDOW_S * 1000)
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        folder = Path(tmp)
        for backend, base_rows in ROWS.items():
            n = max(1000, round(base_rows * scale))
            for in_order in (True, False):
                order = "in order" if in_order else "out of order"
                trace = folder / f"trace-{n}-{int(in_order)}.csv"
                write_bench_trace(trace, n, in_order)
                new_csv, old_csv = folder / "streaming.csv", folder / "in_memory.csv"
                cli = ["-c", _STREAMING, "replay", str(trace), *window, "--backend", backend]
                measured = {
                    "streaming": _run([*cli, "--out", str(new_csv)]),
                    "in memory": _run(["-c", old, str(trace), backend, str(old_csv)]),
                }
                same = (
                    "yes"
                    if new_csv.exists()
                    and old_csv.exists()
                    and filecmp.cmp(new_csv, old_csv, False)
                    else "NO"
                )
                (new_s, new_mb, _), (old_s, old_mb, _) = measured.values()
                for path, (wall_s, peak_mb, err) in measured.items():
                    rate = n / wall_s
                    if peak_mb is None:
                        out(f"{backend:<10} {n:>10,}  {order:<12} {path:<10} failed: {err}")
                        continue
                    versus = ""
                    if path == "streaming" and new_mb is not None and old_mb is not None:
                        versus = f"RSS {new_mb / old_mb:.3f}x, speed {old_s / new_s:.2f}x"
                    out(
                        f"{backend:<10} {n:>10,}  {order:<12} {path:<10} {peak_mb:>6,.0f} MB "
                        f"{rate:>12,.0f}  {versus:<22} {same if path == 'streaming' else ''}"
                    )
                    rows_out.append(
                        {
                            "backend": backend,
                            "rows": n,
                            "order": order,
                            "path": path,
                            "peak_rss_mb": peak_mb,
                            "decisions_per_s": rate,
                            "same_output": same == "yes",
                        }
                    )
                new_csv.unlink(missing_ok=True)
                old_csv.unlink(missing_ok=True)
                trace.unlink()
    return rows_out
