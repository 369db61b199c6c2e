"""``bench compare``: four candidates over a large synthetic access log, on the default backend
and on the fake server, one process and then two Dask workers.

A synthetic access log (:mod:`simulator.comparison.synthetic`: Zipf clients, a diurnal rate,
bursts; ``bench compare --decisions N`` makes N x 500 lines, 5,000,000 by default, and
``python -m simulator.bench.compare_runs --lines N`` any length, for trying) is compared with a
baseline and four candidates, each run a child process of its own. The backend is the one
``compare`` picks when ``--backend`` is not named
(:func:`simulator.backends.choice.default_backend`: the embedded Valkey for these candidates,
which take their time from ``now_ms``), beside the fake server: each split into two shards on a
LocalCluster of one worker and then of two (started before the clock starts; on Valkey every
task starts a server of its own), so the ratio is the workers' alone. Each child says its wall
time, decisions per second (requests x configurations), its own peak resident memory
(``VmHWM``) and the workers' peak (each task reports its process's); each task done is a line
of progress on standard error. The scorecards' decision columns must be equal, the server's own
figures (CPU, ``MEMORY USAGE``) aside: a bench that finds them unequal stops. The goals are
printed beside the figures; nothing is asserted about time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["bench_compare", "BASELINE", "CANDIDATES", "SERVER_COLUMNS", "LINES"]

BASELINE = "fixed_window:limit=100,window=60"
CANDIDATES = (
    "sliding_log:limit=100,window=60",
    "sliding_counter:limit=100,window=60",
    "token_bucket:limit=100,window=60,burst=20",
    "gcra:limit=100,window=60,burst=20",
)
#: The log's length by default.
LINES = 5_000_000
#: The goals at the full size, on two cores: the default backend's wall time on two workers,
#: the peak resident memory of any one process, the speed-up from one worker to two.
GOAL_WALL_S, GOAL_PEAK_MB, GOAL_SPEEDUP = 120.0, 300, 1.7
#: The Dask workers of each backend's two runs.
WORKERS = (1, 2)
#: What only a real server measures: left out of the scorecards compared.
SERVER_COLUMNS = ("bytes_per_client_on_server", "server_cpu_us_per_decision")

_CHILD = """
import json, sys
from simulator.bench.compare_runs import run
print(json.dumps(run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])))
"""


def _child(path: Path, backend: str, workers: int, out: Path) -> dict:
    """One run in a process of its own; its progress lines passed on to standard error."""
    from simulator.bench.compare_runs import PROGRESS

    env = {**os.environ, "TQDM_DISABLE": "1"}
    said: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), backend, str(workers), str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as child:  # fmt: skip
        assert child.stderr is not None and child.stdout is not None
        try:
            for line in child.stderr:  # read as it comes: the child never waits on a full pipe
                if line.startswith(PROGRESS):
                    print(f"  {backend}, {workers} worker(s): {line[len(PROGRESS):]}", end="",
                          file=sys.stderr, flush=True)  # fmt: skip
                else:
                    said.append(line.rstrip())
            stdout = child.stdout.read()
        except BaseException:  # Ctrl-C or SIGTERM here: the child (and its cluster) ends too
            _stop(child)
            raise
    if child.returncode != 0:
        last = [line for line in said if line.strip()]
        raise RuntimeError(f"bench compare child failed: {last[-1] if last else child.returncode}")
    return json.loads(stdout.strip().splitlines()[-1])


#: Seconds a run's child is given to end on its own (a Ctrl-C at a terminal reached it too), and
#: then after a Ctrl-C of its own (its Dask cluster and servers stopped), before it is killed.
STOP_WAIT_S = (5.0, 60.0)


def _stop(child: subprocess.Popen[str]) -> None:
    """End ``child`` as Ctrl-C ends a run: its cluster, its workers and its servers stopped by
    its own handlers; killed if it is still running after :data:`STOP_WAIT_S`."""
    own, after_sigint = STOP_WAIT_S
    try:
        child.wait(own)
        return
    except subprocess.TimeoutExpired:
        pass
    child.send_signal(signal.SIGINT)
    try:
        child.wait(after_sigint)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _decisions(path: Path) -> str:
    """The scorecard's CSV without the server's own measurements, to compare byte for byte."""
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.drop(columns=list(SERVER_COLUMNS)).to_csv(index=False)


def _mb(kb: int) -> str:
    return f"{kb / 1024:,.0f} MB" if kb else "-"


def bench_compare(
    decisions: int = LINES // 500, out: Callable[[str], None] = print, lines: int | None = None
) -> None:
    """The bench over a log of ``decisions`` x 500 lines (``lines``, when given)."""
    from simulator.backends.choice import default_backend
    from simulator.comparison.spec import resolve_candidates
    from simulator.comparison.synthetic import SyntheticLog, write_log

    lines = decisions * 500 if lines is None else lines
    base, others = resolve_candidates(BASELINE, CANDIDATES)  # the SPECs, as compare reads them
    choice = default_backend([c.policy.algorithm for c in (base, *others)])
    shape = SyntheticLog(lines, clients=max(1000, lines // 25), seed=1)
    out(choice.line)
    out(
        f"compare: a synthetic access log of {lines:,} lines ({shape.clients:,} Zipf clients, "
        f"s={shape.zipf}, {shape.rate_per_s:g} req/s diurnal, bursts), baseline {BASELINE} and "
        f"{len(CANDIDATES)} candidates; {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start"
    )
    backends = list(dict.fromkeys([choice.spec.text, "fakeredis"]))
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        log = Path(tmp) / "synthetic.log"
        start = time.perf_counter()
        write_log(log, shape)
        out(
            f"log written in {time.perf_counter() - start:.1f} s ({log.stat().st_size / 1e6:,.0f} MB)"
        )
        runs: dict[tuple[str, int], dict] = {}
        cards: dict[tuple[str, int], str] = {}
        for backend in backends:
            for workers in WORKERS:
                out(f"running {backend} on {workers} worker(s) ...")
                csv = Path(tmp) / f"{backend}-{workers}.csv"
                runs[backend, workers] = _child(log, backend, workers, csv)
                cards[backend, workers] = _decisions(csv)
                _row(out, backend, workers, runs[backend, workers], first=len(runs) == 1)
    first = next(iter(cards.values()))
    unequal = [f"{b}, {w} workers" for (b, w), card in cards.items() if card != first]
    if unequal:
        raise AssertionError(f"bench compare: the scorecards differ ({', '.join(unequal)})")
    _ratios(out, runs, backends, lines)


def _row(out: Callable[[str], None], backend: str, workers: int, r: dict, first: bool) -> None:
    if first:
        out(
            f"{'backend':<10} {'where':<20} {'wall s':>8} {'decisions/s':>12} {'peak RSS':>9} "
            f"{'worker peak':>12}"
        )
    rate = r["requests"] * r["configurations"] / r["wall_s"]
    where = f"{workers} worker{'s' if workers > 1 else ''}, 2 shards"
    out(
        f"{backend:<10} {where:<20} {r['wall_s']:>8.1f} {rate:>12,.0f} {_mb(r['peak_kb']):>9} "
        f"{_mb(r['workers_kb']):>12}"
    )


def _ratios(out: Callable[[str], None], runs: dict, backends: list[str], lines: int) -> None:
    wall = {k: r["wall_s"] for k, r in runs.items()}
    one, two = WORKERS
    for backend in backends:
        out(f"{backend}: 1 -> 2 workers {wall[backend, one] / wall[backend, two]:.2f}x")
    if len(backends) == 2:
        fast, fake = backends
        for workers in WORKERS:
            out(
                f"{fast} against fakeredis, {workers} worker(s): "
                f"{wall[fake, workers] / wall[fast, workers]:.2f}x faster"
            )
    default = backends[0]
    peak_mb = max(max(r["peak_kb"], r["workers_kb"]) for r in runs.values()) / 1024
    size = "" if lines == LINES else f" (this log has {lines:,})"
    out(
        f"goals for {LINES:,} lines{size}: {default} on 2 workers {wall[default, two]:.1f} s (<= {GOAL_WALL_S:.0f}), "
        f"peak RSS {peak_mb:,.0f} MB (<= {GOAL_PEAK_MB}), 1 -> 2 workers "
        f"{wall[default, one] / wall[default, two]:.2f}x (>= {GOAL_SPEEDUP} on an idle machine)"
    )
    out(f"same scorecard everywhere: True; load average at the end {os.getloadavg()[0]:.2f}")
