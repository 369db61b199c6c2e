"""``bench scale``: sweeps and a sharded simulation on Dask, 1 worker against 2 on this machine.

Two measurements. A sweep of small accuracy tasks (one grid point each) runs serially here, then
on a LocalCluster of one worker process and one of two: tasks per second and the speed-up from 1
to 2 workers (the clusters are started before the clock starts; their start-up is printed
apart). Then a scenario with a million clients on the real Lua (fixed window on fakeredis) runs
whole in one process, then split into two shards on one worker and on two; the sharded logs are
checked equal to the whole run's. A busy machine lowers every figure; the ratios are the point.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["bench_scale"]

CLIENTS = 1_000_000
RATE_PER_S = 0.01  # one request per client every 100 s on average
DURATION_MS = 20_000.0
SWEEP = {
    "name": "bench_scale",
    "study": "accuracy",
    "grid": {
        "algorithm": ["sliding_counter", "fixed_window"],
        "kind": ["poisson", "on_off"],
        "load": [0.5, 1.0, 2.0],
        "client_count": 400,
        "seed": [0, 1],
    },
}


def _sweep_rate(scheduler: object, root: Path) -> tuple[float, int]:
    from simulator.sweeps import parse_spec, run_sweep

    spec = parse_spec(SWEEP)
    start = time.perf_counter()
    outcome = run_sweep(spec, root, scheduler, out=lambda line: None)
    elapsed = time.perf_counter() - start
    assert not outcome.failed, outcome.failed[0]
    return elapsed, outcome.done


def bench_scale(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    import os

    import pandas as pd

    from simulator.engine.run import simulate
    from simulator.engine.scenario import Poisson, Scenario
    from simulator.engine.workers import dask_client

    out(
        "scale: Dask LocalCluster, one thread per worker process; clusters started off the "
        f"clock; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start "
        "(other work on the machine takes cores from the workers)"
    )
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        elapsed, n = _sweep_rate("serial", Path(tmp) / "serial")
        rates["serial"] = n / elapsed
        out(f"sweep of {n} accuracy tasks (400 clients, 10 simulated min each)")
        out(f"{'where':<22} {'start s':>8} {'sweep s':>8} {'tasks/s':>8}")
        out(f"{'serial (no Dask)':<22} {'':>8} {elapsed:>8.1f} {rates['serial']:>8.1f}")
        for workers in (1, 2):
            start = time.perf_counter()
            with dask_client("local", workers=workers) as client:
                client.wait_for_workers(workers)
                started = time.perf_counter() - start
                elapsed, n = _sweep_rate(client, Path(tmp) / f"w{workers}")
            rates[f"{workers}"] = n / elapsed
            label = f"{workers} worker{'s' * (workers > 1)}"
            out(f"{label:<22} {started:>8.1f} {elapsed:>8.1f} {rates[str(workers)]:>8.1f}")
    out(f"sweep speed-up 1 -> 2 workers: {rates['2'] / rates['1']:.2f}x")

    specs = tuple(Poisson(f"user{i}", rate_per_s=RATE_PER_S) for i in range(CLIENTS))
    scenario = Scenario("fixed_window", 10, 60_000, DURATION_MS, specs, seed=1)
    out(
        f"sharded simulation: {CLIENTS:,} Poisson clients at {RATE_PER_S} req/s, "
        f"{DURATION_MS / 1000:g} s simulated, fixed_window (Lua on fakeredis)"
    )
    start = time.perf_counter()
    whole = simulate(scenario)
    times = {"whole": time.perf_counter() - start}
    out(f"{'where':<22} {'start s':>8} {'run s':>8} {'decisions/s':>12}  same as whole")
    out(
        f"{'one process, whole':<22} {'':>8} {times['whole']:>8.1f} {len(whole) / times['whole']:>12,.0f}"
    )
    for workers in (1, 2):
        start = time.perf_counter()
        with dask_client("local", workers=workers) as client:
            client.wait_for_workers(workers)
            started = time.perf_counter() - start
            start = time.perf_counter()
            sharded = simulate(scenario, shards=2, scheduler=client)
            times[str(workers)] = time.perf_counter() - start
        same = sharded.equals(whole)
        if not same:  # row order aside, the decisions must be the same
            key = ["client", "t_ms"]
            pd.testing.assert_frame_equal(
                sharded.sort_values(key, kind="stable", ignore_index=True),
                whole.sort_values(key, kind="stable", ignore_index=True),
            )
        label = f"2 shards, {workers} worker{'s' * (workers > 1)}"
        rate = len(sharded) / times[str(workers)]
        out(f"{label:<22} {started:>8.1f} {times[str(workers)]:>8.1f} {rate:>12,.0f}  {same}")
    out(f"load average at the end: {os.getloadavg()[0]:.2f}")
    out(
        f"{len(whole):,} decisions; sharded speed-up 1 -> 2 workers: "
        f"{times['1'] / times['2']:.2f}x (whole run in one process: {times['whole'] / times['2']:.2f}x)"
    )
