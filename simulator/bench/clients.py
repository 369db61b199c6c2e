"""``bench clients``: a scenario with a million clients, each in a fresh process of its own.

Clients that never react to an answer are played ahead of the run and asked for by one feeder
(see :mod:`simulator.engine.clients`); before that, every client was a SimPy process holding its own
random generator from the start. Both ways run here on the same scenario, each in a child process
so that its peak resident memory is its own, and the figures are printed side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

__all__ = ["bench_clients"]

CLIENTS = 1_000_000
RATE_PER_S = 0.01  # a request per client every 100 s on average
DURATION_MS = 1_000.0


def _child(clients: int, every_client_a_process: bool) -> None:
    """Runs in the child: build the scenario, simulate it, print the figures as JSON."""
    import resource

    from simulator.engine import clients as kinds
    from simulator.engine.run import simulate
    from simulator.engine.scenario import Poisson, Scenario

    if every_client_a_process:  # the way it was: every client a process from the start
        kinds.register_process(Poisson, kinds.poisson, reacts=True)
    start = time.perf_counter()
    specs = tuple(Poisson(f"user{i}", rate_per_s=RATE_PER_S) for i in range(clients))
    scenario = Scenario("fixed_window", 10, 60_000, DURATION_MS, specs, seed=1)
    built = time.perf_counter()
    frame = simulate(scenario)
    done = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "build_s": built - start,
                "simulate_s": done - built,
                "decisions": len(frame),
                "admitted": int(frame["allowed"].sum()),
                "peak_mib": peak_kib / 1024,
            }
        )
    )


def _measure(clients: int, every_client_a_process: bool) -> dict[str, float]:
    code = (
        f"from simulator.bench.clients import _child; _child({clients}, {every_client_a_process})"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out.splitlines()[-1]))


def bench_clients(decisions: int = 10_000, out: Callable[[str], None] = print) -> None:
    out(
        f"clients: {CLIENTS:,} Poisson clients at {RATE_PER_S} req/s, {DURATION_MS / 1000:g} s "
        "simulated, fixed_window on the embedded fakeredis; each way in a child process"
    )
    out(f"{'way':<34} {'build s':>8} {'simulate s':>11} {'decisions':>10} {'peak MiB':>9}")
    rows: dict[str, dict[str, float]] = {}
    for label, as_processes in (("every client a process", True), ("feeder (played ahead)", False)):
        row = rows[label] = _measure(CLIENTS, as_processes)
        out(
            f"{label:<34} {row['build_s']:>8.1f} {row['simulate_s']:>11.1f} "
            f"{row['decisions']:>10,.0f} {row['peak_mib']:>9,.0f}"
        )
    old, new = rows.values()
    same = old["decisions"] == new["decisions"] and old["admitted"] == new["admitted"]
    out(
        f"simulate: {old['simulate_s'] / new['simulate_s']:.1f}x faster, peak memory "
        f"{old['peak_mib'] / new['peak_mib']:.1f}x smaller; same decisions: {same}"
    )
