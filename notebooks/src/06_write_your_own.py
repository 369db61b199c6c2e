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
# # 6. Write your own: the three window algorithms in Lua, graded
#
# The design card this workbench was specified from ends with a test of understanding: *"I can
# implement all three window algorithms atomically in Lua."* This notebook turns that into
# exercises. For each algorithm there is a skeleton under `notebooks/exercises/`:
#
# - `fixed_window.lua` — a counter per clock-grid window;
# - `sliding_log.lua` — the exact answer, a sorted set of admitted request times;
# - `sliding_counter.lua` — two grid counters, the previous one weighted by its overlap.
#
# Each skeleton has its **declaration** filled in (the `--[[ ratelimit ]]` block: which KEYS and
# ARGV the workbench passes, which reply element means what; `docs/your_script.md` explains the
# format) and the **contract** as comments. The algorithm itself is missing: write it, save the
# file, and run this notebook again. Each script is then graded by `check`: a battery of traces —
# the practice case, window seams, many requests in one millisecond, idle gaps, many clients, odd
# client ids, random traffic — played through your script and through the algorithm's reference,
# decision by decision and **field by field**: whether it was admitted, then `count`,
# `remaining`, `reset` and `retry_after`, and the header fields a server makes of them
# (`RateLimit: r=…;t=…` and `Retry-After`). A script that admits the right requests but tells the
# client it has nothing left is wrong, and is graded so. Every field must be equal, except
# `count`, which may differ by 1e-9 of its size: the sliding counter's count is an estimate, a
# float that Lua and Python may round in a different last bit.
#
# A skeleton left as it is reads **not attempted**. The solutions (the project's own scripts,
# `simulator/algorithms/lua/<name>.lua`, called through `notebooks/exercises/solutions/<name>.toml`
# — the same contract as the exercise) are graded below as a worked example, apart from yours.

# %% tags=["parameters"]
EXERCISE_DIR = "exercises"  # where your scripts are (relative to this notebook)
SEED = 0  # the seed of the battery's random traces

# %%
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.charts.check import mismatch_figure
from simulator.engine.run import boundary_burst
from simulator.userscripts import register_script
from simulator.userscripts.check import check
from simulator.userscripts.exercises import EXERCISES, attempt, grade, solution

# %matplotlib inline

# %% [markdown]
# ## 1. Grade each exercise
#
# One line per exercise: your script, and its status — *not attempted* while the skeleton is
# unwritten, *agrees* or *differs* once it is. Then each verdict in full: the first differing
# field, the request (its index, its time in ms, its client), what was expected and what came,
# and which fields were compared.

# %%
attempts = {name: attempt(name, EXERCISE_DIR) for name in EXERCISES}
grades = {name: grade(a, SEED) for name, a in attempts.items()}
pd.DataFrame(
    [
        {"exercise": name, "script": str(g.attempt.path), "status": g.status}
        for name, g in grades.items()
    ]
).set_index("exercise")

# %%
for name, g in grades.items():
    print(f"{name}: {g}\n")

# %% [markdown]
# ## 2. The solution, as a worked example
#
# This is **not your verdict**: it is what the project's own scripts get on the same battery, so
# you can see what "agrees on every field" reads like (and which fields each declaration
# returns: the sliding counter's does not return a `retry_after`, so it is not compared).

# %%
solutions = {name: solution(name, EXERCISE_DIR) for name in EXERCISES}
for name, s in solutions.items():
    print(f"the solution of {name} (worked example): {grade(s, SEED)}\n")

# %% [markdown]
# ## 3. What a wrong script looks like
#
# A script that disagrees with its reference is stopped at the **first decision that differs**,
# and at the first field of it. Two classic mistakes:
#
# - `mistakes/fixed_window_zeros.lua` decides like a fixed window, but answers 0 for the count,
#   what remains, the reset and the retry-after: a client told it has nothing left and may retry
#   at once. It is wrong at the very first request, on `count`.
# - `mistakes/first_hit_rearmed.lua` is the one the EchoMQ document warns about: a first-hit
#   window (the window starts at a client's first hit and *is* the counter's time to live) whose
#   script re-arms the expiry on **every** hit, so a client that keeps sending never sees its
#   window end. It is wrong on a decision.

# %%
zeros_path = f"{EXERCISE_DIR}/mistakes/fixed_window_zeros.lua"
print(open(zeros_path).read())
register_script(zeros_path, "wrong_zeros")
zeros = check("wrong_zeros", "fixed_window", seed=SEED)
print(zeros)

# %%
mismatch_figure(zeros.mismatch, "answers zeros")

# %% [markdown]
# The chart shows the requests of the trace up to the first difference on an axis of
# milliseconds: the top row is what the script said, the bottom row what the reference expected
# (a dot: admitted, a cross: refused; requests in the same millisecond are stacked, so every one
# is seen). Here both admit the first request, and the title says what differs: its count.

# %%
wrong_path = f"{EXERCISE_DIR}/mistakes/first_hit_rearmed.lua"
print(open(wrong_path).read())
register_script(wrong_path, "wrong_first_hit")
rearmed = check("wrong_first_hit", "echomq", seed=SEED)
print(rearmed)

# %%
mismatch_figure(rearmed.mismatch, "re-armed on every hit")

# %% [markdown]
# They agree until the window that started at the first admitted hit should have ended (the
# dotted seam); the script's window has moved with every admitted hit, so it still refuses.
#
# If one of your own scripts differs, the same chart shows where:

# %%
for name, g in grades.items():
    if g.verdict is not None and not g.agrees:
        display(mismatch_figure(g.verdict.mismatch, f"your {name}"))  # noqa: F821
print({name: g.status for name, g in grades.items()})

# %% [markdown]
# ## 4. The card's practice exercise, against your scripts
#
# *"Write a test that sends 100 requests at second 59 and 100 at second 61 of a minute, and check
# which algorithms allow them."* Below is one such test, already written: change it, or write your
# own. It runs against every exercise you have written (and the solutions) and says what each
# admits, and what a correct implementation must admit: all 200 for the clock-grid window (the
# seam at 60 s starts a new window), 100 for the exact log, and for the counter the 100 plus
# what the previous window's weight leaves room for at second 61.


# %%
def practice_test(algorithm: str) -> int:
    """100 requests at second 59 and 100 at second 61, limit 100 per minute: how many admitted."""
    frame = boundary_burst(algorithm, limit=100, window_s=60, first_s=59, second_s=61)
    return int(frame["allowed"].sum())


rows = []
for name in EXERCISES:
    want = practice_test(name)
    mine = attempts[name]
    for who, a in (("yours", mine), ("the solution", solutions[name])):
        got = practice_test(a.name) if a.name is not None else None
        rows.append(
            {
                "exercise": name,
                "script": who,
                "admitted": "not attempted" if got is None else got,
                "reference": want,
                "ok": "not attempted" if got is None else got == want,
            }
        )
practice = pd.DataFrame(rows).set_index(["exercise", "script"])
practice

# %%
for name in list(ALGORITHMS):  # leave the registry as it was for the next run
    if name.startswith(("my_", "solution_", "wrong_")):
        ALGORITHMS.pop(name)
