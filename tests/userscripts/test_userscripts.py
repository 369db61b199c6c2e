"""A user's own limiter script: declared, run through the studies, graded, and refused clearly."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import FW10

from simulator.algorithms import ALGORITHMS
from simulator.cli import main
from simulator.engine.run import boundary_burst
from simulator.userscripts import register_script
from simulator.userscripts.check import check

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "data" / "card"
SHARED_CARD = ROOT.parent / "shared" / "card"

FIRST_HIT = """--[[ ratelimit
label = "First-hit window"
keys = ["rl:fh:{client}"]
argv = ["limit", "window_ms"]
reply = { allowed = 1, count = 2 }
server_time = true
]]
local limit = tonumber(ARGV[1])
local live = tonumber(redis.call('GET', KEYS[1]) or '0')
if live >= limit then return {0, live} end
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, count}
"""

# The mistake the EchoMQ document warns about: the window re-armed on every hit, so a client
# that keeps sending keeps its old count (notebook 06 shows the same script).
RESET_ON_EVERY_HIT = (
    ROOT / "notebooks" / "exercises" / "mistakes" / "first_hit_rearmed.lua"
).read_text()


@pytest.fixture
def scripts(tmp_path):
    """Write scripts into a folder; forget the registered ones afterwards."""
    before = set(ALGORITHMS)

    def write(name: str, source: str, toml: str | None = None) -> Path:
        path = tmp_path / name
        path.write_text(source)
        if toml is not None:
            path.with_suffix(".toml").write_text(toml)
        return path

    yield write
    for name in set(ALGORITHMS) - before:
        ALGORITHMS.pop(name)


def test_the_card_scripts_are_the_printed_bytes():
    for name in ("sliding-log.lua", "sliding-counter.lua"):
        if SHARED_CARD.is_dir():
            assert (CARD / name).read_bytes() == (SHARED_CARD / name).read_bytes()
        assert "ratelimit" not in (CARD / name).read_text()  # declared beside, not inside


def test_the_card_scripts_run_verbatim_in_burst(capsys):
    args = ["burst", "--script", f"card_log={CARD / 'sliding-log.lua'}"]
    assert main([*args, "--script", f"card_counter={CARD / 'sliding-counter.lua'}"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["card_log"][1] == "100"  # the practice case's answer
    # whole-second elapsed: at second 61 the card's estimate is 100 x 59/60 as ours, so the same
    assert rows["card_counter"][1] == "102"
    assert "card_log" not in ALGORITHMS  # main gave the registry back as it was


def test_the_card_log_agrees_with_the_exact_reference_and_its_counter_does_not():
    register_script(CARD / "sliding-log.lua", "card_log")
    register_script(CARD / "sliding-counter.lua", "card_counter")
    try:
        log = check("card_log", "sliding_log")  # its count, when admitted, counts this request
        assert log.mismatch.field == "count" and set(log.by_field) == {"count"}, log
        verdict = check("card_counter", "sliding_counter", only=("allowed",))  # the decisions
        assert not verdict.agrees
        # 1 ms into a window, whole seconds say elapsed 0: the previous window weighs in full
        m = verdict.mismatch
        assert (m.t_ms, m.said.allowed, m.expected.allowed) == (1001, False, True)
    finally:
        ALGORITHMS.pop("card_log"), ALGORITHMS.pop("card_counter")


def test_check_passes_a_right_script_and_names_the_first_wrong_decision(scripts, capsys):
    fixed = ROOT / "simulator" / "algorithms" / "lua" / "fixed_window.lua"
    toml = 'keys = ["rl:fw:{client}:{window}"]\nargv = ["now_ms", "window_ms", "limit", "cost"]\n'
    toml += "reply = { allowed = 1, count = 2, remaining = 4, reset = 5, retry_after = 6 }\n"
    right = scripts("fw.lua", fixed.read_text(), toml)
    assert main(["check", str(right), "--as", "fixed_window"]) == 0
    assert "agrees on 3,068 decisions over 19 traces" in capsys.readouterr().out  # with costs
    # FW10 counts a request that costs more than the limit, which the reference never counts
    assert main(["check", str(scripts("fw10.lua", FW10)), "--as", "fixed_window"]) == 1
    assert (
        "request 4 at t_ms=3, client 'c': the first field that differs is count: expected 13, "
        "got 24; both refused it" in capsys.readouterr().out
    )
    first_hit = scripts("first_hit.lua", FIRST_HIT)
    assert main(["check", str(first_hit), "--as", "echomq"]) == 0
    capsys.readouterr()
    wrong = scripts("reset.lua", RESET_ON_EVERY_HIT)
    assert main(["check", str(wrong), "--as", "echomq"]) == 1
    out = capsys.readouterr().out
    # limit 4 per 1000 ms from the first hit at 999: the window ends at 1999, so at 2000 the
    # reference admits; the re-armed key (last hit at 1000) lives until 2000 and refuses
    assert (
        "differs in trace 'around the seams: 1 ms before, on, 1 ms after' (limit 4 per 1000 ms), "
        "request 9 at t_ms=2000, client 'c': the script refused it (count 4), the reference "
        "admitted it: its count at that moment is 1 against the limit 4" in out
    ), out
    assert "the script refused it" in out and "the reference admitted it" in out
    assert main(["check", str(wrong), "--against", str(first_hit)]) == 1


def test_a_user_script_in_replay_and_the_simulation_api(scripts, tmp_path):
    path = scripts("fw10.lua", FW10)
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client,cost\n0,a,1\n1,a,2\n2,a,1\n10000,a,3\n")
    out = tmp_path / "out.csv"
    args = ["replay", str(trace), "--script", str(path), "--algorithm", "fw10"]
    assert main([*args, "--limit", "3", "--window", "10", "--out", str(out)]) == 0
    assert pd.read_csv(out)["allowed"].tolist() == [1, 1, 0, 1]
    register_script(path)
    frame = boundary_burst("fw10", 100, 60, 59, 61)
    assert frame["allowed"].sum() == 200  # a clock-grid window: 100 and 100 across the seam


@pytest.mark.parametrize(
    "source, toml, needle",
    [
        (
            FW10.replace("local count", "local count = = "),
            None,
            "Lua syntax error: line 9: unexpected symbol",
        ),
        (
            FW10.replace('keys = ["rl:fw10:{client}:{window}"]', 'keys = ["rl:fw10:{window}"]'),
            None,
            "lies outside the client's hash tag",
        ),
        (
            FW10.replace('"limit", "cost"]', '"limit", "colour"]'),
            None,
            "argv[4] 'colour' is not in the vocabulary",
        ),
        ("return {1}\n", None, "no declaration"),
        ("return {1}\n", 'keys = ["k:{client}"]\nargv = []\nreply = { allowed = 2 }\n', None),
    ],
    ids=["syntax", "outside-tag", "argv", "undeclared", "reply-shape"],
)
def test_a_bad_script_gets_one_message_naming_the_file(
    scripts, capsys, tmp_path, source, toml, needle
):
    path = scripts("bad.lua", source, toml)
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n0,a\n1,a\n")
    code = main(
        [
            "replay",
            str(trace),
            "--script",
            f"bad={path}",
            "--algorithm",
            "bad",
            "--limit",
            "2",
            "--window",
            "1",
            "--out",
            str(tmp_path / "out.csv"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert str(path) in err
    assert (needle or "reply element 2 (allowed) is missing") in err


def test_a_script_that_writes_an_undeclared_key_or_raises_keeps_what_was_decided(
    scripts, tmp_path, capsys
):
    sneaky = scripts(
        "sneaky.lua",
        FW10.replace(
            "local reset", "if count == 3 then redis.call('SET', 'elsewhere', 1) end\nlocal reset"
        ),
    )
    # past the guard (loadstring compiles in the global table, where the server's own redis is):
    # its watch on writes still sees it
    escaped = scripts(
        "escaped.lua",
        FW10.replace(
            "local reset",
            "if count == 3 then loadstring('return redis')().call('SET', 'elsewhere', 1) end\nlocal reset",
        ),
    )
    raises = scripts(
        "raises.lua",
        FW10.replace("local reset", "if count == 3 then error('boom') end\nlocal reset"),
    )
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{t},a\n" for t in range(5)))
    for path, needle in (
        (sneaky, 'line 11: the guard stopped SET on key "elsewhere", which is not one of its KEYS'),
        (escaped, "wrote key 'elsewhere'"),
        (raises, "boom"),
    ):
        out = tmp_path / f"{path.stem}.csv"
        code = main(
            [
                "replay",
                str(trace),
                "--script",
                f"s={path}",
                "--algorithm",
                "s",
                "--limit",
                "9",
                "--window",
                "10",
                "--out",
                str(out),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and needle in err and str(path) in err and "Traceback" not in err
        assert len(pd.read_csv(out)) == 2  # the two decisions before the bad call are kept


def test_a_user_script_appears_in_the_charts_with_a_colour_of_its_own(scripts, tmp_path):
    from simulator.charts import PALETTE

    path = scripts("fw10.lua", FW10)
    out = tmp_path / "charts"
    args = ["charts", "--only", "burst", "--script", f"mine={path}", "--out-dir", str(out)]
    assert main(args) == 0
    table = pd.read_csv(out / "boundary_burst.csv")
    assert "mine" in set(table["algorithm"])
    assert (out / "boundary_burst.png").stat().st_size > 0
    cls = register_script(path, "mine")
    others = {PALETTE[n] for n in ALGORITHMS if n != "mine"} | {
        PALETTE[r] for r in ("exact", "local", "split", "shared_queue", "per_room", "variant")
    }
    assert cls.colour not in others


def test_the_worst_case_search_and_the_contracts_take_a_script_on_the_lua_path(scripts):
    from simulator.studies.adversary import SearchConfig, worst_cases
    from simulator.studies.contracts import compare_contracts
    from simulator.studies.families import Family, offered

    register_script(scripts("fw10.lua", FW10), "mine")
    table, _ = worst_cases(("mine",), SearchConfig(limit=5, window_ms=1000, generations=3))
    assert table["searched_on"].tolist() == ["lua (no bulk kernel)"]
    assert table["lua_max"].iloc[0] == table["search_max"].iloc[0] <= 10
    f = Family("f", "poisson", 5, load=1.5, limit=5, window_ms=1000, duration_ms=20_000)
    rows = compare_contracts(offered(f), f.limit, f.window_ms, f.name).set_index("variant")
    assert rows.loc["mine", "decided_on"].startswith("lua, ")
    # a fixed window on the clock grid decides as the built-in one
    same = ["admitted_vs_log_pct", "decided_differently_pct", "max_in_window_ratio"]
    assert rows.loc["mine", same].tolist() == rows.loc["fixed_window", same].tolist()


def test_an_exercise_grades_the_students_script_once_written(tmp_path):
    import shutil

    from simulator.userscripts.exercises import attempt, grade

    folder = tmp_path / "exercises"
    shutil.copytree(ROOT / "notebooks" / "exercises", folder)
    unwritten = attempt("fixed_window", folder)
    assert not unwritten.attempted and grade(unwritten).status == "not attempted"
    skeleton = (folder / "fixed_window.lua").read_text()
    body = """local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], window) end
local reset = window - (now % window)
if count < limit then return {1, count, limit, limit - count, reset, 0} end
return {0, count, limit, 0, reset, reset}
"""  # an off-by-one: refuses the limit-th request
    head = skeleton[: skeleton.index("return redis.error_reply")]
    (folder / "fixed_window.lua").write_text(head + body)
    mine = attempt("fixed_window", folder)
    assert not mine.solution and mine.name == "my_fixed_window"
    verdict = grade(mine).verdict
    assert not verdict.agrees
    assert verdict.mismatch.said.allowed is False and verdict.mismatch.expected.allowed is True
    assert verdict.mismatch.expected.count == verdict.mismatch.limit  # the limit-th request
    for name in ("solution_fixed_window", "my_fixed_window"):
        ALGORITHMS.pop(name, None)


def test_check_takes_a_bucket_parameter_and_counts_every_difference(scripts, capsys):
    bucket = (ROOT / "simulator" / "algorithms" / "lua" / "token_bucket.lua").read_text()
    declared = (
        'keys = ["rl:mytb:{client}"]\nargv = ["now_ms", "window_ms", "limit", "%s", "cost"]\n'
    )
    reply = "reply = { allowed = 1, count = 2, remaining = 4, reset = 5, retry_after = 6 }\n"
    right = scripts("right.lua", bucket, declared % "burst" + reply)
    stuck = scripts("stuck.lua", bucket, declared % "limit" + reply)  # burst fixed at the limit
    assert main(["check", str(right), "--as", "token_bucket", "--param", "burst=3"]) == 0
    assert "agrees on 3,068 decisions over 19 traces" in capsys.readouterr().out
    assert main(["check", str(stuck), "--as", "token_bucket"]) == 0  # burst = limit: the same
    capsys.readouterr()
    assert main(["check", str(stuck), "--as", "token_bucket", "--param", "burst=3"]) == 1
    out = capsys.readouterr().out
    assert "differs in trace 'practice case: 100 at second 59, 100 at 61'" in out
    assert "in all 2,994 of 3,068 decisions differ, in 17 of 19 traces" in out
    assert "'practice case: 100 at second 59, 100 at 61': 200;" in out and "and 13 more" in out
    assert "by first differing field: count 2,507, allowed 285, reset 202" in out
    assert main(["check", str(right), "--as", "token_bucket", "--param", "brust=3"]) == 2
    assert "--param brust: neither" in capsys.readouterr().err


def test_the_docs_count_the_traces_the_check_plays():
    from simulator.userscripts.check import COST_TRACE, battery

    text = " ".join((ROOT / "docs" / "your_script.md").read_text().split())
    assert f"It plays {len(battery())} traces" in text
    assert f"{len(battery()) + 1} with the costly requests" in text
    assert COST_TRACE.name in text


GOOD = 'keys = ["k:{client}"]\nargv = ["now_ms"]\n'


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('bogus = 1\nkeys = []\nargv = ["x"]', "unknown field 'bogus'"),
        ('keys = []\nargv = ["x"]\nreply = 3', "keys must name at least one key"),
        ('keys = ["k:{who}"]\nargv = ["x"]', "keys[1] 'k:{who}': unknown field {who}"),
        ('keys = ["k"]\nargv = ["x"]', "keys[1] 'k' lies outside the client's hash tag"),
        ('keys = ["k:{client}}"]\nargv = ["x"]', "a stray brace"),
        ('keys = ["k:{client}"]\nargv = ["now_ms", "x"]\nreply = 3', "argv[2] 'x' is not in"),
        (GOOD + "reply = 3\nlabel = 4", "reply must be a table"),
        (GOOD + 'reply = { allowed = 1, reset_unit = "h" }\nlabel = 4', "reply.reset_unit must be"),
        (GOOD + "reply = { allowed = 0 }\nlabel = 4", "reply.allowed must be the element's"),
        (GOOD + "reply = { allowed = 1, left = 2 }", "reply.left: unknown"),
        (GOOD + "reply = { count = 2 }\nlabel = 4", "reply.allowed is required"),
        (GOOD + "reply = { allowed = 1 }\nlabel = 4\nserver_time = 1", "label must be a string"),
        (GOOD + "reply = { allowed = 1 }\nserver_time = 1", "server_time must be true or false"),
    ],
)
def test_a_declaration_wrong_in_several_sections_is_refused_for_the_first(tmp_path, toml, needle):
    from simulator.userscripts.declaration import DeclarationError, read_declaration

    script, declaration = tmp_path / "s.lua", tmp_path / "s.toml"
    declaration.write_text(toml)
    with pytest.raises(DeclarationError) as refused:
        read_declaration(script, "return 1", declaration)
    assert str(refused.value).startswith(f"{declaration}: ") and needle in str(refused.value)


def test_every_section_of_a_declaration_lands_in_its_field(tmp_path):
    from simulator.userscripts.declaration import Declaration, read_declaration

    source = """--[[ ratelimit
    keys = ["a:{client}:{window}", "b:{client}:{window-1}"]
    argv = ["now_ms", "limit", "cost"]
    reply = { allowed = 2, retry_after = 3, retry_after_unit = "s", reset = 4 }
    label = "Mine"
    server_time = true
    ]]
    return 1"""
    script = tmp_path / "mine.lua"
    assert read_declaration(script, source) == Declaration(
        script,
        ("a:{client}:{window}", "b:{client}:{window-1}"),
        ("now_ms", "limit", "cost"),
        {"allowed": 2, "retry_after": 3, "reset": 4},
        "ms",
        "s",
        "Mine",
        True,
    )
