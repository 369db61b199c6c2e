"""Rate-limit window workbench: real Lua rate limiters on a SimPy virtual clock.

Simulated clients hit window rate limiters (clock-aligned fixed window, EchoMQ's first-hit window,
sliding log, sliding window counter) that run as the real Lua scripts on an embedded fakeredis whose
clock follows the simulation; the same scripts run unchanged on a real Valkey server or cluster.
Every decision lands in a pandas DataFrame with the HTTP header values a server would send.

    >>> from simulator import Scenario, Poisson, simulate
    >>> frame = simulate(Scenario("sliding_counter", limit=10, window_ms=1000, duration_ms=5000,
    ...                           clients=(Poisson("alice", rate_per_s=20),), seed=1))
"""

from simulator.algorithms import ALGORITHMS, REFERENCES, Limiter
from simulator.backends import Backend, BackendError, FakeRedisBackend, RedisBackend, ScriptError
from simulator.checks import ConfigError
from simulator.comparison import compare
from simulator.engine.run import boundary_burst, simulate
from simulator.engine.scenario import (
    BurstAt,
    ClientSpec,
    ConstantRate,
    OnOff,
    Poisson,
    Polite,
    Scenario,
)
from simulator.metrics import burst_summary, max_in_window, rolling_admitted
from simulator.playback.run import replay
from simulator.playback.traces import read_trace
from simulator.records import COLUMNS, DTYPES, Decision, http_headers

__all__ = [
    "ALGORITHMS",
    "REFERENCES",
    "COLUMNS",
    "DTYPES",
    "Backend",
    "BackendError",
    "BurstAt",
    "ClientSpec",
    "ConfigError",
    "ConstantRate",
    "Decision",
    "FakeRedisBackend",
    "Limiter",
    "OnOff",
    "Poisson",
    "Polite",
    "RedisBackend",
    "Scenario",
    "ScriptError",
    "boundary_burst",
    "burst_summary",
    "compare",
    "http_headers",
    "max_in_window",
    "read_trace",
    "replay",
    "rolling_admitted",
    "simulate",
]
