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
# # 7. Pick a limiter for your traffic
#
# **The question.** A site runs a **fixed window** of 10 requests per 10 seconds per client.
# Somebody proposes a sliding counter, or a token bucket. *If we switch, who gets refused that
# was admitted before, who gets through that was refused, and what does it cost?*
#
# Guessing from the algorithms' definitions gives the direction, not the answer: that depends on
# the traffic. So we replay a real access log (10,000 requests of an Apache server, from the
# `elastic/examples` repository) through the current configuration and through each candidate -
# the **real Lua scripts**, request for request - and compare decision by decision:
#
# * a **flip to refused** is a request the baseline admitted and the candidate refuses: a client
#   who would notice the switch; a **flip to admitted** is the reverse;
# * each configuration is also held against the **exact sliding log** of its own limit and
#   window: what a limiter that never errs would have said;
# * beside them: the most any client got through in one window (as a multiple of the limit), the
#   Retry-After a refused client reads, and the memory per active client measured on Valkey.
#
# Change the parameters and run everything again (`python -m simulator compare` does the same
# from the command line).

# %% tags=["parameters"]
TRACE = "../data/traces/apache_combined_sample.log"  # the access log to replay
FORMAT = "clf"  # clf (access log) or csv (t_ms,client)
BASELINE = "fixed_window:limit=10,window=10"  # what runs now (window in seconds)
CANDIDATES = [
    "sliding_counter:limit=10,window=10",
    "token_bucket:limit=10,window=10",
    "sliding_log:limit=10,window=10",
]
MOST_RATIO = 1.25  # the protection we want: no client above 1.25x the limit in any window
TOP = 5  # clients shown per candidate

# %%
# %matplotlib inline
from IPython.display import Markdown

from simulator import compare
from simulator.charts.compare import client_flips_figure, flips_over_time_figure, scorecard_figure
from simulator.comparison.choice import pick
from simulator.display import compact
from simulator.lessons import reveal

# %% [markdown]
# ## Your guess
#
# For each candidate: how many requests that the fixed window admits today would it refuse
# (its *flips to refused*)? Write them by algorithm, e.g.
# `my_guess = {"sliding_counter": 50, "token_bucket": 50, "sliding_log": 50}`, and run the
# cell; the reveal after the run waits for it.

# %%
my_guess = None  # flips to refused: {"sliding_counter": ..., "token_bucket": ..., "sliding_log": ...}

# %% [markdown]
# ## Run
#
# One call replays the baseline and every candidate over the whole log and returns the
# scorecard (one row per configuration) and the clients each candidate decided differently.

# %%
scorecard, clients = compare(TRACE, BASELINE, CANDIDATES, fmt=FORMAT)
facts = scorecard.attrs["trace"]
step_s = facts["resolution_ms"] / 1000
Markdown(
    f"The log holds **{facts['requests']:,} requests** from **{facts['clients']:,} clients** "
    f"over {(facts['t_max_ms'] - facts['t_min_ms']) / 3_600_000:,.1f} hours. Its times are "
    f"whole multiples of **{step_s:g} s**: requests of one {step_s:g} s step are decided in the "
    "order the log lists them, and every limiter but a fixed window whose seams fall on whole "
    "steps decides on rounded times (what lies within a trailing window, the counter's "
    "interpolation, a bucket's refill) - its row says so in `depends_on`."
)

# %% [markdown]
# ## Reveal

# %%
flips = scorecard.iloc[1:].set_index("candidate")["flips_to_refused"]
reveal(my_guess, flips.rename(lambda c: c.split(":")[0]), "flips", question="Flips to refused")

# %% [markdown]
# ## The scorecard
#
# In two tables, each the width of the column: what each configuration decides, then what it
# costs and what its numbers rest on.

# %%
card = scorecard.set_index("candidate")
decided = [
    "admitted", "refused", "flips_to_refused", "flips_to_admitted", "clients_affected",
    "wrongly_admitted", "wrongly_refused",
]  # fmt: skip
compact(card[decided], digits=2)

# %%
costs = [
    "most_in_window_ratio", "retry_after_p50_s", "retry_after_p99_s", "bytes_per_active_client",
    "peak_active_clients", "depends_on",
]  # fmt: skip
compact(card[costs], digits=2)

# %%
scorecard_figure(scorecard)

# %%
base = scorecard.iloc[0]
rows = scorecard.iloc[1:].set_index("candidate")
lines = [
    f"The baseline refuses **{base['refused']:,}** requests and lets a client reach "
    f"**{base['most_in_window_ratio']:.1f}x** the limit in one window (a burst across the seam "
    "between two windows)."
]
for name, r in rows.iterrows():
    lines.append(
        f"* `{name}`: refuses {r['refused']:,}; **{r['flips_to_refused']:,}** requests the "
        f"baseline admitted would be refused, {r['flips_to_admitted']:,} it refused would get "
        f"through ({r['clients_affected']:,} clients); at most {r['most_in_window_ratio']:.2f}x "
        f"the limit in a window; {r['bytes_per_active_client']:,.0f} bytes per active client."
    )
Markdown("\n".join(lines))

# %% [markdown]
# ## When the flips happen
#
# Flips are not spread evenly: they come where some client leans on the limit.

# %%
flips_over_time_figure(scorecard)

# %% [markdown]
# ## The clients who would notice

# %%
client_flips_figure(scorecard, clients)

# %%
shown = clients.groupby("candidate", sort=False).head(TOP)
compact(shown.set_index(["candidate", "client"]))

# %%
top = clients.groupby("candidate", sort=False).head(1).set_index("candidate")
share = clients.groupby("candidate", sort=False)["flips"].sum()
Markdown(
    "\n".join(
        f"* `{name}`: the client most affected, `{r['client']}`, takes {r['flips']:,} of the "
        f"{share[name]:,} flips ({r['flips'] / share[name]:.0%}) over {r['requests']:,} requests."
        for name, r in top.iterrows()
    )
)

# %% [markdown]
# ## The choice, and why
#
# The rule (`simulator.comparison.choice.pick`): keep every client within `MOST_RATIO` times the
# limit in any window; among the candidates that do, refuse the fewest requests the baseline
# admitted; then the fewest clients affected; then the least memory.

# %%
best, why = pick(scorecard, MOST_RATIO)
Markdown(
    f"**Pick `{best['candidate']}`**: {why}. It refuses {best['refused']:,} requests in all "
    f"(the baseline {base['refused']:,}), a refused client waits {best['retry_after_p50_s']:g} s "
    f"at the median and {best['retry_after_p99_s']:g} s at the 99th percentile, and an active "
    f"client costs {best['bytes_per_active_client']:,.0f} bytes on the server "
    f"(the baseline {base['bytes_per_active_client']:,.0f})."
)

# %% [markdown]
# ## What this does not tell you
#
# * The log is what the *baseline's* clients sent. A client refused more often may slow down,
#   retry, or go away; a replay cannot know. Flips count decisions on the same requests.
# * Whole-second times: every limiter but the fixed window decides on rounded times, the exact
#   log included (it is exact on the times the log holds).
# * Memory is the measured steady state of a client at its limit, times the most clients that
#   held keys at once (`peak_active_clients`), not a forecast for another site's traffic.
