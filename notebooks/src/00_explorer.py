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
# # 0. The explorer: change a control, see what the real scripts decide, step by step
#
# Every algorithm of the registry decides the same traffic with its **real Lua script**, on a
# fake server whose clock follows the simulation. Try this first: click *boundary burst*, then
# step through the requests of second 61. (What each part shows is explained below.)
#
# Teaching with it, or wondering which lessons to take in 45 or 90 minutes? See
# [docs/teaching.md](../docs/teaching.md).

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


# %% [markdown]
# ## What the page shows
#
# - **Presets** (left, one click each): the boundary burst of the card (100 requests at second
#   59 and 100 at second 61, limit 100 per minute), a steady client over the limit, polite
#   clients that wait the Retry-After they are sent, one chat room flooding, and ten minutes of
#   the sample access log. The tabs under them hold every control: the limiter (algorithms,
#   limit, window, each algorithm's own parameters, the backend), the traffic mix, and the
#   source (duration and seed, or a trace file and the span of it to replay).
# - **One row per algorithm** (middle), on one time axis: each request of the client shown is a
#   mark at the number that client had admitted in the trailing window (dot: admitted, cross:
#   refused), against the dashed limit. Hover over a mark for its decision.
# - **The time bar** (play, step back, step on): at the chosen request every row shades the
#   window its algorithm counts, and the right column shows **what the server holds** for that
#   client before and after the script ran (values, sorted-set members with their scores, hash
#   fields, PTTL), the script's reply, the header fields sent and the exact log's count.
# - **A summary line per algorithm** under the rows: admitted A of N, the most one client got
#   in any window, and how many requests it admitted or refused where the exact log would not.
