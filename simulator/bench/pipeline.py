"""Benchmark ``pipeline``: how close the pipelined replay comes to what one server can do.

One Valkey server runs one connection's commands on one core; the replay keeps two pipelines
in flight, so the server is never idle as long as the client prepares the next batch (packs it,
reads and parses the replies, keeps the decisions) faster than the server runs it. Here one
embedded valkey-server takes the ``servers`` section's trace per algorithm (all but ``echomq``,
which replays on real time on a real server) through :func:`simulator.playback.run.replay`, from a
flushed database, and the server's scheduler statistics (``/proc/<pid>/task/*/schedstat``: time
on a core, time waiting for one) are read before and after. Its busy share is its time on a core
over the run's wall time; the rate one server saturated would reach is decisions over that time;
the ratio of the two rates is the busy share again. On a machine shared with other work the
server also waits for a core (``waits``); what is left over (``idle``) is the time it had nothing
to do, the share the client is to blame for. The replay includes everything it does: sorting
the trace, the pipelines, and the decision log built as a frame.

Last, the memory a long replay takes: a child process builds a trace of :data:`MEMORY_ROWS`
requests (the ``replay-stream`` section's shape: 50,000 clients, 20 per ms), replays it in
memory through :func:`~simulator.playback.run.replay` on the same kind of server, and reports its
resident memory before the replay and at its peak (``VmHWM``), and the frame's own size.

Beside it, ``generic`` is the same replay through the parts of the limiter interface every
limiter has (calls packed one by one with hiredis, replies parsed one by one into
``Decision`` rows): what a limiter without the template and the column parser gets.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import RedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.bench.servers import CLIENTS, LIMIT, REQUESTS_PER_MS, WINDOW_MS, server_trace
from simulator.engine.realtime import runs_on_real_time
from simulator.playback.run import PIPELINE_CALLS, replay
from simulator.records import DecisionColumns

__all__ = ["bench_pipeline", "scheduled_seconds", "generic"]

REPEAT = 3
#: Requests of the memory measurement at the default ``--decisions 10000`` (scaled).
MEMORY_ROWS = 1_000_000
#: Decisions per algorithm at the default ``--decisions 10000`` (scaled in proportion).
SCALE = 20


def scheduled_seconds(pid: int) -> tuple[float, float]:
    """Seconds a process has spent on a core and waiting for one so far (all its threads)."""
    on_core = waiting = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        with open(path) as fh:
            ran, waited, _ = fh.read().split()
        on_core, waiting = on_core + int(ran), waiting + int(waited)
    return on_core / 1e9, waiting / 1e9


def generic(cls: type[Limiter]) -> type[Limiter]:
    """``cls`` with only the generic parts: calls one by one, replies one by one."""

    class Generic(cls):  # type: ignore[valid-type, misc]
        fields = None  # no BatchTemplate
        batch = Limiter.batch

        def parse_many(self, replies: Sequence[Any]) -> DecisionColumns:
            return DecisionColumns.of(map(self.parse, replies))

    return Generic


def _turn(
    server: EmbeddedValkey, backend: RedisBackend, trace: pd.DataFrame, algorithm: type[Limiter]
) -> tuple[float, float, float, float, pd.DataFrame]:
    """Wall seconds of one replay, the server's seconds on a core and waiting for one, and
    this process's (the client's) CPU seconds."""
    backend.client.flushdb()
    (ran0, waited0), start = scheduled_seconds(server.pid), time.perf_counter()
    cpu0 = time.process_time()
    frame = replay(trace, algorithm, LIMIT, WINDOW_MS, backend)
    wall_s, client_s = time.perf_counter() - start, time.process_time() - cpu0
    ran1, waited1 = scheduled_seconds(server.pid)
    return wall_s, ran1 - ran0, waited1 - waited0, client_s, frame


def bench_pipeline(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    n = min(decisions * SCALE, WINDOW_MS * REQUESTS_PER_MS - 1)
    trace = server_trace(n)
    out(
        f"pipeline: {n:,} decisions per algorithm through playback.replay, {CLIENTS} clients, "
        f"{REQUESTS_PER_MS} requests per ms, limit {LIMIT} per {WINDOW_MS // 1000} s, one "
        f"embedded valkey-server; pipelines of {PIPELINE_CALLS} calls, two in flight; the "
        f"fastest of {REPEAT} turns each, the two ways taking turns; busy / waits / idle = the "
        "server's time on a core / waiting for one / with nothing to do, over the run's wall "
        "time; client = this process's CPU time per decision"
    )
    out(
        f"{'algorithm':<20} {'decisions/s':>12} {'busy':>5} {'waits':>6} {'idle':>5} "
        f"{'saturated/s':>12} {'of saturated':>13} {'client':>7}  {'generic/s':>10} "
        f"{'client':>7}  same"
    )
    rows: list[dict[str, object]] = []
    with EmbeddedValkey() as server:
        backend = RedisBackend(server.client(), "valkey")
        for algorithm, cls in ALGORITHMS.items():
            if runs_on_real_time(backend, cls):
                continue
            best: dict[str, tuple[float, float, float, float, pd.DataFrame]] = {}
            for _ in range(REPEAT):  # the two ways take turns
                for way in ("template", "generic"):
                    variant = generic(cls) if way == "generic" else cls
                    got = _turn(server, backend, trace, variant)
                    if way not in best or got[0] < best[way][0]:
                        best[way] = got
            wall_s, busy_s, wait_s, client_s, frame = best["template"]
            old_s, _, _, old_client_s, old = best["generic"]
            us, old_us = client_s / n * 1e6, old_client_s / n * 1e6
            rate, busy, waits = n / wall_s, busy_s / wall_s, wait_s / wall_s
            saturated = n / busy_s if busy_s > 0 else float("inf")
            same = frame.equals(old)
            rows.append(
                {
                    "algorithm": algorithm,
                    "decisions_per_s": rate,
                    "server_busy": busy,
                    "server_waits": waits,
                    "server_idle": max(0.0, 1 - busy - waits),
                    "saturated_per_s": saturated,
                    "client_us": us,
                    "generic_per_s": n / old_s,
                    "generic_client_us": old_us,
                    "same": same,
                }
            )
            out(
                f"{algorithm:<20} {rate:>12,.0f} {busy:>5.2f} {waits:>6.2f} "
                f"{max(0.0, 1 - busy - waits):>5.2f} {saturated:>12,.0f} {rate / saturated:>13.2f} "
                f"{us:>5.2f}µs  {n / old_s:>10,.0f} {old_us:>5.2f}µs  {'yes' if same else 'NO'}"
            )
        backend.close()
    bench_memory(decisions, out)
    return rows


def _resident_mb() -> tuple[float, float]:
    """This process's resident memory now and at its peak, in MB."""
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            fields[name] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _memory_child(rows: int) -> None:
    """Runs in the child: a trace of ``rows`` requests replayed in memory; prints JSON."""
    import numpy as np

    from simulator.bench.replay import ALGORITHM, CLIENTS, LIMIT, REQUESTS_PER_MS, WINDOW_S

    rng = np.random.default_rng(np.random.SeedSequence(0))
    t_ms = np.sort(rng.integers(0, max(1, rows // REQUESTS_PER_MS), rows))
    names = [f"client-{c}" for c in rng.integers(0, CLIENTS, rows).tolist()]
    trace = pd.DataFrame({"t_ms": t_ms, "client": pd.array(names, dtype="string")})
    del names
    with EmbeddedValkey() as server:
        backend = RedisBackend(server.client(), "valkey")
        before_mb, _ = _resident_mb()
        start = time.perf_counter()
        frame = replay(trace, ALGORITHM, LIMIT, WINDOW_S * 1000, backend)
        wall_s = time.perf_counter() - start
        _, peak_mb = _resident_mb()
        backend.close()
    frame_mb = frame.memory_usage(deep=True).sum() / 2**20
    print(json.dumps({"before": before_mb, "peak": peak_mb, "frame": frame_mb, "s": wall_s}))


def bench_memory(decisions: int, out: Callable[[str], None]) -> dict[str, float]:
    rows = max(1000, MEMORY_ROWS * decisions // 10_000)
    code = f"from simulator.bench.pipeline import _memory_child; _memory_child({rows})"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    got: dict[str, float] = json.loads(done.splitlines()[-1])
    out(
        f"memory: {rows:,} requests replayed in memory (playback.replay, frame out) on an "
        f"embedded valkey-server, in a child process: resident {got['before']:,.0f} MB before "
        f"the replay (interpreter, modules, the trace), peak {got['peak']:,.0f} MB; the frame "
        f"itself {got['frame']:,.0f} MB; {(got['peak'] - got['before']) * 2**20 / rows:,.0f} "
        f"bytes per request over what was there before; {rows / got['s']:,.0f} decisions/s"
    )
    return got
