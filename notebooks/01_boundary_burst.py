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
# # 1. The boundary burst: one client, two bursts, four limiters
#
# **The question.** A limit of **100 requests per minute** protects an API. One client sends
# **100 requests at second 59** and **100 more at second 61**. How many of the 200 get through?
#
# Everyone says "100, that's the limit". Whether that is true depends on *where the window is*.
# This notebook runs the real Lua scripts of four window limiters on a simulated clock and lets
# you see what each one does at the seam between two minutes.
#
# The parameters below are the classic case; change them and run everything again.

# %% tags=["parameters"]
LIMIT = 100  # requests allowed per window
WINDOW_S = 60.0  # window length, seconds
FIRST_S = 59.0  # second of the first burst
SECOND_S = 61.0  # second of the second burst

# %%
# %matplotlib inline
import pandas as pd

from simulator import metrics
from simulator.algorithms import ALGORITHMS
from simulator.charts.burst import boundary_burst_figure
from simulator.model import boundary_burst
from simulator.records import http_headers
from simulator.scripts import load

WINDOW_MS = round(WINDOW_S * 1000)

# %% [markdown]
# ## Predict first
#
# Write down your guess before running anything. The four limiters are:
#
# | name | how it counts |
# |---|---|
# | `fixed_window` | one counter per **clock-aligned** minute: the key holds `floor(now / 60 s)` |
# | `echomq` | one counter whose window **starts at the first hit** and *is* the key's time to live |
# | `sliding_log` | the exact answer: a sorted set of admitted times, window `(now − 60 s, now]` |
# | `sliding_counter` | an estimate from two clock-aligned counters: `cur + prev × (60 s − elapsed) / 60 s` |
#
# Edit the dictionary with your guesses; the run below compares them with what happens.

# %%
my_guess = {"fixed_window": 100, "echomq": 100, "sliding_log": 100, "sliding_counter": 100}

# %% [markdown]
# ## Run
#
# Each limiter gets a fresh embedded server (fakeredis running the Lua scripts) whose clock
# follows the simulation: no wall time passes. Every request becomes one row of the decision log.

# %%
log = pd.concat(
    [boundary_burst(a, LIMIT, WINDOW_S, FIRST_S, SECOND_S) for a in ALGORITHMS], ignore_index=True
)
summary = metrics.burst_summary(log, WINDOW_MS)
summary["your guess"] = pd.Series(my_guess)
summary

# %% [markdown]
# Each row of the log carries what a server would put in its response headers:

# %%
log.groupby("algorithm").nth(LIMIT)[
    ["algorithm", "t_ms", "allowed", "count", "remaining", "reset_ms", "retry_after_ms"]
]

# %%
first_refusals = log[~log["allowed"]].groupby("algorithm").head(1)
{row.algorithm: http_headers(row) for row in first_refusals.itertuples()}

# %% [markdown]
# ## See it

# %%
boundary_burst_figure(log, LIMIT, WINDOW_MS, FIRST_S, SECOND_S)

# %% [markdown]
# ## Why the clock-aligned window lets twice the limit through
#
# The two bursts fall into two different grid cells, so they meet two different, fresh counters.
# The key names tell the story:

# %%
fw = ALGORITHMS["fixed_window"](None, LIMIT, WINDOW_MS)  # keys only, no server needed
[fw.keys("user", round(FIRST_S * 1000)), fw.keys("user", round(SECOND_S * 1000))]

# %% [markdown]
# Any window of 60 s that straddles the seam can hold a full minute's budget from each side:
# up to **2 × limit**. The lower-right panel above shows the trailing-minute count at 200.

# %% [markdown]
# ## Why the first-hit window does not, here
#
# `echomq` starts its window at the first admitted request (second 59) and arms the counter's
# expiry once. At second 61 the counter is still full and its PTTL says how long to wait:

# %%
echo = log[(log["algorithm"] == "echomq") & ~log["allowed"]]
echo[["t_ms", "count", "retry_after_ms"]].head(3)

# %%
print(load("echomq_admit").source.split("]]")[0])

# %% [markdown]
# It is not immune to seams: its seam is simply wherever *its* window ends. One request at
# second 0 anchors the window to `[0, 60 s]`; then 99 requests just before the end and 100 just
# after it arrive 200 ms apart, and 199 of them get through within one minute:

# %%
from simulator.model import simulate  # noqa: E402
from simulator.scenario import BurstAt, Scenario  # noqa: E402

anchored = simulate(
    Scenario(
        "echomq",
        LIMIT,
        WINDOW_MS,
        duration_ms=2 * WINDOW_MS,
        clients=(
            BurstAt("user", n=1, at_s=(0.0,)),
            BurstAt("user", n=LIMIT - 1, at_s=(WINDOW_S - 0.1,)),
            BurstAt("user", n=LIMIT, at_s=(WINDOW_S + 0.1,)),
        ),
    )
)
metrics.burst_summary(anchored, WINDOW_MS)

# %% [markdown]
# ## Why the sliding counter lets two through
#
# At second 61 the current minute is 1 s old, so the previous minute's 100 requests are weighted
# by `(60 − 1) / 60`: the estimate starts at `100 × 59/60 = 98.33`. It admits while the estimate
# is below the limit: 98.33 → admit, 99.33 → admit, 100.33 → refuse. Two extra requests — the
# estimate assumes the previous minute's requests were spread evenly, and here they were not.

# %%
sc = log[(log["algorithm"] == "sliding_counter") & (log["t_ms"] == round(SECOND_S * 1000))]
sc[["t_ms", "allowed", "count"]].head(4)

# %% [markdown]
# ## What it means
#
# * The **clock-aligned fixed window** is the cheapest (one counter) but can admit **2×** the
#   limit around each seam — every client's seams are at the same instants, too.
# * The **first-hit window** moves the seam to the client's own first request; a client that
#   learns it can still get nearly 2× through.
# * The **sliding log** is exact — never more than the limit in any window — at the cost of one
#   entry per admitted request.
# * The **sliding counter** is close to exact at the cost of two counters; its error comes from
#   assuming the previous window was uniform.
#
# Try `FIRST_S = 30, SECOND_S = 89` (both bursts inside one window for everyone) or a smaller
# window, and run again.
