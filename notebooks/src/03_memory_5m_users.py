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
# # 3. Memory at 5 million users: whiteboard arithmetic against a real server
#
# **The interview question.** Every user may send **100 requests per minute**; **5 million users**
# are active. Which rate limiter fits in memory, and how much memory does each one need?
#
# The four limiters keep different keys per user:
#
# | name | keys per user, as its Lua script writes them |
# |---|---|
# | `fixed_window` | one counter per clock-aligned minute, `rl:fw:{user}:<minute>` |
# | `echomq` | a counter whose TTL is the window, plus a meta hash with the budget (no TTL) |
# | `sliding_log` | a sorted set with one member per admitted request in the last minute |
# | `sliding_counter` | the counters of the current and the previous minute |
#
# **The card.** Interview-preparation notes often answer this with one card: *high limits per key:
# use a counter (the sliding window counter, or a token bucket); small exact limits: use a log.*
# This notebook puts numbers on that card.
#
# First the arithmetic a candidate does on a whiteboard, then what a real Valkey says. The
# measured figures come from the table `python -m simulator memory --full` wrote into `data/`
# (regenerating it needs a real server: the command starts one). Set `REMEASURE = True` to measure
# again here, at a small size, on an embedded Valkey.

# %% tags=["parameters"]
SIZE = "ci"  # "ci": read the committed tables; "full": the same, and remeasure bigger if asked
REMEASURE = False  # True: start an embedded Valkey and measure again (USERS users per layout)
USERS = {"ci": 2_000, "full": 250_000}[SIZE]  # users loaded per layout when remeasuring
DATA_DIR = "../data"  # where python -m simulator memory wrote its tables

# %%
# %matplotlib inline
import pandas as pd
from IPython.display import Markdown

from simulator.charts import memory as charts_memory
from simulator.display import compact
from simulator.lessons import reveal
from simulator.studies import bigkey, memory, memory_tables

pd.set_option("display.width", 160)
pd.set_option("display.max_columns", 20)

# %% [markdown]
# ## The whiteboard
#
# A candidate counts payload bytes: a key name of about 30 bytes and an 8-byte integer per counter;
# for the log, 100 entries of an 8-byte score and a ~16-byte request id. Then multiplies by 5 million.
#
# * fixed window: 30 + 8 = 38 B per user, **0.19 GB** for 5M users
# * sliding counter: two counters, 76 B, **0.38 GB**
# * sliding log: 30 + 100 × 24 = 2,430 B per user, **12 GB**
#
# **Predict:** how far off is each figure on a real server? Which way? Write what you think
# a real Valkey holds for 5 million users at a limit of 100, in GB, e.g.
# `my_guess = {"fixed_window": 0.3, "sliding_counter": 0.6, "sliding_log": 15}`, and run the
# cell; the reveal after the measurements waits for it.

# %%
my_guess = None  # GB for 5M users: {"fixed_window": ..., "sliding_counter": ..., "sliding_log": ...}

# %%
board = memory_tables.whiteboard(limit=100)
compact(board.assign(whiteboard_total_gb=board["whiteboard_total_bytes"] / 1e9), 2)

# %% [markdown]
# ## The measured truth
#
# For each layout one user is built by the real script, weighed key by key with `MEMORY USAGE`,
# and cloned (`DUMP` once, `RESTORE` in a server-side loop) under as many users as the memory
# budget holds, while the server's `used_memory` is sampled. A straight line through those samples
# gives bytes per user; where fewer than 5M users fitted, the total at 5M is that line
# extrapolated, and the table says so.

# %%
if REMEASURE:
    from simulator.backends import RedisBackend
    from simulator.backends.embedded import EmbeddedValkey

    with EmbeddedValkey(maxmemory="1gb", config={"maxmemory-policy": "noeviction"}) as server:
        backend = RedisBackend(server.client(), "embedded valkey")
        per_user, growth = memory.measure_all(
            backend, USERS, 512 << 20, "embedded valkey", script_users=500, progress=False
        )
        bigkey = bigkey.bigkey_study(backend, decisions=200)
        encoding = bigkey.encoding_sweep(backend, decisions=100, progress=False)
        backend.close()
else:
    tables = memory_tables.read_tables(DATA_DIR)
    per_user, growth = tables["per_user"], tables["growth"]
    bigkey, encoding = tables["bigkey"], tables["encoding"]

first = per_user.iloc[0]
print(
    f"server: {first['server']} {first['server_version']}, measured {first['date']}; "
    f"method: {first['method']}"
)
layout = ["algorithm", "state", "limit", "id_format"]
compact(
    per_user.assign(total_at_5m_gb=per_user["total_at_5m_bytes"] / 1e9).set_index(layout)[
        [
            "memory_usage_bytes_per_user",
            "bytes_per_user_used_memory",
            "total_at_5m_gb",
            "total_at_5m_source",
            "encoding",
        ]
    ],
    2,
    scroll=True,  # four index columns and five figures: wider than the column, so a scroll box
)

# %% [markdown]
# ## Reveal
#
# Your figures against the server's, steady state at a limit of 100 (the first id format):

# %%
steady = per_user[(per_user["state"] == "steady") & (per_user["limit"] == 100)]
measured_gb = steady.groupby("algorithm", sort=False)["total_at_5m_bytes"].first() / 1e9
reveal(my_guess, measured_gb, "GB", question="5 million users, limit 100")

# %% [markdown]
# The whiteboard beside the server, for 100 requests per minute (steady state; the worst moment is
# the most any state of that algorithm costs):

# %%
side = memory_tables.compare(per_user, limit=100)
compact(side, 2, scroll=True)  # seven figures a row: a scroll box rather than a spill at 1280 px

# %% [markdown]
# What the whiteboard misses:
#
# * **Per-key overhead.** A counter's payload is 8 bytes, but the key costs ~56 bytes by
#   `MEMORY USAGE` and ~90 bytes of `used_memory`: the object header with the key embedded, its
#   slot in the keyspace table and its slot in the expiry table. The counters come out about 2.4x
#   the whiteboard; the log only ~1.4x, because its entries are packed in one listpack.
# * **The worst moment.** At a minute's seam the fixed window has two keys alive (the old one has
#   not expired yet), the sliding counter three: plan for the seam, not the steady state.
# * **Request ids.** The log stores whatever id the caller passes: `<now_ms>-<seq>` (what
#   `limiters.py` sends; the sequence number of a busy process has 6-7 digits) or a 36-character
#   uuid4, which makes every entry ~16 bytes bigger.
# * **EchoMQ's meta hash never expires**: an idle user still costs ~100 bytes.

# %%
charts_memory.per_user_figure(per_user)

# %% [markdown]
# ## How sure are these figures?
#
# `used_memory` grows in steps (the keyspace table doubles), so the samples scatter around the
# line. The fit's standard error is per user; the largest sample's distance from the line is in
# bytes of the whole load. Users built by the scripts themselves weigh the same as the clones at the
# same count (the `scripts` and `clones` columns), which checks that cloning is faithful.

# %%
compact(
    per_user.assign(total_at_5m_error_gb=per_user["total_at_5m_error_bytes"] / 1e9)
    .set_index(layout)[
        [
            "users_scripts",
            "bytes_per_user_scripts",
            "bytes_per_user_clones_same_users",
            "users_measured",
            "fit_stderr_bytes_per_user",
            "fit_max_residual_bytes",
            "total_at_5m_error_gb",
        ]
    ]
    .rename(
        columns={
            "bytes_per_user_scripts": "scripts bytes_per_user",
            "bytes_per_user_clones_same_users": "clones bytes_per_user",
            "fit_stderr_bytes_per_user": "± bytes_per_user",
        }
    ),
    3,
    scroll=True,  # the fit's eight figures a row: a scroll box at 1280 px
)

# %% [markdown]
# ## The encoding cliff
#
# A sorted set stays a compact **listpack** while it holds at most `zset-max-listpack-entries`
# entries (128 by default) of at most `zset-max-listpack-value` bytes (64). One entry more and the
# server converts it to a **skiplist plus a hash table**: every entry gets its own allocations.
# At 100 requests per minute the log sits just below the cliff; a limit of 129 would not.

# %%
compact(
    encoding[["entries", "encoding", "user_bytes", "bytes_per_entry", "server_us_per_decision"]], 1
)

# %%
charts_memory.encoding_cliff_figure(encoding)

# %% [markdown]
# ## The big key: a sliding log at 10,000 requests per minute
#
# One API key allowed 10,000 requests per minute keeps a log of 10,000 entries: a skiplist of
# several hundred kilobytes. Each steady decision drops one entry and adds one, which stays cheap.
# The expensive moment is the first request after a pause: the script drops the whole window's
# entries in one `ZREMRANGEBYSCORE`, and the server does nothing else meanwhile. The same key also
# has to be moved whole when a cluster slot migrates, and freed whole when it expires.

# %%
compact(
    bigkey.set_index(["algorithm", "limit"])[
        [
            "entries",
            "encoding",
            "user_bytes",
            "server_us_per_decision",
            "wall_us_p50",
            "wall_us_p99",
            "server_us_after_pause",
        ]
    ],
    1,
)

# %%
charts_memory.bigkey_figure(bigkey)

# %% [markdown]
# ## The choice

# %%
log = side.loc["sliding_log"]
fw, sc = side.loc["fixed_window"], side.loc["sliding_counter"]
big = bigkey.set_index(["algorithm", "limit"])
print(
    f"100 req/min, 5M users: fixed window {fw['total_at_5m_gb']:.2f} GB "
    f"(worst moment {fw['worst_total_at_5m_gb']:.2f} GB), sliding counter "
    f"{sc['total_at_5m_gb']:.2f} GB (worst {sc['worst_total_at_5m_gb']:.2f} GB), sliding log "
    f"{log['total_at_5m_gb']:.1f} GB ({log['total_at_5m_source']} from "
    f"{int(log['users_measured']):,} users)."
)
print(
    f"Login, 5 attempts/min: the log is {big.loc[('sliding_log', 5), 'user_bytes']} B per user vs "
    f"{big.loc[('fixed_window', 5), 'user_bytes']} B for a counter: exactness is nearly free."
)
print(
    f"API key, 10,000 req/min: the log is {big.loc[('sliding_log', 10_000), 'user_bytes'] / 1e3:,.0f} kB "
    f"per key and {big.loc[('sliding_log', 10_000), 'server_us_after_pause'] / 1e3:.1f} ms of server "
    f"time after a pause; the sliding counter is "
    f"{big.loc[('sliding_counter', 10_000), 'user_bytes']} B and "
    f"{big.loc[('sliding_counter', 10_000), 'server_us_after_pause']:.0f} µs."
)

# %% [markdown]
# ## The card's advice at 10,000 requests a minute, in numbers
#
# The card answers "a sliding log at 10,000 requests/min per API key becomes a big key" with "use
# a sliding window counter **or token bucket** for high limits". Here are the four side by side,
# from the same big-key study: bytes per key (`MEMORY USAGE`) and the server's time per decision
# (`INFO commandstats`), for one key at exactly its limit. GCRA is the token bucket's twin: one
# number per key instead of two.

# %%
card = ["sliding_log", "sliding_counter", "token_bucket", "gcra"]
at_10k = (
    bigkey[(bigkey["limit"] == 10_000) & bigkey["algorithm"].isin(card)]
    .set_index("algorithm")
    .reindex([a for a in card if a in set(bigkey["algorithm"])])[
        ["user_bytes", "server_us_per_decision", "server_us_after_pause"]
    ]
)
compact(at_10k, 1)

# %%
smallest = at_10k["user_bytes"].drop("sliding_log").min()
Markdown(
    f"At 10,000 requests a minute the log holds **{at_10k.loc['sliding_log', 'user_bytes'] / 1e3:,.0f} kB** "
    f"per key; the counter and the buckets hold "
    + ", ".join(
        f"{a} {at_10k.loc[a, 'user_bytes']:,.0f} B" for a in at_10k.index if a != "sliding_log"
    )
    + f" — {at_10k.loc['sliding_log', 'user_bytes'] / smallest:,.0f}x less at best. After a pause the "
    f"log's first decision takes {at_10k.loc['sliding_log', 'server_us_after_pause'] / 1e3:.1f} ms of "
    f"server time (it drops a window of entries at once); the others stay at tens of µs."
)

# %% [markdown]
# **What it means.** At 100 requests per minute for 5 million users the counters need about a
# gigabyte even at their worst moment; the exact log needs well over ten times that, more than the
# whiteboard says, and more again with uuid request ids. The card's advice (see the introduction) holds with numbers:
#
# * **high limits** (thousands per minute per key): a counter, a token bucket or GCRA — constant
#   memory and constant time, whatever the limit (the table above);
# * **small exact limits** (5 login attempts, a few password resets): the log, whose exactness
#   costs a few hundred bytes per user and stays a listpack;
# * in between, mind `zset-max-listpack-entries`: a log above it costs ~2.8x more per entry.
#
# The tables and charts come from `python -m simulator memory --full` (see `docs/memory.md`);
# nothing in this notebook needs a server unless `REMEASURE` is set.
