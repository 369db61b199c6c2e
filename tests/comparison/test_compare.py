"""``compare``: candidates replayed over a trace with the real Lua, scored against the baseline.

The scorecard's counts are checked against an independent count made here with the algorithms'
pure-Python references (request by request in time order, ties in file order); the sharded run
against the serial one; bad SPECs against one message and exit status 2.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from conftest import run_main as run

from simulator.algorithms import REFERENCES
from simulator.checks import ConfigError
from simulator.comparison import SCORE_COLUMNS, compare, parse_spec
from simulator.comparison.scorecard import time_notes
from simulator.comparison.split import read_shard, split_trace
from simulator.playback.traces import read_trace
from simulator.records import CLIENT_DTYPE

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"
BASELINE = "sliding_log:limit=10,window=10"
CANDIDATES = ["fixed_window:limit=10,window=10", "token_bucket:limit=10,window=10"]
#: The fake server, named where a run gets as far as opening its backend: on the default one it
#: would start a valkey-server (tests/backends/test_backend_choice.py runs the default's).
FAKE = ("--backend", "fakeredis")


def reference_decisions(trace: pd.DataFrame, spec: str) -> np.ndarray:
    """Each request's decision by the algorithm's pure reference, in the trace's row order."""
    c = parse_spec(spec)
    ref = REFERENCES[c.algorithm](c.limit, c.window_ms, **c.params)
    order = np.argsort(trace["t_ms"].to_numpy(), kind="stable")
    allowed = np.zeros(len(trace), dtype=bool)
    clients, times = trace["client"].tolist(), trace["t_ms"].tolist()
    for i in order.tolist():
        allowed[i] = ref.decide(clients[i], times[i]).allowed
    return allowed


def small_trace(n: int = 1500) -> pd.DataFrame:
    """Bursty clients on a millisecond clock: flips each way, ties within a millisecond."""
    rng = np.random.default_rng(7)
    clients = rng.choice([f"c{i}" for i in range(12)] + ["a,b", 'q"x', "b\udcff"], size=n)
    t_ms = np.sort(rng.integers(0, 20_000, size=n))
    return pd.DataFrame({"t_ms": t_ms, "client": pd.array(clients.tolist(), dtype=CLIENT_DTYPE)})


@pytest.mark.slow
def test_sample_log_counts_agree_with_an_independent_count():
    scorecard, clients = compare(SAMPLE, BASELINE, CANDIDATES, fmt="clf")
    trace = read_trace(SAMPLE, "clf")
    base = reference_decisions(trace, BASELINE)
    exact = base  # the baseline is the exact log of the same limit and window
    rows = scorecard.set_index("candidate")
    assert rows.loc[BASELINE, "refused"] == int((~base).sum())
    for spec in CANDIDATES:
        mine = reference_decisions(trace, spec)
        row = rows.loc[spec]
        assert row["requests"] == len(trace)
        assert row["admitted"] == int(mine.sum())
        assert row["refused"] == int((~mine).sum())
        assert row["flips_to_refused"] == int((base & ~mine).sum())
        assert row["flips_to_admitted"] == int((~base & mine).sum())
        assert row["wrongly_admitted"] == int((mine & ~exact).sum())
        assert row["wrongly_refused"] == int((~mine & exact).sum())
        flipped = trace["client"][base != mine]
        assert row["clients_affected"] == flipped.nunique()
        mine_clients = clients[clients["candidate"] == spec].set_index("client")
        assert dict(mine_clients["flips"]) == dict(Counter(flipped))
    # the figures the README quotes for this log (refused per algorithm)
    assert list(scorecard["refused"]) == [153, 108, 65]
    assert scorecard.attrs["trace"]["resolution_ms"] == 1000
    assert rows.loc[CANDIDATES[1], "depends_on"] == "trace resolution (1 s)"
    assert rows.loc[BASELINE, "depends_on"] == "trace resolution (1 s)"  # (t - W, t] moves
    assert rows.loc[CANDIDATES[0], "depends_on"] == ""  # seams on whole seconds: unmoved
    unaligned = parse_spec("fixed_window:limit=10,window=2.5")
    assert time_notes(unaligned, 1000) == "trace resolution (1 s)"
    assert time_notes(unaligned, 1) == ""


def test_candidates_of_another_limit_and_window_are_held_against_their_own_exact_log():
    trace = small_trace()
    other = "sliding_counter:limit=7,window=3"
    scorecard, _ = compare(trace, "fixed_window:limit=5,window=2", [other])
    base = reference_decisions(trace, "fixed_window:limit=5,window=2")
    mine = reference_decisions(trace, other)
    exact = reference_decisions(trace, "sliding_log:limit=7,window=3")
    row = scorecard.set_index("candidate").loc[other]
    assert (row["flips_to_refused"], row["flips_to_admitted"]) == (
        int((base & ~mine).sum()),
        int((~base & mine).sum()),
    )
    assert (row["wrongly_admitted"], row["wrongly_refused"]) == (
        int((mine & ~exact).sum()),
        int((~mine & exact).sum()),
    )
    assert row["flips_to_refused"] and row["flips_to_admitted"]
    assert row["wrongly_admitted"] and row["wrongly_refused"]


def test_sharded_run_equals_the_serial_run():
    trace = small_trace()
    candidates = ["sliding_counter:limit=5,window=2", "gcra:limit=5,window=2,burst=2"]
    serial = compare(trace, "fixed_window:limit=5,window=2", candidates)
    sharded = compare(trace, "fixed_window:limit=5,window=2", candidates, shards=4)
    pd.testing.assert_frame_equal(serial[0], sharded[0])
    pd.testing.assert_frame_equal(serial[1], sharded[1])
    pd.testing.assert_frame_equal(serial[0].attrs["timeline"], sharded[0].attrs["timeline"])
    assert len(serial[1]) > 0


def test_shards_hold_each_client_whole_and_in_time_order(tmp_path):
    trace = small_trace(400)
    path = tmp_path / "t.csv"
    trace.to_csv(path, index=False, encoding="utf-8", errors="surrogateescape")
    split = split_trace(path, "csv", tmp_path, shards=3)
    seen: dict[str, int] = {}
    positions = []
    for k, f in enumerate(split.shard_files):
        times = []
        for part in read_shard(f):
            for c in part.clients:
                assert seen.setdefault(c, k) == k
            times += part.t_ms
            positions += list(part.positions)
        assert times == sorted(times)
    assert sorted(positions) == list(range(len(trace)))
    assert split.resolution_ms == 1 and split.clients == trace["client"].nunique()


def test_retry_after_percentiles_are_exact():
    trace = small_trace()
    scorecard, _ = compare(trace, "sliding_log:limit=5,window=2", ["fixed_window:limit=5,window=2"])
    # the same percentiles from the references' Retry-After values (nearest rank)
    c = parse_spec("fixed_window:limit=5,window=2")
    ref = REFERENCES["fixed_window"](c.limit, c.window_ms)
    values = sorted(
        d.retry_after_ms
        for d in (ref.decide(cl, t) for cl, t in zip(trace["client"], trace["t_ms"], strict=True))
        if not d.allowed
    )
    rank99 = -(-99 * len(values) // 100)
    row = scorecard.iloc[1]
    assert row["retry_after_p99_s"] == values[rank99 - 1] / 1000
    assert row["retry_after_p50_s"] == values[-(-len(values) // 2) - 1] / 1000


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("nope:limit=1,window=1", "unknown algorithm 'nope'"),
        ("sliding_log:limit=1,window=1,burst=3", "unknown parameter 'burst' for sliding_log"),
        ("token_bucket:limit=1,window=1,bust=3", "unknown parameter 'bust'"),
        ("sliding_log:limit=0,window=1", "limit must be a whole number"),
        ("sliding_log:limit=1.5,window=1", "limit must be a whole number"),
        ("sliding_log:limit=3,window=0", "window must be a number of seconds"),
        ("sliding_log:limit=3,window=abc", "window must be a number of seconds"),
        ("sliding_log:limit=3,window", "is not key=value"),
        ("sliding_log:limit=3;window=1", "got '3;window=1'"),
        ("sliding_log:limit=3,limit=4,window=1", "'limit' given twice"),
        ("sliding_log:window=4", "needs limit=N"),
    ],
)
def test_bad_spec_is_one_message(spec, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        parse_spec(spec)


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["--baseline", "nope:limit=1,window=1", "--candidate", "sliding_log"],
            "unknown algorithm",
        ),
        (["--baseline", BASELINE, "--candidate", "gcra:burst=x"], "burst must be a number"),
        (
            ["--baseline", BASELINE, "--candidate", "sliding_log:burst=2"],
            "unknown parameter 'burst'",
        ),
        (["--baseline", BASELINE], "at least one --candidate"),
        (["--baseline", BASELINE, "--candidate", BASELINE], "given twice"),
    ],
)
def test_cli_bad_spec_exits_2_with_one_message(args, needle):
    done = run("compare", str(SAMPLE), "--format", "clf", *args)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_bad_candidates_file_names_the_table(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        '[[candidate]]\nalgorithm = "gcra"\nlimit = 5\n\n[[candidate]]\nalgorithm = "x"\n'
    )
    done = run(
        "compare", str(SAMPLE), "--format", "clf", "--baseline", BASELINE, "--candidates", str(path)
    )
    assert done.returncode == 2
    assert "candidate[1]: unknown algorithm 'x'" in done.stderr


def test_cli_truncated_trace_is_refused_with_its_line(tmp_path):
    lines = SAMPLE.read_text().splitlines()[:20]
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines[:19]) + "\n" + lines[19][:30])
    done = run(
        "compare",
        str(path),
        "--format",
        "clf",
        "--baseline",
        BASELINE,
        "--candidate",
        CANDIDATES[0],
        *FAKE,
    )
    assert done.returncode == 2
    assert f"{path}:20:" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_scorecard_csv_and_table(tmp_path):
    trace = small_trace(300)
    path = tmp_path / "t.csv"
    trace.to_csv(path, index=False, encoding="utf-8", errors="surrogateescape")
    out = tmp_path / "score.csv"
    toml = tmp_path / "c.toml"
    toml.write_text(
        '[[candidate]]\nname = "gentle bucket"\nalgorithm = "token_bucket"\nburst = 2\n'
    )
    done = run(
        "compare",
        str(path),
        "--baseline",
        "sliding_log:limit=4,window=1",
        "--candidate",
        "fixed_window",
        "--candidates",
        str(toml),
        "--out",
        str(out),
        "--shards",
        "2",
        "--charts",
        str(tmp_path),
        *FAKE,
    )
    assert done.returncode == 0, done.stderr
    score = pd.read_csv(out, keep_default_na=False)
    assert list(score.columns) == list(SCORE_COLUMNS)
    assert list(score["candidate"]) == [
        "sliding_log:limit=4,window=1",
        "fixed_window",
        "gentle bucket",
    ]
    assert list(score["limit"]) == [4, 4, 4]
    assert "time resolution 1 ms" in done.stdout and "most affected by fixed_window" in done.stdout
    assert sorted(p.name for p in tmp_path.glob("compare_*.png")) == [
        "compare_client_flips.png",
        "compare_flips_over_time.png",
        "compare_scorecard.png",
    ]


def test_synthetic_log_is_seeded_exact_in_length_in_order_and_zipf(tmp_path):
    from simulator.comparison.synthetic import SyntheticLog, write_log

    shape = SyntheticLog(3000, clients=500, rate_per_s=20, bursts_per_hour=60, burst=50, seed=4)
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    assert write_log(a, shape) == 3000
    write_log(b, shape)
    assert a.read_bytes() == b.read_bytes()
    trace = read_trace(a, "clf")
    assert len(trace) == 3000
    assert trace["t_ms"].is_monotonic_increasing
    counts = trace["client"].value_counts()
    assert counts.index[0] == "10.0.0.0"  # rank 1 sends the most
    assert counts.iloc[0] > 5 * counts.median()
    csv = tmp_path / "c.csv"
    write_log(csv, shape, fmt="csv")
    assert read_trace(csv)["client"].tolist() == trace["client"].tolist()


def test_bad_synthetic_shape_is_one_message(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "simulator.comparison.synthetic", str(tmp_path / "x"), "--lines", "10", "--amplitude", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "amplitude" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_candidates_times_shards_on_a_dask_cluster_equal_the_serial_run():
    from distributed import Client, LocalCluster

    trace = small_trace(600)
    candidates = ["sliding_counter:limit=5,window=2", "token_bucket:limit=5,window=2"]
    serial = compare(trace, "sliding_log:limit=5,window=2", candidates)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        on_dask = compare(
            trace, "sliding_log:limit=5,window=2", candidates, shards=3, scheduler=client
        )
    pd.testing.assert_frame_equal(serial[0], on_dask[0])
    pd.testing.assert_frame_equal(serial[1], on_dask[1])


@pytest.mark.server
def test_on_a_real_valkey_same_scorecard_with_server_cpu_and_only_its_own_keys():
    """A server the program did not start: its keys are checked absent, the scorecard is the
    fake server's (windows stretched so that no key can expire while the test runs), the
    server's CPU per decision is reported, and the run deletes the keys it made, no others."""
    from simulator.backends import RedisBackend
    from simulator.backends.embedded import EmbeddedValkey

    trace = small_trace(300)
    trace["t_ms"] = trace["t_ms"] * 1000  # a window of 2000 s on the server's clock
    base, others = "sliding_log:limit=5,window=2000", ["sliding_counter:limit=5,window=2000"]
    on_fake = compare(trace, base, others)
    with EmbeddedValkey() as server:
        backend = RedisBackend(server.client(), "valkey")
        try:
            backend.client.set("somebody:else", "1")
            on_server = compare(trace, base, others, backend=backend)
            assert backend.client.keys("*") == [b"somebody:else"]
            backend.client.set("rl:sl:{c1}", "left over")
            with pytest.raises(ConfigError, match="already exist"):
                compare(trace, base, others, backend=backend)
            assert backend.client.get("rl:sl:{c1}") == b"left over"
        finally:
            backend.close()
    cpu = on_server[0].pop("server_cpu_us_per_decision")
    assert (cpu > 0).all()
    assert on_fake[0].pop("server_cpu_us_per_decision").isna().all()
    weighed = on_server[0].pop("bytes_per_client_on_server")
    assert (weighed > 40).all()  # keys still alive at the end, weighed with MEMORY USAGE
    assert on_fake[0].pop("bytes_per_client_on_server").isna().all()
    pd.testing.assert_frame_equal(on_fake[0], on_server[0])
    pd.testing.assert_frame_equal(on_fake[1], on_server[1])


@pytest.mark.server
def test_on_a_real_valkey_keys_go_a_slice_at_a_time_and_only_the_runs_own(monkeypatch):
    """A shard longer than one slice of keys: a key left over that only a later slice uses
    refuses the run (naming the slice) and is kept; after a run, every key of every window is
    gone and a key that is not the run's is untouched; the scorecard is the one-slice run's."""
    from simulator.backends import RedisBackend
    from simulator.backends.embedded import EmbeddedValkey
    from simulator.comparison import server as on_server_module

    trace = small_trace(600)
    trace["t_ms"] = trace["t_ms"] * 1000  # a window of 2000 s on the server's clock: 10 windows
    base, others = "fixed_window:limit=5,window=2000", ["fixed_window:limit=8,window=2000"]
    late = f"rl:fw:{{c1}}:{int(trace['t_ms'].iloc[-1]) // 2_000_000}"  # the last window's key
    with EmbeddedValkey() as server:
        backend = RedisBackend(server.client(), "valkey")
        try:
            whole = compare(trace, base, others, backend=backend)
            assert backend.client.keys("*") == []
            monkeypatch.setattr(on_server_module, "KEY_GROUP_REQUESTS", 64)
            backend.client.set(late, "left over")
            with pytest.raises(ConfigError, match=r"already exist.*") as refused:
                compare(trace, base, others, backend=backend)
            assert "of shard 1 of 1" in str(refused.value)
            assert "requests 1 to 64 " not in str(refused.value)
            assert backend.client.get(late) == b"left over"
            backend.client.delete(late)
            backend.client.set("somebody:else", "1")
            sliced = compare(trace, base, others, backend=backend)
            assert backend.client.keys("*") == [b"somebody:else"]
        finally:
            backend.close()
    server_only = ["server_cpu_us_per_decision", "bytes_per_client_on_server"]
    pd.testing.assert_frame_equal(
        whole[0].drop(columns=server_only), sliced[0].drop(columns=server_only)
    )
    pd.testing.assert_frame_equal(whole[1], sliced[1])


def test_pick_follows_its_stated_rule():
    from simulator.comparison.choice import pick

    card = pd.DataFrame(
        {
            "candidate": ["base", "loose", "tight", "tighter"],
            "role": ["baseline", "candidate", "candidate", "candidate"],
            "most_in_window_ratio": [2.0, 1.9, 1.2, 1.0],
            "flips_to_refused": [0, 1, 30, 40],
            "clients_affected": [0, 1, 5, 6],
            "bytes_per_active_client": [90.0, 130.0, 180.0, 360.0],
        }
    )
    best, why = pick(card, 1.25)
    assert (
        best["candidate"] == "tight" and "2 of the 4 options do not" in why
    )  # the baseline is one
    best, why = pick(card, 0.5)
    assert best["candidate"] == "tighter" and "comes closest" in why


def test_echomq_says_it_depends_on_the_server_clock():
    trace = small_trace(200)
    card, _ = compare(trace, "fixed_window:limit=5,window=2", ["echomq:limit=5,window=2"])
    assert "server clock" in card.iloc[1]["depends_on"]
    assert card.iloc[0]["depends_on"] == ""  # a trace of whole milliseconds


def test_sigterm_ends_the_run_with_one_line_and_its_temporary_folder(tmp_path):
    import os
    import signal
    import time

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "simulator", "compare", str(SAMPLE), "--format", "clf",
         "--baseline", BASELINE, "--candidate", CANDIDATES[0], *FAKE],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        # the shards are written: the replay is under way
        while not list(tmp_path.glob("compare-*/shard-*.pickle")) and child.poll() is None:
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 143, err
    assert "interrupted (SIGTERM)" in err and "Traceback" not in err
    assert not list(tmp_path.glob("compare-*"))


def test_a_stopped_run_keeps_the_configurations_it_finished(tmp_path, monkeypatch, capsys):
    from simulator.cli import main
    from simulator.comparison import score

    real = score.replay_shard

    def stop_at_the_candidates(task, backend):
        if task.baseline_bits is not None:  # the baseline is done; Ctrl-C now
            raise KeyboardInterrupt
        return real(task, backend)

    trace = small_trace(200)
    full, _ = compare(trace, "sliding_log:limit=4,window=1", ["fixed_window"])
    monkeypatch.setattr(score, "replay_shard", stop_at_the_candidates)
    path, out = tmp_path / "t.csv", tmp_path / "score.csv"
    trace.to_csv(path, index=False, encoding="utf-8", errors="surrogateescape")
    code = main(  # the fake server's replay_shard is the one stopped
        ["compare", str(path), "--baseline", "sliding_log:limit=4,window=1", "--candidate",
         "fixed_window", "--out", str(out), *FAKE],
    )  # fmt: skip
    said = capsys.readouterr()
    assert code == 130
    assert "1 of 2 configurations were finished before the stop" in said.err
    assert "interrupted (SIGINT)" in said.err
    kept = pd.read_csv(out)
    assert list(kept["candidate"]) == ["sliding_log:limit=4,window=1"]
    assert kept.loc[0, "refused"] == full.loc[0, "refused"]


@pytest.mark.parametrize("scheduler", [None, "local"])
@pytest.mark.slow
def test_replay_with_shards_writes_the_serial_replays_bytes(tmp_path, scheduler):
    trace = small_trace(700)
    trace["cost"] = np.where(np.arange(len(trace)) % 7 == 0, 2, 1)
    shuffled = trace.sample(frac=1, random_state=3)  # out of time order: sorted on disk
    path = tmp_path / "t.csv"
    shuffled.to_csv(path, index=False, encoding="utf-8", errors="surrogateescape")
    common = ["replay", str(path), "--algorithm", "token_bucket", "--limit", "4", "--window",
              "1.5", "--param", "burst=3", "--headers", "both", *FAKE]  # fmt: skip
    serial = run(*common, "--out", str(tmp_path / "serial.csv"))
    assert serial.returncode == 0, serial.stderr
    extra = [] if scheduler is None else ["--scheduler", scheduler]
    # A process of its own: the shards' workers (a local Dask cluster) start and end with it.
    sharded = run_cli(*common, "--shards", "3", *extra, "--out", str(tmp_path / "sharded.csv"))
    assert sharded.returncode == 0, sharded.stderr
    assert (tmp_path / "serial.csv").read_bytes() == (tmp_path / "sharded.csv").read_bytes()
    assert "(3 shards)" in sharded.stderr


def test_replay_shards_on_a_real_server_is_one_message():
    done = run("replay", str(SAMPLE), "--format", "clf", "--algorithm", "fixed_window", "--limit",
               "5", "--window", "1", "--shards", "2", "--backend", "redis://127.0.0.1:1/0")  # fmt: skip
    assert done.returncode == 2 and "fake server of its own" in done.stderr


def test_forgetting_idle_clients_changes_no_figure(monkeypatch):
    from simulator.comparison import score

    trace = small_trace(900)
    specs = (
        "fixed_window:limit=3,window=0.5",
        ["sliding_log:limit=3,window=0.7", "gcra:limit=3,window=0.5"],
    )
    kept = compare(trace, *specs)
    monkeypatch.setattr(score, "PRUNE_EVERY", 5)
    pruned = compare(trace, *specs)
    pd.testing.assert_frame_equal(kept[0], pruned[0])
    pd.testing.assert_frame_equal(kept[1], pruned[1])
    pd.testing.assert_frame_equal(kept[0].attrs["timeline"], pruned[0].attrs["timeline"])


def test_cli_empty_trace_and_client_ids_written_back_byte_for_byte(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("t_ms,client\n")
    done = run(
        "compare",
        str(empty),
        "--baseline",
        "sliding_log:limit=1,window=1",
        "--candidate",
        "fixed_window",
        *FAKE,
    )
    assert (
        done.returncode == 2
        and "holds no requests" in done.stderr
        and "Traceback" not in done.stderr
    )
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"t_ms,client\n" + b"".join(b"%d,a\xff\n" % t for t in (0, 999, 1000, 1001)))
    out = tmp_path / "clients.csv"
    done = run("compare", str(trace), "--baseline", "sliding_log:limit=2,window=1", "--candidate",
               "fixed_window", "--clients-out", str(out), *FAKE)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert b"\nfixed_window,a\xff,4,1,0,1,1001,1001\n" in out.read_bytes()
    assert "a\\xff: 1 of 4 requests flipped" in done.stdout


def test_percentile_is_the_nearest_rank_exactly():
    from simulator.comparison.scorecard import percentile_ms

    counts = Counter(range(1, 101))  # 1 .. 100, once each
    assert percentile_ms(counts, 0.99) == 99  # rank 99, not 100 (0.99 x 100 in floats)
    assert percentile_ms(counts, 0.5) == 50
    assert percentile_ms({7: 3}, 0.99) == 7
    assert np.isnan(percentile_ms({}, 0.5))


def test_too_many_shards_is_one_message():
    done = run("compare", str(SAMPLE), "--format", "clf", "--baseline", BASELINE, "--candidate",
               CANDIDATES[0], "--shards", "100000")  # fmt: skip
    assert (
        done.returncode == 2 and "compare.shards: must be an integer from 1 to 512" in done.stderr
    )


def test_a_users_script_is_a_candidate_and_one_without_retry_after_says_nothing_of_it(tmp_path):
    lines = SAMPLE.read_text().splitlines(keepends=True)[:300]
    path = tmp_path / "s.log"
    path.write_text("".join(lines))
    card = ROOT / "data" / "card" / "sliding-counter.lua"
    out = tmp_path / "score.csv"
    done = run("compare", str(path), "--format", "clf", "--script", f"card_counter={card}",
               "--baseline", "sliding_log:limit=3,window=10", "--candidate", "card_counter",
               "--shards", "2", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = pd.read_csv(out).set_index("candidate").loc["card_counter"]
    assert row["refused"] > 0 and row["refused_never"] == 0
    assert np.isnan(row["retry_after_p99_s"]) and np.isnan(row["bytes_per_active_client"])
    assert "can never pass" not in done.stdout


def test_listeners_hear_every_request_read_every_task_and_every_row_the_baseline_first():
    from simulator.comparison import Listeners

    trace = small_trace(400)
    read: list[int] = []
    tasks: list[str] = []
    rows: list[dict] = []
    base, others = "sliding_log:limit=5,window=2", ["fixed_window:limit=5,window=2"]
    card, _ = compare(
        trace,
        base,
        others,
        shards=2,
        listeners=Listeners(read.append, lambda p: tasks.append(p.candidate), rows.append),
    )
    assert sum(read) == len(trace)
    assert sorted(Counter(tasks).values()) == [2, 2]  # each configuration, once per shard
    assert [r["candidate"] for r in rows] == card["candidate"].tolist()
    assert rows[0]["role"] == "baseline"
    pd.testing.assert_frame_equal(pd.DataFrame(rows, columns=list(SCORE_COLUMNS)), card)
