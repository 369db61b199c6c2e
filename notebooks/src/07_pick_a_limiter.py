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
LIMITS = [5, 10, 20, 50]  # the other numbers to try each configuration at (the slider's stops)

# %%
# %matplotlib inline
from IPython.display import Markdown, display
from ipywidgets import SelectionSlider, VBox, interactive_output

from simulator.charts.compare import (
    client_flips_figure,
    client_peaks_figure,
    flips_over_time_figure,
    scorecard_figure,
)
from simulator.comparison.choice import rule, verdict
from simulator.comparison.legend import SHOWN
from simulator.comparison.limits import compare_limits
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
# scorecard (one row per configuration) and the clients each candidate decided differently -
# and, for choosing the number later, every configuration again at each of `LIMITS` (the same
# run: the log is read once), with each client's peak in one window. `backend="auto"` runs the
# scripts where the command line would: on an embedded Valkey when every algorithm takes its
# time from the request (as these do), on the fake server otherwise; the first line says which.

# %%
scorecard, clients, limits, peaks = compare_limits(
    TRACE, BASELINE, CANDIDATES, LIMITS, fmt=FORMAT, backend="auto"
)
facts = scorecard.attrs["trace"]
step_s = facts["resolution_ms"] / 1000
Markdown(
    f"`{scorecard.attrs['backend']}`\n\n"
    f"The log holds **{facts['requests']:,} requests** from **{facts['clients']:,} clients** "
    f"over {(facts['t_max_ms'] - facts['t_min_ms']) / 3_600_000:,.1f} hours. Its times are "
    f"whole multiples of **{step_s:g} s**: requests of one {step_s:g} s step are decided in the "
    "order the log lists them, and every limiter but a fixed window whose seams fall on whole "
    "steps decides on rounded times (what lies within a trailing window, the counter's "
    "interpolation, a bucket's refill) - its row says so in `depends_on`."
)

# %% [markdown]
# ## How much of its span the log covers
#
# First and last request are days apart; does the log hold everything in between? A log cut
# from a bigger one often keeps a slice of every hour. A window that reaches out of a slice counts
# none of the traffic that was left out, so what follows speaks for the covered stretches only.

# %%
Markdown(
    f"`{facts['coverage']}`"
    + (f"\n\n**{facts['coverage_warning']}**" if facts["coverage_warning"] else "")
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
# costs and what its numbers rest on. What each column counts:

# %%
Markdown("\n".join(f"* `{column}`: {meaning}" for column, _, meaning in SHOWN[1:]))

# %%
card = scorecard.set_index("candidate")
decided = [
    "admitted", "refused", "clients_refused", "flips_to_refused", "flips_to_admitted",
    "clients_affected", "wrongly_admitted", "wrongly_refused",
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
# ## Choose the number
#
# The algorithm is half the choice; the limit is the other half. Each configuration was also
# replayed at every limit of `LIMITS` (the same algorithm, window and parameters). First the
# clients themselves: each client's **peak** is the most requests it sent in one window of the
# configuration's length (a trailing window, or the clock's windows for a fixed window). A limit
# below a client's peak refuses that client at least once.

# %%
client_peaks_figure(peaks, LIMITS, top=TOP * 6)

# %% [markdown]
# Move the slider: at each limit, what every configuration refuses, how many clients it refuses,
# how many decisions flip against the baseline as it runs now, and how many it refuses where the
# exact log at that limit would admit.

# %%
now = min(LIMITS, key=lambda n: abs(n - scorecard.iloc[0]["limit"]))  # the stop nearest today's
slider = SelectionSlider(options=LIMITS, value=now, description="limit")
shown_at = [
    "refused", "clients_refused", "flips_to_refused", "flips_to_admitted", "flips",
    "wrongly_refused", "clients_over_limit",
]  # fmt: skip


def at_limit(limit):
    rows = limits[limits["limit"] == limit].set_index("configuration")
    display(compact(rows[shown_at], digits=2))
    fewest = rows["flips"].idxmin()
    display(
        Markdown(
            f"At **{limit:,}** per window, `{fewest}` flips the fewest decisions against the "
            f"baseline ({rows.loc[fewest, 'flips']:,})."
        )
    )


VBox([slider, interactive_output(at_limit, {"limit": slider})])

# %% [markdown]
# ## The choice, and why
#
# The rule (`simulator.comparison.choice.rule`), in one sentence - keeping the baseline is one of
# the options, so a change that decides as the baseline does and holds more memory is not
# recommended:

# %%
Markdown(f"> {rule(MOST_RATIO)}\n\n**{verdict(scorecard, MOST_RATIO)}**")

# %% [markdown]
# ## What this does not tell you
#
# * The log may cover a small part of its span (the coverage line above): a window that reaches
#   out of a covered stretch counts nothing of the traffic that was left out, so the figures are
#   those of the covered stretches, not of the site.
# * The log is what the *baseline's* clients sent. A client refused more often may slow down,
#   retry, or go away; a replay cannot know. Flips count decisions on the same requests.
# * Whole-second times: every limiter but the fixed window decides on rounded times, the exact
#   log included (it is exact on the times the log holds).
# * Memory is the measured steady state of a client at its limit, times the most clients that
#   held keys at once (`peak_active_clients`), not a forecast for another site's traffic.
