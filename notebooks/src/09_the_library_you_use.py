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
# # 9. The library you use
#
# Flask-Limiter and SlowAPI decide with `limits`. Its Redis strategies are called fixed window,
# moving window and sliding window counter: the names of algorithms this workbench ships. Are
# they those algorithms? PyrateLimiter's Redis buckets offer a sliding window log, a fixed
# window, GCRA and a token bucket; throttled-py a fixed window, a sliding window, a token
# bucket, a leaking bucket and GCRA. Here the three libraries run unchanged, each through its
# own Redis client, keys and Lua scripts, on the fake server whose clock follows the simulation
# (the Python clock moved to each simulated instant by time-machine; the fake server runs in
# this process, so the `TIME` that throttled-py's buckets ask it for moves too). `docs/libraries.md` has the full-size figures
# (`python -m simulator.libraries.study`) and the library's lines that explain them.
#
# This notebook needs the libraries extra: `pip install -e '.[libraries]'`.

# %% tags=["parameters"]
# "ci": smaller traces (under a minute); "full": the sizes docs/libraries.md quotes
SIZE = "ci"

# %%
from IPython.display import Markdown

from simulator.libraries import study

poisson_n, bursts = (5_000, 250) if SIZE == "full" else (1_500, 60)

# %% [markdown]
# ## The card's case
#
# 100 requests at second 59 and 100 at second 61, 100 per minute. A clock-grid fixed window
# admits all 200 (the grid line at 60 s sits between the bursts); the exact log admits 100.
# **Prediction:** `limits.fixed_window` and `throttled.fixed_window`, being fixed windows,
# admit 200.

# %%
card = study.cards_case()
card

# %%
lib = card.set_index("algorithm")["admitted"]
Markdown(
    f"`limits.fixed_window` admitted **{lib['limits.fixed_window']}**, the built-in "
    f"`fixed_window` {lib['fixed_window']} and `increx` (a window from the first request) "
    f"{lib['increx']}: `limits`' fixed window starts at a client's first request, as its README "
    "says, so both bursts fall in one window. `throttled.fixed_window` admitted "
    f"**{lib['throttled.fixed_window']}**: its key is named by the clock grid's cell, the card's "
    "fixed window. The buckets of 100 admit 100 and the 3 tokens two seconds bring back."
)

# %% [markdown]
# ## Two traces against the exact log
#
# Limit 10 per 10 s, four clients. A Poisson trace, and one of bursts (20 requests within 2 s).
# Each algorithm's decisions that differ from the exact log's: wrongly admitted, wrongly refused.

# %%
poisson = study.against_exact(*study.poisson_trace(n=poisson_n))
poisson

# %%
bursty = study.against_exact(*study.bursty_trace(bursts=bursts))
bursty

# %%
ax = bursty.set_index("algorithm")[["wrongly admitted", "wrongly refused"]].plot.barh(
    figsize=(8, 7),
    title="Bursty trace: throttled-py's whole-second buckets admit the most wrongly",
)
ax.set_xlabel("decisions that differ from the exact log (requests)")

# %% [markdown]
# ## The smallest traces where a library differs from its names
#
# One client each. `limits`' moving window also counts an entry exactly one window old (its
# window is [t − W, t]); its sliding window counter's windows start at the first request, each
# key living two windows; its fixed window counts a refused request's cost. throttled-py's
# token and leaking buckets read the server's `TIME` in whole seconds and drop the fraction of
# a token at each admitted request; its sliding window floors a weight computed as `1 - 0.8`.

# %%
study.smallest_traces()

# %% [markdown]
# **What it means.** Read `limits.fixed_window` as `increx` (a window from the first hit, no
# boundary burst of 2×), `limits.moving_window` as the exact log with a closed boundary, and
# `limits.sliding_window_counter` as a weighted estimate over windows anchored at the first
# request. PyrateLimiter's fixed window is the clock grid, as it says, and its sliding window
# log has the same closed boundary as `limits`' moving window; its GCRA and token bucket agree
# with the built-in `gcra`. Read `throttled.token_bucket` and `throttled.leaking_bucket` as
# buckets with a one-second clock that refill slower than their rate, and
# `throttled.sliding_window` as the built-in `sliding_counter` but for a floating-point floor.
# Worth a report upstream: `limits`' fixed window's refused cost, which `hit`'s own docstring
# says is not deducted, and throttled-py's whole-second buckets.
