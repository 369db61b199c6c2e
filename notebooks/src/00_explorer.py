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
# - **A card per preset** (above the rows): what to *watch for*, what *you'll learn*, and one
#   change to *try*; "preset 2 of 5" says how far through them you are.
# - **One row per algorithm** (middle), on one time axis, titled above it with whose marks they
#   are: each request of the client shown is a mark at the number that client had admitted in
#   the trailing window (dot: admitted, cross: refused), against the dashed limit, which you can
#   drag. Requests at the same instant stand side by side, so the 100 at second 59 are 100 marks.
#   Click on a row's axis to add a request (shift: a burst); every algorithm decides again.
# - **Stepping, in the page**: step, scrub, play at a chosen speed, jump to the next seam,
#   refusal or disagreement (and back), and the *seam view* (about ±2 s, in ms). At the chosen
#   request every row shades the window its algorithm counts, and the right column shows **what
#   the server holds** for that client before and after the script ran, the script's reply, the
#   header fields sent and the exact log's count; *beside it* puts a second server next to it.
# - **why?** opens, for the chosen request, the script's lines that ran, each `redis.call` with
#   its reply, and the arithmetic with the server's own numbers. *predict* hides the outcome
#   until you say admit or refuse, and keeps a score.
# - **A summary line per algorithm**: admitted A of N, the most one client got in any window, and
#   how many requests it admitted or refused where the exact log would not.
# - **The address** carries the preset, the settings and the request (a link reopens the same
#   view in the served page); *export* writes the run as one HTML file that steps without a kernel.
