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
# # 8. What production adds around the script
#
# The other notebooks study one limiter script on its own. In production the script has company:
# a request may face several limits at once, the server holding the counters can go away, app
# servers put caches in front of it, their clocks disagree, and Redis 8.8 now ships a limiter
# primitive of its own, `INCREX`. This notebook asks six questions, one for each of these and one
# about counting refused requests. Each one gets a prediction, a run of the real scripts on the
# virtual clock, a chart, and what it means.
#
# The figures in the prose are read from the frames the cells compute, so they are the run's own.
# `docs/production.md` has the full-size figures (`python -m simulator charts --only production`).

# %% tags=["parameters"]
# "ci": each study a few thousand decisions on the fake server, under a minute in all;
# "full": the sizes docs/production.md quotes
SIZE = "ci"

# %%
from dataclasses import replace

import pandas as pd
from IPython.display import Markdown

from simulator.algorithms import ALGORITHMS
from simulator.charts import production as charts
from simulator.display import compact
from simulator.studies import production as st

# %matplotlib inline

FULL = SIZE == "full"
SECONDS = 60_000 if FULL else 20_000  # simulated ms per run
pd.set_option("display.width", 160)
pd.set_option("display.max_columns", 30)

# %% [markdown]
# ## 1. Several limits on one request: all or nothing, or one after another?
#
# A user may send 10 requests per second and 300 per minute. It sends 20 per second. The
# `multi_policy` script checks both policies at once: it admits a request only when both admit
# it, and then counts it in both. The naive way asks each policy's own limiter in turn, and each
# one counts the request whenever *it* admits it.
#
# **Prediction.** The script admits 10 per second until the minute's budget is used up. The naive
# way spends the minute's budget on requests the per-second policy refuses, so it admits fewer,
# and it refuses many requests twice.

# %%
policy = st.PolicySetup(long_limit=300 if FULL else 100, duration_ms=SECONDS)
frame = st.policies_run(policy)
policies = st.policies_summary(frame)
policies

# %%
charts.policies_figure(frame, policies, policy.window_ms)

# %%
p = policies.set_index("way")
Markdown(
    f"All or nothing admits **{p.loc['all_or_nothing', 'admitted']}**, the whole long budget. "
    f"The naive way admits **{p.loc['naive', 'admitted']}**: its long policy spent "
    f"{p.loc['naive', 'long_wasted']} of its {policy.long_limit} on requests the short policy "
    f"refused, and {p.loc['naive', 'refused_twice']} requests were refused by both policies."
)

# %% [markdown]
# ## 2. The store goes away: fail open, fail closed, or a local limit?
#
# Four app servers share one user's limit (100 per 10 s, the exact sliding log). The server is
# unreachable for a span, and later slow for another: past the app servers' timeout they give up
# on a call, though the server has counted the request.
#
# **Prediction.** Failing open admits far more than the limit. Failing closed refuses requests
# that had room. A local limit of `limit / N` per app server lands in between. When the server
# comes back, it has not seen what happened meanwhile.

# %%
outage = st.OutageSetup(
    duration_ms=SECONDS,
    down_from_ms=SECONDS // 4,
    down_until_ms=SECONDS * 5 // 12,
    slow_from_ms=SECONDS * 2 // 3,
    slow_until_ms=SECONDS * 3 // 4,
)
frames = pd.concat([st.outage_run(outage, m) for m in st.MODES], ignore_index=True)
outages = st.outage_summary(frames, outage)
compact(outages, 2, scroll=True)

# %%
charts.outage_figure(frames, outages, outage)

# %%
o = outages.set_index("mode")
Markdown(
    f"Failing open admitted {o.loc['fail_open', 'beyond_limit']} requests beyond the limit "
    f"(the most in one window: {o.loc['fail_open', 'most_in_window']}, limit {outage.limit}), and "
    f"its decisions stayed wrong for {o.loc['fail_open', 'recovery_after_down_ms']:,} ms after "
    f"the server returned. Failing closed never went over, but refused "
    f"{o.loc['fail_closed', 'false_refusals']} requests that had room. The local limit admitted "
    f"{o.loc['local', 'beyond_limit']} beyond the limit: the server, back, admits its full limit "
    "on top of what the app servers admitted on their own."
)

# %% [markdown]
# The same failure, one command at a time: a first-hit window written as `INCR`, then `PEXPIRE`
# when the `INCR` made the key. If the connection drops between the two commands, the counter
# never expires.

# %%
split = st.split_commands_run(duration_ms=10_000)
charts.split_figure(split)

# %%
admitted = split.groupby("way")["allowed"].sum()
Markdown(
    f"The script admitted {admitted['one script']}; the two commands admitted "
    f"{admitted['two commands']} and then nothing more: the counter's PTTL is "
    f"{split.attrs['pttl_ms']}, so the key never expires."
)

# %% [markdown]
# ## 3. Caches in front of the server: how many calls do they save, and what do they change?
#
# A **deny cache** remembers "refused until `t + retry_after`" and refuses locally until then.
# **Prediction.** It saves many calls and changes no decision where the script's retry time is
# exact. It changes decisions where the retry time is only a bound (INCREX's reply does not say
# when the window ends), and where the server counts refusals it no longer hears about.

# %%
cache = st.CacheSetup(duration_ms=SECONDS)
shown = ["fixed_window", "sliding_counter", "token_bucket", "sliding_counter_all", "increx"]
deny = st.deny_cache_summary(
    pd.concat([st.deny_cache_run(cache, a) for a in (ALGORITHMS if FULL else shown)])
)
deny

# %% [markdown]
# An **allowance lease** takes `B` of the limit in one call. **Prediction.** Fewer calls, and an
# overshoot within `limit + N x (B - 1)`, because each app server holds at most `B - 1` unspent
# tokens when a window starts.

# %%
leases = pd.concat([st.lease_run(cache, b) for b in st.lease_sizes(cache)], ignore_index=True)
lease = st.lease_summary(leases, cache)
lease

# %%
charts.caches_figure(deny, lease)

# %%
d, top = deny.set_index("algorithm"), lease.iloc[-1]
Markdown(
    f"The deny cache saved {d.loc['fixed_window', 'calls_saved']} of "
    f"{d.loc['fixed_window', 'requests']} calls for the fixed window and changed "
    f"{d.loc['fixed_window', 'decisions_changed']} decisions; for INCREX it changed "
    f"{d.loc['increx', 'decisions_changed']}. A lease of {int(top['lease'])} brought the calls "
    f"down to {top['calls_per_decision']:.2f} per decision, with at most "
    f"{int(top['most_in_window'])} in a window against the bound {int(top['bound'])}."
)

# %% [markdown]
# ## 4. Skewed clocks: what if app servers disagree about the time?
#
# Four app servers with clock offsets spread evenly over `[-S, +S]` each pass their own `now_ms`.
# `S = 0` is what the scripts would decide reading the server's `TIME`.
#
# **Prediction.** The exact log stays exact only on one clock. The token bucket refills tokens
# whenever the clock jumps forward. Algorithms whose window is the key's TTL on the server's clock
# (echomq, INCREX) do not notice.

# %%
skew = st.SkewSetup(duration_ms=SECONDS)
chosen = list(ALGORITHMS) if FULL else ["sliding_log", "token_bucket", "gcra", "increx"]
skews = st.skew_summary(st.skew_study(skew, chosen), skew)
skews.pivot(index="algorithm", columns="skew_ms", values="most_in_window")

# %%
charts.skew_figure(skews, skew.limit)

# %%
k = skews.set_index(["algorithm", "skew_ms"])["most_in_window"]
Markdown(
    f"With 5 s of skew the exact log admitted up to {k[('sliding_log', 5000)]} in a true window "
    f"(limit {skew.limit}; on one clock: {k[('sliding_log', 0)]}). The token bucket went from "
    f"{k[('token_bucket', 0)]} to {k[('token_bucket', 100)]} with only 100 ms of skew. "
    f"INCREX stayed at {k[('increx', 0)]} whatever the skew."
)

# %% [markdown]
# ## 5. The server's own primitive: does INCREX decide as the Lua windows do?
#
# `INCREX key BYINT cost UBOUND limit PX window ENX` is a first-hit window in one command. With
# `PXAT` at the grid seam it is the clock-grid window, except that a refused request is not
# counted. **Prediction.** The first-hit INCREX agrees with EchoMQ's script on every decision. The
# grid INCREX agrees with the Lua fixed window until the Lua window counts a refused request. Each
# takes one command per decision.

# %%
native = st.NativeSetup(requests=3_000 if FULL else 1_000, duration_ms=SECONDS)
pairs = st.native_run(native)
ops = st.operations(replace(native, requests=500))
st.native_summary(pairs)

# %%
charts.native_figure(pairs, ops)

# %%
n = st.native_summary(pairs).set_index("pair")
o = ops.set_index("algorithm")["commands_per_decision"]
Markdown(
    f"INCREX and EchoMQ's script agreed on {n.loc['increx / echomq', 'agree']:,} of "
    f"{n.loc['increx / echomq', 'requests']:,} decisions. The grid INCREX admitted "
    f"{n.loc['increx_grid / fixed_window', 'native_only']} requests that the Lua fixed window "
    f"refused, each after a refusal the Lua window had counted. One command per decision, "
    f"against {o['echomq']:.2f} for EchoMQ's script and {o['fixed_window']:.2f} for the fixed "
    "window's."
)

# %% [markdown]
# ## 6. Rejected hits that count: what happens to a user just above the rate?
#
# Kong's sliding window counts refused requests too. **Prediction.** Below the rate it behaves
# like the sliding counter. Above the rate, every refused request keeps the estimate above the
# limit, so the user is blocked for as long as it keeps sending.

# %%
refusal = st.RefusalSetup(duration_ms=SECONDS)
rf = st.refusals_run(refusal)
refusals = st.refusals_summary(rf, refusal)
refusals

# %%
charts.refusals_figure(rf, refusal.window_ms)

# %%
r = refusals.set_index(["algorithm", "multiple"])
Markdown(
    "At 1.1 x the rate, the sliding counter admitted "
    f"{r.loc[('sliding_counter', 1.1), 'admitted_after_first_window']} after its first window, "
    f"and the one that counts refusals admitted "
    f"{r.loc[('sliding_counter_all', 1.1), 'admitted_after_first_window']}. Its longest run of "
    f"refusals lasted {r.loc[('sliding_counter_all', 1.1), 'longest_refused_ms']:,} ms of a "
    f"{refusal.duration_ms:,} ms run."
)
