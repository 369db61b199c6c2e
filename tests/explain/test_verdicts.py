"""Each shipped algorithm's arithmetic reaches the verdict its script's reply gave; a user's
script, with no arithmetic, is traced all the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.algorithms import ALGORITHMS
from simulator.backends.fakeserver import scripts as fake_scripts
from simulator.checks import ConfigError
from simulator.explain import explain_decision
from simulator.explain.arithmetic import ARITHMETIC
from simulator.explain.facts import both, num
from simulator.policy import resolve
from simulator.userscripts import register_script

ROOT = Path(__file__).resolve().parents[2]
# limit 3 per 1 s: admitted, refused, a cost above the limit, and windows that roll over
T_MS = [0, 100, 200, 300, 400, 1100, 1500, 2600, 2700]
COSTS = [1, 1, 2, 1, 1, 4, 1, 1, 3]


@pytest.mark.parametrize("name", sorted(cls.name for cls in ARITHMETIC))
def test_the_arithmetic_reaches_the_replys_verdict(name):
    policy = resolve(name, 3, 1000, {})
    seen = set()
    for i in range(len(T_MS)):
        why = explain_decision(policy, T_MS, COSTS, i)
        assert why.verdict is why.allowed, (i, why.arithmetic, why.reply)
        assert why.arithmetic[-1].endswith("admitted" if why.allowed else "refused")
        assert why.note == "" and why.calls
        seen.add(why.allowed)
    assert seen == {True, False}


SHIPPED = (
    "fixed_window echomq sliding_log sliding_counter sliding_counter_all token_bucket gcra "
    "increx increx_grid multi_policy"
).split()


def test_the_shipped_algorithms_have_their_arithmetic():
    assert {cls.name for cls in ARITHMETIC} == set(SHIPPED)
    assert all(ALGORITHMS[name] in ARITHMETIC for name in SHIPPED)


def test_the_server_command_stands_as_the_one_call():
    why = explain_decision(resolve("increx", 3, 1000, {}), [0, 10], None, 1)
    assert why.source_lines == () and why.ran == frozenset()
    (call,) = why.calls
    assert call.command == "INCREX" and call.line is None and call.reply == [2, 1]
    assert "1 + 1 = 2 ≤ 3 → admitted" in why.arithmetic[-1]


def test_the_bucket_shows_its_refill_with_the_stored_numbers():
    why = explain_decision(resolve("token_bucket", 3, 1000, {}), [0, 0, 0, 500], None, 3)
    stored = why.calls[0].reply  # HMGET tokens ts, as the server held them
    assert why.calls[0].command == "HMGET" and stored[1] == "0"
    assert f"min(3, {stored[0]} + 500 ms × 3 per 1000 ms) = min(3, 1.5) = 1.5" in why.arithmetic[1]


def test_a_user_script_is_traced_without_arithmetic():
    cls = register_script(ROOT / "data" / "card" / "sliding-counter.lua", "why_card_counter")
    try:
        policy = resolve(cls, 100, 60_000, {})
        why = explain_decision(policy, [59_000] * 100 + [61_000] * 3, None, 102)
    finally:
        ALGORITHMS.pop("why_card_counter")
    path = ROOT / "data" / "card" / "sliding-counter.lua"
    assert why.source_lines == tuple(path.read_text().splitlines())  # its own text, no guard
    assert why.arithmetic == () and why.verdict is None
    assert why.note.startswith("no arithmetic for why_card_counter: ") and "\n" not in why.note
    assert 4 in why.ran and 5 in why.ran  # the two GETs
    gets = [c for c in why.calls if c.command == "GET"]
    assert [g.line for g in gets] == [4, 5] and gets[1].reply == "100"
    assert why.as_html().count('class="why-line why-ran"') == len(why.ran)


def test_a_user_script_that_loops_for_ever_while_traced_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMULATOR_SCRIPT_TIME_S", "0.2")
    path = tmp_path / "spin.lua"
    path.write_text(
        "local n = redis.call('INCR', KEYS[1])\n"
        "if n >= 2 then while true do end end\n"
        "return {1, n}\n"
    )
    path.with_suffix(".toml").write_text(
        'keys = ["why:spin:{client}"]\nargv = ["limit"]\nreply = { allowed = 1, count = 2 }\n'
    )
    cls = register_script(path, "why_spin")
    try:
        policy = resolve(cls, 5, 1000, {})
        assert explain_decision(policy, [0, 10], None, 0).allowed  # the first returns
        with pytest.raises(ConfigError, match="ran longer than 0.2 s"):
            explain_decision(policy, [0, 10], None, 1)  # the second spins: stopped, traced
    finally:
        ALGORITHMS.pop("why_spin")
    mixin = _scripting.ScriptingCommandsMixin
    assert mixin._lua_redis_call is fake_scripts._lua_redis_call  # the tracing is gone again


@pytest.mark.parametrize(
    ("name", "limit", "window_ms", "times", "costs", "index", "shown"),
    [
        # 1.998 tokens against a cost of 2: not "2 > 2"
        ("token_bucket", 3, 1000, [0, 0, 0, 666], [1, 1, 1, 2], 3, "2 > 1.998 → refused"),
        # an estimate of 99.9967 against 100: not "100 < 100"
        ("sliding_counter", 100, 60000, [0] * 100 + [60002], None, 100, "99.997 < 100 → admitted"),
    ],
)
def test_a_boundary_comparison_shows_digits_enough_to_tell_its_sides_apart(
    name, limit, window_ms, times, costs, index, shown
):
    why = explain_decision(resolve(name, limit, window_ms, {}), times, costs, index)
    assert why.arithmetic[-1].endswith(shown)


def test_gcra_prints_the_scripts_own_comparison_measured_from_now():
    why = explain_decision(resolve("gcra", 3, 1000, {"burst": 1}), [2000], None, 0)
    assert why.allowed  # a fresh key's first request: 2333.33 - 333.33 once rounded past 2000
    assert why.arithmetic[-1] == (
        "(cost − burst) × T ≤ now − TAT: (1 − 1) × 333.33 = 0 ≤ now − TAT = 2000 − 2000 = 0 "
        "→ admitted"
    )


def test_num_and_both_widen_only_as_far_as_needed():
    assert (num(2), num(2.5), num(1.998), num(0.5)) == ("2", "2.5", "1.998", "0.5")
    assert both(2.0041, 2.0042) == ("2.0041", "2.0042")
    assert both(1.25, 3) == ("1.25", "3")
