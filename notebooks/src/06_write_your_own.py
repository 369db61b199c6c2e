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
# decision by decision.
#
# While a skeleton is unwritten, the notebook grades the **solution** in its place and says so.
# The solutions are the project's own scripts, `simulator/algorithms/lua/<name>.lua`, called
# through `notebooks/exercises/solutions/<name>.toml` — the same contract as the exercise.

# %% tags=["parameters"]
EXERCISE_DIR = "exercises"  # where your scripts are (relative to this notebook)
SEED = 0  # the seed of the battery's random traces

# %%
import pandas as pd

from simulator.algorithms import ALGORITHMS
from simulator.charts.check import mismatch_figure
from simulator.engine.run import boundary_burst
from simulator.userscripts import register_script
from simulator.userscripts.exercises import EXERCISES, attempt, grade

# %matplotlib inline

# %% [markdown]
# ## 1. Grade each exercise
#
# One line per exercise: whose script was graded (yours, or the solution while yours is
# unwritten) and the verdict.

# %%
attempts = {name: attempt(name, EXERCISE_DIR) for name in EXERCISES}
verdicts = {name: grade(a, SEED) for name, a in attempts.items()}
table = pd.DataFrame(
    [
        {
            "exercise": name,
            "graded": "the solution (yours is not written yet)" if a.solution else str(a.path),
            "verdict": str(verdicts[name]),
        }
        for name, a in attempts.items()
    ]
).set_index("exercise")
with pd.option_context("display.max_colwidth", 200):
    display(table)  # noqa: F821 - the notebook's display

# %% [markdown]
# ## 2. What a wrong script looks like
#
# A script that disagrees with its reference is stopped at the **first decision that differs**:
# the trace, the request, the client, what each side said, and the reference's count at that
# moment, which usually says *why*. Here is a classic mistake, the one the EchoMQ document warns
# about: a first-hit window (the window starts at a client's first hit and *is* the counter's
# time to live) whose script re-arms the expiry on **every** hit. A client that keeps sending then
# never sees its window end. The script is `notebooks/exercises/mistakes/first_hit_rearmed.lua`.

# %%
from simulator.userscripts.check import check  # noqa: E402

wrong_path = f"{EXERCISE_DIR}/mistakes/first_hit_rearmed.lua"
print(open(wrong_path).read())
register_script(wrong_path, "wrong_first_hit")

verdict = check("wrong_first_hit", "echomq", seed=SEED)
print(verdict)

# %%
mismatch_figure(verdict.mismatch, "re-armed on every hit")

# %% [markdown]
# The chart shows the last requests of the trace up to the first difference: the top row is what
# the script decided, the bottom row what the reference decided. They agree until the window that
# started at the first admitted hit should have ended; the script's window has moved with every
# admitted hit, so it still refuses.
#
# If one of your own scripts disagrees, the same chart shows where:

# %%
for name, v in verdicts.items():
    if not v.agrees:
        display(mismatch_figure(v.mismatch, f"your {name}"))  # noqa: F821
print("all agree" if all(v.agrees for v in verdicts.values()) else "see the charts above")

# %% [markdown]
# ## 3. The card's practice exercise, against your scripts
#
# *"Write a test that sends 100 requests at second 59 and 100 at second 61 of a minute, and check
# which algorithms allow them."* Below is one such test, already written: change it, or write your
# own. It runs against every exercise (yours where written) and says what each admits, and what
# a correct implementation must admit: all 200 for the clock-grid window (the seam at 60 s starts a
# new window), 100 for the exact log, and for the counter the 100 plus what the previous window's
# weight leaves room for at second 61.


# %%
def practice_test(algorithm: str) -> int:
    """100 requests at second 59 and 100 at second 61, limit 100 per minute: how many admitted."""
    frame = boundary_burst(algorithm, limit=100, window_s=60, first_s=59, second_s=61)
    return int(frame["allowed"].sum())


rows = []
for name, a in attempts.items():
    got, want = practice_test(a.name), practice_test(name)
    rows.append(
        {"exercise": name, "graded": a.name, "admitted": got, "reference": want, "ok": got == want}
    )
practice = pd.DataFrame(rows).set_index("exercise")
practice

# %%
for name in list(ALGORITHMS):  # leave the registry as it was for the next run
    if name.startswith(("my_", "solution_")) or name == "wrong_first_hit":
        ALGORITHMS.pop(name)
assert practice["ok"].all(), practice
