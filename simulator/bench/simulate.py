"""Benchmark ``simulate``: one scenario through :func:`~simulator.engine.run.simulate`, five ways.

The same played-ahead scenario (Poisson clients, every algorithm that takes the time from its
arguments) is simulated: by the model alone (each decision by the algorithm's pure-Python
reference: the model's own cost), on the fake server one call at a time (the default there) and
in pipelines, and on one embedded valkey-server one call at a time and in pipelines (the default
there). Beside them, :func:`~simulator.playback.run.replay` takes the very requests the
simulation made as a trace on the same server: the rate a pipelined simulation is to reach. Wall
time, since a real server's work is in another process; the fastest of a few turns, the ways
taking turns, the database flushed before each; the rows of every way that ran the scripts are
compared with the first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

import pandas as pd

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import Backend, FakeRedisBackend, RedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.bench.model import in_python
from simulator.bench.timing import best_of
from simulator.engine.realtime import runs_on_real_time
from simulator.engine.run import simulate
from simulator.engine.scenario import Poisson, Scenario
from simulator.playback.run import replay

__all__ = ["bench_simulate"]

CLIENTS = 500
RATE_PER_S = 10.0
LIMIT, WINDOW_MS = 100, 60_000
REPEAT = 3
#: Decisions per algorithm at the default ``--decisions 10000`` (scaled in proportion).
SCALE = 5
DECISION = ["client", "t_ms", "allowed", "count", "limit", "remaining", "reset_ms"]


def _scenario(algorithm: type[Limiter], decisions: int) -> Scenario:
    duration_ms = decisions / (CLIENTS * RATE_PER_S) * 1000
    clients = tuple(Poisson(f"user{i}", rate_per_s=RATE_PER_S) for i in range(CLIENTS))
    return Scenario(algorithm, LIMIT, WINDOW_MS, duration_ms, clients, seed=2)  # type: ignore[arg-type]


def _on(backend: Callable[[], Backend], scenario: Scenario, pipelined: bool) -> pd.DataFrame:
    return simulate(scenario, backend(), pipelined=pipelined)


def bench_simulate(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> list[dict[str, object]]:
    n = decisions * SCALE
    out(
        f"simulate: about {n:,} decisions per algorithm, {CLIENTS} Poisson clients at "
        f"{RATE_PER_S:g} req/s, limit {LIMIT} per {WINDOW_MS // 1000} s; simulate() end to end "
        f"(frame included) by the model alone (pure-Python reference), on fakeredis one call at "
        f"a time and pipelined, on one embedded valkey-server one at a time and pipelined, and "
        f"replay() of the same requests on that server; wall time, fastest of {REPEAT} turns, "
        f"taking turns"
    )
    out(
        f"{'algorithm':<16} {'model/s':>9} {'fake 1x1/s':>11} {'fake piped/s':>13} "
        f"{'valkey 1x1/s':>13} {'valkey piped/s':>15} {'replay/s':>9} {'of replay':>10}  same"
    )
    rows: list[dict[str, object]] = []
    with EmbeddedValkey() as server:
        valkey = RedisBackend(server.client(), "valkey")
        for algorithm, cls in ALGORITHMS.items():
            # real time on a real server, or no script (a server's own command)
            if runs_on_real_time(valkey, cls) or not cls.scripts:
                continue
            alone = partial(simulate, _scenario(in_python(cls), n))  # its policy holds the variant
            model_s, _ = best_of({"model": alone}, REPEAT)["model"]
            scenario = _scenario(cls, n)
            first = simulate(scenario)
            trace = first[["t_ms", "client"]]
            runs = {
                "fake 1x1": partial(_on, FakeRedisBackend, scenario, False),
                "fake piped": partial(_on, FakeRedisBackend, scenario, True),
                "valkey 1x1": partial(_on, lambda: valkey, scenario, False),
                "valkey piped": partial(_on, lambda: valkey, scenario, True),
                "replay": partial(replay, trace, cls, LIMIT, WINDOW_MS, valkey),
            }
            timed = best_of(runs, REPEAT, before=valkey.client.flushdb)
            made = len(first)
            rate = {way: made / s for way, (s, _) in timed.items()}
            frames: list[pd.DataFrame] = [frame for _, frame in timed.values()]
            same = all(f.reset_index(drop=True)[DECISION].equals(first[DECISION]) for f in frames)
            of_replay = rate["valkey piped"] / rate["replay"]
            rows.append(
                {
                    "algorithm": algorithm,
                    "decisions": made,
                    "model_per_s": made / model_s,
                    **{f"{way.replace(' ', '_')}_per_s": r for way, r in rate.items()},
                    "valkey_piped_of_replay": of_replay,
                    "same_rows": same,
                }
            )
            out(
                f"{algorithm:<16} {made / model_s:>9,.0f} {rate['fake 1x1']:>11,.0f} "
                f"{rate['fake piped']:>13,.0f} {rate['valkey 1x1']:>13,.0f} "
                f"{rate['valkey piped']:>15,.0f} {rate['replay']:>9,.0f} {of_replay:>9.0%}  "
                f"{'yes' if same else 'NO'}"
            )
        valkey.close()
    out(f"(load average while measured: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return rows
