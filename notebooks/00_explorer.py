# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
# # 0. The explorer: change a control, see what the real scripts decide
#
# Every algorithm of the registry gets the same traffic and decides it with its **real Lua
# script** (on fakeredis, whose clock follows the simulation; or on an embedded Valkey). Change a
# control and everything below is redrawn:
#
# - **admitted and refused per second**, a line per algorithm;
# - for the **client shown**, the requests admitted in the trailing window against the limit
#   (dotted lines: the clock grid's window seams, where the fixed window lets twice the limit
#   through), and the header values it received: `RateLimit-Remaining`, `RateLimit-Reset` and,
#   on a refusal, `Retry-After`;
# - one **summary line** per algorithm: admitted A of N, the most one client got in any window
#   (and that over the limit), and how many requests the exact sliding log, given the same
#   requests, would have decided the other way.
#
# The tabs hold the limiter (algorithms, limit, window, each algorithm's own parameters, the
# backend), the traffic mix (steady, Poisson, bursts at chosen seconds, on/off, polite clients
# that wait the Retry-After they get) and the run (duration, seed, or a trace file to replay
# instead: a CSV of `t_ms,client` or an access log; the sample log is filled in).

# %% tags=["parameters"]
LIMIT = 10  # requests allowed per window, to start with
WINDOW_S = 10.0  # window length (s)
DURATION_S = 60.0  # simulated seconds of traffic
SEED = 1

# %%
from simulator.explore import Explorer, Settings

explorer = Explorer(Settings(limit=LIMIT, window_s=WINDOW_S, duration_s=DURATION_S, seed=SEED))
explorer.refresh()
explorer
