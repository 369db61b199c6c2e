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
# # 1. The boundary burst: one client, two bursts, six limiters
#
# **The question.** A limit of **100 requests per minute** protects an API. One client sends
# **100 requests at second 59** and **100 more at second 61**. How many of the 200 get through?
#
# Everyone says "100, that's the limit". Whether that is true depends on *where the window is*.
# This notebook runs the real Lua scripts of six limiters (four windows, two buckets) on a simulated clock and lets
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
from simulator.algorithms.scripts import load
from simulator.charts.burst import boundary_burst_figure
from simulator.display import compact
from simulator.engine.run import boundary_burst
from simulator.lessons import hold, reveal
from simulator.lessons.burst import CARD, beyond_intro
from simulator.records import http_headers

WINDOW_MS = round(WINDOW_S * 1000)

# %% [markdown]
# ## Predict first
#
# Write down your guess before running anything. The six limiters are:
#
# | name | how it counts |
# |---|---|
# | `fixed_window` | one counter per **clock-aligned** minute: the key holds `floor(now / 60 s)` |
# | `echomq` | one counter whose window **starts at the first hit** and *is* the key's time to live |
# | `sliding_log` | the exact answer: a sorted set of admitted times, window `(now − 60 s, now]` |
# | `sliding_counter` | an estimate from two clock-aligned counters: `cur + prev × (60 s − elapsed) / 60 s` |
# | `token_bucket` | a bucket of `burst` tokens (default: the limit) refilled at 100 per minute, continuously; a new client starts full |
# | `gcra` | the same meter kept as one time per client: requests spaced 0.6 s apart, `burst` of them allowed at once |
#
# Write how many of the 200 requests you think each one admits, e.g.
# `my_guess = {"fixed_window": 100, "echomq": 100, ...}`, and run the cell. The reveal below
# stays shut (it says *make your guess first*) while `my_guess` is `None`.

# %%
my_guess = None  # your guesses: {"fixed_window": ..., "echomq": ..., ...}

# %% [markdown]
# ## Run
#
# Each limiter gets a fresh embedded server (fakeredis running the Lua scripts) whose clock
# follows the simulation: no wall time passes. Every request becomes one row of the decision log.

# %%
log = pd.concat(
    [boundary_burst(a, LIMIT, WINDOW_S, FIRST_S, SECOND_S) for a in CARD], ignore_index=True
)
summary = metrics.burst_summary(log, WINDOW_MS)

# %% [markdown]
# ## Reveal
#
# Your guess against what the scripts admitted (run the guess cell first):

# %%
reveal(my_guess, summary["admitted"], "admitted", question="How many get through?")

# %% [markdown]
# The whole summary: `max in window` is the most admitted inside any trailing window, the
# figure the limit promises to hold; `ratio to limit` is that over the limit.

# %%
hold(my_guess, compact(summary, 2, trim=True), "the summary")

# %% [markdown]
# Each row of the log carries what a server would put in its response headers. Below is each
# limiter's request number `LIMIT + 1` (`.nth(LIMIT)` counts from 0): the first request of the
# second burst, the first one past the limit, where the limiters part ways. `count` is what the
# script compared with the limit: a counter's value for the windows, the entries in the window for
# the log, the estimate (a fraction) for the sliding counter, the tokens left for the buckets.

# %%
compact(
    log.groupby("algorithm")
    .nth(LIMIT)[
        ["algorithm", "t_ms", "allowed", "count", "remaining", "reset_ms", "retry_after_ms"]
    ]
    .set_index("algorithm"),
    3,
    trim=True,
)

# %%
first_refusals = log[~log["allowed"]].groupby("algorithm").head(1)
{row.algorithm: http_headers(row) for row in first_refusals.itertuples()}

# %% [markdown]
# ## See it

# %%
hold(my_guess, boundary_burst_figure(log, LIMIT, WINDOW_MS, FIRST_S, SECOND_S), "the chart")

# %% [markdown]
# Each panel is one limiter: the count admitted in the trailing window at each instant, against
# the limit (dashed). The dotted line is the clock grid's seam, where a clock-aligned window
# starts again; the line in each panel says what each burst got through.

# %% [markdown]
# ## Step through the seam: what the server holds
#
# The chart shows *what* each limiter decided; the server shows *why*. The explorer's time bar
# (`make explore`, preset *boundary burst*) decides one client's requests again on a fresh fake
# server and reads every key before and after each call: a counter and its TTL, the log's
# members with their scores, a bucket's fields. Here is that step-through for the three requests
# around the seam: the last of the first burst (request `LIMIT`), the first of the second
# (`LIMIT + 1`) and the one after it, for the fixed window and the exact log.

# %%
from simulator.explore.steps import step_through, steps_frame  # noqa: E402
from simulator.lessons.burst import (  # noqa: E402
    anchored_story,
    bucket_story,
    fixed_window_story,
    keys_story,
    seam_story,
    sliding_counter_story,
)

around = [LIMIT - 1, LIMIT, LIMIT + 1]  # positions from 0: requests LIMIT to LIMIT + 2
seam = {}
for name in ("fixed_window", "sliding_log"):
    mine = log[log["algorithm"] == name]
    steps = step_through(
        name, LIMIT, WINDOW_MS, {}, "user", mine["t_ms"].tolist(), allowed=mine["allowed"].tolist()
    )
    seam[name] = [steps[i] for i in around]
compact(
    pd.concat({name: steps_frame(s) for name, s in seam.items()})[
        ["t_ms", "decided", "exact log", "RateLimit", "Retry-After"]
    ],
    trim=True,
)

# %% [markdown]
# The keys on the server after each of those calls, read from it (not rebuilt in Python):

# %%
keys_story(seam)

# %% [markdown]
# What they say (the figures come from the steps above):

# %%
seam_story(seam, LIMIT, FIRST_S)

# %% [markdown]
# ## Why the clock-aligned window lets twice the limit through
#
# The two bursts fall into two different grid cells, so they meet two different, fresh counters.
# The key names tell the story:

# %%
fw = ALGORITHMS["fixed_window"](None, LIMIT, WINDOW_MS)  # keys only, no server needed
[fw.keys("user", round(FIRST_S * 1000)), fw.keys("user", round(SECOND_S * 1000))]

# %% [markdown]
# Any window that straddles the seam can hold a full window's budget from each side: up to
# **2 × limit**. What this run shows (the numbers come from the run above):

# %%
fixed_window_story(summary, LIMIT, WINDOW_S)

# %% [markdown]
# ## Why the first-hit window does not, here
#
# `echomq` starts its window at the first admitted request (the first burst) and arms the
# counter's expiry once. At the second burst the counter is still full and its PTTL says how long
# to wait:

# %%
echo = log[(log["algorithm"] == "echomq") & ~log["allowed"]]
compact(echo[["t_ms", "count", "retry_after_ms"]].head(3), trim=True)

# %%
print(load("echomq_admit").source.split("]]")[0])

# %% [markdown]
# It is not immune to seams: its seam is simply wherever *its* window ends. One request at
# second 0 anchors the window; then `LIMIT − 1` requests just before its end and `LIMIT` just
# after it arrive 200 ms apart. How many get through within one window?

# %%
from simulator.engine.run import simulate  # noqa: E402
from simulator.engine.scenario import BurstAt, Scenario  # noqa: E402

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
anchored_story(metrics.burst_summary(anchored, WINDOW_MS), WINDOW_S)

# %% [markdown]
# ## Why the sliding counter lets a few through
#
# When the second burst arrives, the current grid window is only part of the way through, so the
# previous window's requests are weighted by the share of it still inside the trailing window,
# `(W − elapsed) / W`. The counter admits while that estimate is below the limit. Here is what
# it computed at the second burst:

# %%
sc = log[(log["algorithm"] == "sliding_counter") & (log["t_ms"] == round(SECOND_S * 1000))]
compact(sc[["t_ms", "allowed", "count"]].head(4), 3, trim=True)

# %%
sliding_counter_story(log, summary, LIMIT, SECOND_S)

# %% [markdown]
# ## Why the buckets let a few through too
#
# A token bucket has no window. It starts full (`burst` tokens, the limit by default), each
# request takes a token, and tokens come back continuously at the limit per window. The first
# burst empties it; by the second, the two seconds in between have refilled a few tokens. GCRA is
# the same meter kept as a time instead of a level, so it decides the same here.

# %%
bucket_story(log, summary, LIMIT, WINDOW_S, FIRST_S, SECOND_S)

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
# Try other seconds in the parameter cell and run again. Two bursts inside one clock-aligned
# window (here: just after one seam and just before the next) meet one counter everywhere, and
# every limiter admits the limit; the cell below checks it. Two bursts less than a window apart
# but on either side of a seam (`FIRST_S = 30, SECOND_S = 89` for a minute) still get twice the
# limit through the fixed window: the seam at 60 s lies between them.

# %%
inside = (WINDOW_S + 1, 2 * WINDOW_S - 1)  # both bursts inside one grid window
both = pd.concat(
    [boundary_burst(a, LIMIT, WINDOW_S, *inside) for a in CARD], ignore_index=True
)
compact(metrics.burst_summary(both, WINDOW_MS)[["requests", "admitted", "max_in_window"]])

# %% [markdown]
# ## Beyond the card
#
# The registry holds more limiters than the six on the card. Each is a variation on one of them:

# %%
beyond = [name for name in ALGORITHMS if name not in CARD]
beyond_intro(beyond)

# %% [markdown]
# The same two bursts through each of them, and the same chart:

# %%
beyond_log = pd.concat(
    [boundary_burst(a, LIMIT, WINDOW_S, FIRST_S, SECOND_S) for a in beyond], ignore_index=True
)
compact(metrics.burst_summary(beyond_log, WINDOW_MS), 2, trim=True)

# %%
boundary_burst_figure(beyond_log, LIMIT, WINDOW_MS, FIRST_S, SECOND_S)
