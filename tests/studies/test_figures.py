"""Figures that must say what the data say: ratios to the limit, the worst case any search found,
a script's steady state with all its keys, and sampled bars marked as sampled."""

from __future__ import annotations

from pathlib import Path

import matplotlib.text
import pytest
from conftest import run_main as run
from matplotlib.backends.backend_agg import FigureCanvasAgg

ROOT = Path(__file__).resolve().parents[2]


def test_a_buckets_ratio_is_to_the_limit_not_to_its_burst():
    out = run("burst", "--limit", "10", "--param", "burst=100")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines()[2:]}
    # 20 admitted in one window of a limit of 10: twice the limit, whatever the burst
    for bucket in ("token_bucket", "gcra"):
        assert rows[bucket].split()[4] == "20", rows[bucket]
        assert "(2.00x limit)" in rows[bucket], rows[bucket]


def test_the_sweeps_burst_summary_divides_by_the_runs_limit():
    from simulator.engine.run import boundary_burst
    from simulator.metrics import burst_summary

    frame = boundary_burst("token_bucket", 10, 60.0, 59.0, 61.0, params={"burst": 100})
    summary = burst_summary(frame, 60_000)  # as the burst sweep calls it: no limit passed
    assert summary.loc["token_bucket", "max_in_window"] == 20
    assert summary.loc["token_bucket", "ratio_to_limit"] == 2.0


# A sliding window kept as one hash field per second (Figma's published design): a request at
# 59,999 ms sits in second 59, which leaves the sum at 119,000 ms although it is 59.001 s old.
FIGMA = """--[[ ratelimit
label = "Hash of seconds"
keys = ["rl:figma:{client}"]
argv = ["now_s", "window_s", "limit"]
reply = { allowed = 1, count = 2 }
]]
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local fields = redis.call('HGETALL', KEYS[1])
local total = 0
for i = 1, #fields, 2 do
  if tonumber(fields[i]) <= now - window then
    redis.call('HDEL', KEYS[1], fields[i])
  else
    total = total + tonumber(fields[i + 1])
  end
end
if total < limit then
  redis.call('HINCRBY', KEYS[1], now, 1)
  redis.call('PEXPIRE', KEYS[1], window * 1000)
  return {1, total}
end
return {0, total}
"""


@pytest.fixture
def figma(tmp_path):
    """The hash-of-seconds script registered as ``figma``; forgotten afterwards."""
    from simulator.algorithms import ALGORITHMS
    from simulator.userscripts import register_script

    path = tmp_path / "figma_hash.lua"
    path.write_text(FIGMA)
    register_script(path, "figma")
    yield "figma"
    ALGORITHMS.pop("figma", None)


def _texts(fig) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def test_the_worst_case_chart_draws_the_worst_any_adversary_found(figma):
    from simulator.charts.accuracy import schedule_figure
    from simulator.studies.adversaries import schedule_of
    from simulator.studies.adversary import SearchConfig, confirm_on_lua, worst_case

    row, _ = worst_case(figma, SearchConfig(generations=1, population=4, seed=0))
    assert row["end_bunching_max"] == 200
    assert row["worst_max"] == 200 and row["worst_by"] != "search"
    frames = {
        a: confirm_on_lua(a, schedule_of(a, s), 100, 60_000)[1]
        for a, s in ((figma, row["worst_schedule"]), ("sliding_log", "100@70170ms"))
    }
    texts = _texts(schedule_figure(frames, 100, 60_000, {figma: row["worst_by"]}))
    assert any("most in any 60 s: 200 (2.00x)" in t for t in texts), texts
    title = next(t for t in texts if "held the limit" in t)
    assert title.startswith("Only Sliding log (exact) held the limit"), title
    assert "2.00x the limit" in title, title


# Upstash's sliding window: this window's counter and the last one's, two keys per client.
UPSTASH = """--[[ ratelimit
label = "Two-key sliding counter"
keys = ["rl:up:{client}:{window}", "rl:up:{client}:{window-1}"]
argv = ["limit", "window_ms", "elapsed_ms"]
reply = { allowed = 1, count = 2 }
]]
local limit, window, elapsed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local estimate = math.floor(previous * (window - elapsed) / window) + current
if estimate >= limit then
  return {0, estimate}
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], window * 2 + 1000)
return {1, estimate}
"""


@pytest.fixture
def upstash(tmp_path):
    from simulator.algorithms import ALGORITHMS
    from simulator.userscripts import register_script

    path = tmp_path / "upstash_sliding.lua"
    path.write_text(UPSTASH)
    register_script(path, "upstash")
    yield "upstash"
    ALGORITHMS.pop("upstash", None)


@pytest.mark.server
def test_a_scripts_steady_state_holds_every_key_the_script_keeps(upstash):
    from simulator.backends import RedisBackend
    from simulator.backends.embedded import EmbeddedValkey
    from simulator.studies import memory

    with EmbeddedValkey(maxmemory="64mb", config={"maxmemory-policy": "noeviction"}) as server:
        backend = RedisBackend(server.client(), "embedded")
        try:
            row, _ = memory.measure_layout(
                backend, memory.Layout(upstash), 200, 16 << 20, script_users=100, progress=False
            )
            builtin, _ = memory.measure_layout(
                backend,
                memory.Layout("sliding_counter"),
                200,
                16 << 20,
                script_users=100,
                progress=False,
            )
        finally:
            backend.close()
    # as many keys as the built-in counter that keeps the same two windows
    assert row["keys_per_user"] == builtin["keys_per_user"] == 2, row["key_names"]


def test_a_scripts_contract_bars_and_rows_say_they_were_sampled(figma, monkeypatch):
    import pandas as pd

    from simulator.charts.contracts import contracts_figure
    from simulator.studies import contracts

    monkeypatch.setattr(contracts, "LUA_SAMPLE", 300)
    trace = pd.DataFrame(
        {"client": [f"c{i % 20}" for i in range(2000)], "t_ms": [i * 30 for i in range(2000)]}
    )
    table = contracts.compare_contracts(trace, 10, 60_000, "steady")
    row = table.set_index("variant").loc[figma]
    assert bool(row["sampled"]) and row["requests"] < row["offered_requests"] == 2000
    assert not table.set_index("variant").loc["sliding_log", "sampled"]
    texts = _texts(contracts_figure(table))
    # Every variant decided on the Lua path is sampled: a user's script, and an algorithm shipped
    # without a bulk kernel (an optional ability). Each has its note beside its bar in both panels.
    sampled = table[table["sampled"].astype(bool)]
    for n, group in sampled.groupby("requests"):
        note = f"sampled: {int(n):,} of 2,000"
        assert sum(note in t for t in texts) == 2 * len(group), texts
    assert any(t.endswith("(sampled)") and "Hash of seconds" in t for t in texts), texts


BUILT_INS = ("fixed_window", "echomq", "sliding_log", "sliding_counter", "token_bucket", "gcra")


def test_the_cost_rules_section_names_every_built_in():
    text = (ROOT / "docs" / "buckets.md").read_text()
    assert "## Cost rules, as each script decides" in text
    section = text.split("## Cost rules, as each script decides")[1].split("\n## ")[0]
    rows = {
        line.split("|")[1].strip(" `") for line in section.splitlines() if line.startswith("| `")
    }
    assert rows == set(BUILT_INS)


# Each built-in at the edge of its stated rule: limit 10 (burst 10), 8 requests of cost 1 at one
# instant, then the requests below at the same instant (t = 30 s: mid-window, no previous window).
EDGES = {
    # count 8: 8 + 3 > 10 refused but counted (11), so even a cost of 1 is refused after it
    "fixed_window": [(3, False), (1, False)],
    # live 8: 8 + 3 > 10 refused and not counted, so 8 + 2 fits
    "echomq": [(3, False), (2, True), (1, False)],
    # 8 entries: 8 + 3 > 10 refused, 8 + 2 <= 10 admitted
    "sliding_log": [(3, False), (2, True), (1, False)],
    # estimate 8: 8 + 3 - 1 = 10 is not < 10, 8 + 2 - 1 = 9 is
    "sliding_counter": [(3, False), (2, True), (1, False)],
    # 2 tokens left (no time passes): 3 refused, 2 admitted, none left
    "token_bucket": [(3, False), (2, True), (1, False)],
    "gcra": [(3, False), (2, True), (1, False)],
}


@pytest.mark.parametrize("name", BUILT_INS)
def test_each_scripts_cost_rule_at_its_edge(name):
    from simulator.algorithms import ALGORITHMS
    from simulator.backends import FakeRedisBackend

    limiter = ALGORITHMS[name](FakeRedisBackend(), 10, 60_000)
    t_ms = 30_000
    assert all(limiter.decide("a", t_ms).allowed for _ in range(8))
    got = [(cost, bool(limiter.decide("a", t_ms, cost).allowed)) for cost, _ in EDGES[name]]
    assert got == EDGES[name]


def test_the_sliding_counter_admits_a_cost_on_a_fractional_estimate_below_the_edge():
    from simulator.algorithms import ALGORITHMS
    from simulator.backends import FakeRedisBackend

    limiter = ALGORITHMS["sliding_counter"](FakeRedisBackend(), 10, 60_000)
    assert all(limiter.decide("a", 59_000).allowed for _ in range(10))  # prev = 10
    # at 75 s: estimate = 10 x 45/60 = 7.5; cost 3: 7.5 + 2 = 9.5 < 10 admitted (not <= 10 - 3)
    assert limiter.decide("a", 75_000, 3).allowed


def test_a_zero_on_the_families_log_axis_is_a_whole_dot_inside_the_edge():
    import pandas as pd

    from simulator.charts.accuracy import families_figure

    summary = pd.DataFrame(
        [
            {
                "family": "steady",
                "requests": 1000,
                "clients": 10,
                "decided_differently_pct": 0.0,
                "mean_rel_diff_pct": 1.0,
                "clients_over_limit": 0,
                "clients_limited_while_under": 0,
            }
        ]
    )
    fig = families_figure(summary)
    fig.canvas.draw()
    for ax in fig.axes:
        dots = ax.collections[-1]
        left = ax.transData.transform((ax.get_xlim()[0], 0))[0]
        radius_px = (dots.get_sizes()[0] ** 0.5) / 2 * fig.dpi / 72
        xs = ax.transData.transform(dots.get_offsets())[:, 0]
        assert (xs - radius_px > left).all(), ax.get_title()


def test_the_boundary_burst_title_keeps_clear_of_the_first_panels_titles_and_says_what_happened():
    import pandas as pd

    from simulator.algorithms import ALGORITHMS
    from simulator.charts.burst import boundary_burst_figure
    from simulator.engine.run import boundary_burst

    frame = pd.concat([boundary_burst(a) for a in ALGORITHMS], ignore_index=True)
    fig = boundary_burst_figure(frame, 100, 60_000, 59, 61)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    bottom_of_title = fig._suptitle.get_window_extent(renderer).y0
    tops = [ax.title.get_window_extent(renderer).y1 for ax in fig.axes]
    assert bottom_of_title - max(tops) >= 8  # pixels: a clear gap, in any font
    assert "lets 2.00x the limit through" in fig.get_suptitle()

    only_log = boundary_burst_figure(
        frame[frame["algorithm"] == "sliding_log"], 100, 60_000, 59, 61
    )
    assert "every algorithm holds the limit" in only_log.get_suptitle()
