"""The streaming replay: bounded pieces all the way, and the same bytes as the in-memory path.

The command line reads a trace in chunks, sorts what is out of order on disk, replays and writes
as it goes. Here the sizes of those pieces are shrunk (chunks of 50 requests, sorted runs of 37,
blocks of 8, three runs merged at a time) so that a small trace goes through every stage many
times over - several levels of merging included - and the output is compared byte for byte with
the decision log of ``replay(read_trace(...))``, the whole trace in memory.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from simulator.algorithms import ALGORITHMS
from simulator.cli import main
from simulator.cli.tally import Distinct, ReplayTally
from simulator.engine.own_keys import leftover_keys_in_groups
from simulator.playback import output, spool, traces
from simulator.playback.output import HEADER
from simulator.playback.run import replay
from simulator.playback.scan import scan_trace
from simulator.playback.spool import Spool, merge_blocks
from simulator.playback.traces import TraceError, iter_trace, read_trace

ODD_IDS = ["a,b", "line\nbreak", '"quoted"', "\udcff", "x\udcfe", "ünï", "", " sp "]


def write_trace(path: Path, n: int, seed: int, in_order: bool) -> None:
    """Bursts of ties, a few odd ids (commas, newlines, quotes, bytes that are not UTF-8)."""
    rng = np.random.default_rng(seed)
    t_ms = np.sort(rng.integers(0, n * 3, n))
    t_ms[rng.random(n) < 0.3] = t_ms[n // 2]  # many ties in one millisecond
    t_ms = np.sort(t_ms)
    if not in_order:
        t_ms = t_ms[np.argsort(t_ms + rng.integers(0, 400, n), kind="stable")]
    names = ODD_IDS + [f"c{i}" for i in range(30)]
    clients = [names[i] for i in rng.integers(0, len(names), n)]
    with path.open("w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["client", "t_ms"])
        writer.writerows(zip(clients, t_ms.tolist(), strict=True))


def in_memory_csv(frame) -> bytes:
    """What the replay CLI wrote when it held the whole trace and log in memory: the bytes of
    ``frame``, the log ``replay`` decided in memory."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    for i, r in enumerate(frame.itertuples(index=False)):
        retry = "" if r.allowed else int(r.retry_after_ms)
        writer.writerow(
            (i + 1, int(r.t_ms), r.client, int(r.allowed), float(r.count), int(r.limit))
            + (int(r.remaining), int(r.reset_ms), retry)
        )
    return text.getvalue().encode("utf-8", "surrogateescape")


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(traces, "CHUNK_REQUESTS", 50)
    monkeypatch.setattr(spool, "RUN_ROWS", 37)
    monkeypatch.setattr(spool, "BLOCK_ROWS", 8)
    monkeypatch.setattr(spool, "FAN_IN", 3)
    monkeypatch.setattr(output, "DECISION_RUN_ROWS", 29)


@pytest.fixture
def no_whole_trace(monkeypatch):
    """The command line must never hold the whole trace: its in-memory readers are off limits."""

    def refuse(*args, **kwargs):
        raise AssertionError("the command line read the whole trace into memory")

    monkeypatch.setattr(traces, "read_trace", refuse)
    monkeypatch.setattr("simulator.playback.run.replay", refuse)


@pytest.mark.parametrize("in_order", [True, False], ids=["in-order", "out-of-order"])
@pytest.mark.parametrize("algorithm", ["fixed_window", "sliding_log", "sliding_counter", "echomq"])
def test_streamed_output_equals_the_in_memory_log_byte_for_byte(
    tmp_path, capsys, small_pieces, algorithm, in_order
):
    trace, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    write_trace(trace, 1500, seed=len(algorithm), in_order=in_order)
    decided = replay(read_trace(trace), algorithm, 3, 250)  # the whole log, held in memory
    expected = in_memory_csv(decided)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(traces, "read_trace", None)  # not used on the way: it streams
        args = ["replay", str(trace), "--algorithm", algorithm, "--limit", "3"]
        assert main([*args, "--window", "0.25", "--out", str(out_csv)]) == 0
    assert out_csv.read_bytes() == expected
    refused = decided[~decided["allowed"]]
    summary = capsys.readouterr().err
    assert (
        f"{algorithm}: {len(decided) - len(refused)} of 1500 admitted, {len(refused)} refused, "
        f"{refused['client'].nunique()} of {decided['client'].nunique()} clients refused"
    ) in summary


def test_the_command_line_never_reads_the_whole_trace(tmp_path, no_whole_trace, small_pieces):
    trace, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    write_trace(trace, 300, seed=1, in_order=False)
    args = ["replay", str(trace), "--algorithm", "sliding_log", "--limit", "2", "--window", "1"]
    assert main([*args, "--backend", "fakeredis", "--out", str(out_csv)]) == 0
    assert out_csv.read_bytes().count(b"\n") > 300  # header, rows (a few ids hold newlines)


@pytest.mark.parametrize("fmt", ["csv", "clf"])
def test_readers_hand_out_bounded_chunks(tmp_path, fmt):
    path = tmp_path / "t"
    if fmt == "csv":
        write_trace(path, 1000, seed=2, in_order=False)
    else:
        line = '10.0.0.{} - - [10/Oct/2000:13:55:{:02d} -0700] "GET / HTTP/1.0" 200 1\n'
        path.write_text("".join(line.format(i % 7, i % 60) for i in range(1000)))
    chunks = list(iter_trace(path, fmt, chunk=64))
    assert max(len(c.t_ms) for c in chunks) == 64 and sum(len(c.t_ms) for c in chunks) == 1000
    assert [p for c in chunks for p in c.positions] == list(range(1000))
    whole = read_trace(path, fmt)
    assert [t for c in chunks for t in c.t_ms] == whole["t_ms"].tolist()
    assert [x for c in chunks for x in c.clients] == whole["client"].tolist()


@pytest.mark.parametrize("in_order", [True, False], ids=["in-order", "out-of-order"])
def test_time_order_from_bounded_pieces(tmp_path, small_pieces, in_order):
    path = tmp_path / "t.csv"
    write_trace(path, 2000, seed=3, in_order=in_order)
    scan = scan_trace(path, "csv", tmp_path)
    frame = read_trace(path)
    t_ms = frame["t_ms"].to_numpy()
    assert scan.requests == 2000 and scan.in_order == in_order
    assert (scan.t_min_ms, scan.t_max_ms) == (t_ms.min(), t_ms.max())
    chunks = list(scan.in_time_order())
    bound = 50 if in_order else 3 * 8  # a chunk of the file, or a block of each merged run
    assert max(len(c.t_ms) for c in chunks) <= bound
    order = np.argsort(t_ms, kind="stable")  # ties in file order
    assert [p for c in chunks for p in c.positions] == order.tolist()
    assert [x for c in chunks for x in c.clients] == frame["client"].to_numpy()[order].tolist()
    if not in_order:
        assert len(list(tmp_path.glob("run-*"))) <= 3  # merged down to at most FAN_IN runs


def test_a_trace_that_changes_between_the_two_reads_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, 100, seed=4, in_order=True)
    scan = scan_trace(path)
    with path.open("a") as fh:
        fh.write("0,late\n")
    with pytest.raises(TraceError, match="changed since it was first read"):
        next(scan.in_time_order())


def test_spool_merges_many_runs_in_bounded_blocks(tmp_path):
    rng = np.random.default_rng(5)
    major = rng.integers(0, 50, 5000)  # many equal majors: the minor key breaks the ties
    minor = rng.permutation(5000)
    with Spool(tmp_path, run_rows=100, block_rows=16, fan_in=4) as s:
        for lo in range(0, 5000, 333):
            hi = lo + 333
            s.add(major[lo:hi].tolist(), minor[lo:hi].tolist(), [f"item {m}" for m in minor[lo:hi]])
        blocks = list(s.merged())
    assert max(len(b) for b in blocks) <= 4 * 16
    order = np.lexsort((minor, major))
    assert np.concatenate([b.major for b in blocks]).tolist() == major[order].tolist()
    assert [x for b in blocks for x in b.items] == [f"item {m}" for m in minor[order]]
    assert list(tmp_path.iterdir()) == []  # the runs are gone once closed


def test_merge_of_nothing_and_of_one_stream():
    assert list(merge_blocks([])) == []
    one = spool.Block(np.array([1, 2]), np.array([0, 0]), ["a", "b"])
    assert list(merge_blocks([[one], []])) == [one]


def test_distinct_is_exact_up_to_its_bound_then_close():
    few = Distinct(exact_up_to=1000)
    few.add([f"c{i % 700}" for i in range(5000)])
    assert few.exact and few.count() == 700 and str(few) == "700"
    many = Distinct(exact_up_to=1000)
    for lo in range(0, 200_000, 10_000):
        many.add([f"client-{i}" for i in range(lo, lo + 10_000)] * 2)
    assert not many.exact
    # the standard error is 0.8%: 5% is six of them
    assert abs(many.count() - 200_000) < 10_000
    assert str(many).startswith("about ")


def test_tally_counts_the_rows_it_is_given():
    from simulator.records import Decision

    yes, no = Decision(True, 1.0, 1, 0, 5, 0), Decision(False, 2.0, 1, 0, 5, 5)
    tally = ReplayTally()
    tally([(0, "a", 0, yes), (1, "b", 0, no)])
    tally([(2, "a", 1, no), (3, "c", 1, yes)])
    assert (tally.decided, tally.admitted, tally.refused) == (4, 2, 2)
    assert (
        tally.summary("x") == "x: 2 of 4 admitted, 2 refused, 2 of 3 clients refused at least once"
    )


class CountingServer:
    """Test-only backend: a server the program did not start, holding the keys in ``held``."""

    virtual_time, owned = False, None

    def __init__(self, held: set[str]) -> None:
        self.held, self.looked_up = held, 0

    def existing(self, keys):
        self.looked_up += 1
        hits = [k for k in keys if k in self.held]
        return len(hits), hits[:3]


def test_leftover_keys_are_looked_up_a_group_at_a_time():
    made: list[int] = []

    def groups():
        for g in range(10):
            made.append(g)
            yield f"requests {g * 100 + 1} to {g * 100 + 100}", [f"k{g}-{i}" for i in range(50)]

    server = CountingServer({"k3-7", "k3-9", "k8-1"})
    problem = leftover_keys_in_groups(server, "redis://x", groups)
    assert problem is not None
    assert "2 of the 50 keys used by requests 301 to 400 already exist (e.g. k3-7, k3-9)" in problem
    assert made == [0, 1, 2, 3]  # stopped at the first group that holds one
    assert leftover_keys_in_groups(CountingServer(set()), "redis://x", groups) is None


@pytest.mark.slow
def test_the_benchmark_section_reports_both_paths_with_the_same_output():
    from simulator.bench.replay import bench_replay_stream

    said: list[str] = []
    rows = bench_replay_stream(decisions=2, out=said.append)  # 1000 rows per backend
    assert len(rows) == 8 and all(r["peak_rss_mb"] > 0 for r in rows)  # type: ignore[operator]
    assert all(r["same_output"] for r in rows if r["path"] == "streaming")
    assert sum("x, speed " in line for line in said) == 4  # a ratio per backend and order


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_new_replay_removes_the_folders_of_dead_replays_and_nothing_else(tmp_path, monkeypatch):
    import os
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pid = _dead_pid()
    dead = tmp_path / f"replay-{pid}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "run-1.pickle").write_bytes(b"x" * 1000)
    (dead / spool.OWNER_FILE).write_text(f"{pid} 1.0\n")  # its owner, as a run writes it
    live = tmp_path / f"replay-{os.getpid()}-def"
    live.mkdir()
    others = [tmp_path / "replay-notapid", tmp_path / "replay-12x-1", tmp_path / "unrelated-1-2"]
    for path in others:
        path.mkdir()
    as_file = tmp_path / f"replay-{_dead_pid()}-file"
    as_file.write_text("a file, not a run folder")
    trace = tmp_path / "t.csv"
    write_trace(trace, 50, seed=1, in_order=False)  # out of order: the run uses its folder
    assert (
        main(
            [
                "replay",
                str(trace),
                "--algorithm",
                "fixed_window",
                "--limit",
                "3",
                "--window",
                "1",
                "--backend",
                "fakeredis",
                "--out",
                str(tmp_path / "out.csv"),
            ]
        )
        == 0
    )
    assert not dead.exists()
    assert live.is_dir() and as_file.is_file() and all(p.is_dir() for p in others)
    assert not [p for p in tmp_path.glob(f"replay-{os.getpid()}-*") if p != live]  # its own: gone


def test_dead_folders_of_another_user_stay(tmp_path, monkeypatch):
    import os

    dead = tmp_path / f"replay-{_dead_pid()}-abc"
    dead.mkdir()
    monkeypatch.setattr(os, "getuid", lambda: os.stat(dead).st_uid + 1)
    assert spool.remove_dead_folders(tmp_path) == [] and dead.is_dir()


@pytest.mark.parametrize("sweep", [True, False], ids=["swept", "not-swept"])
def test_the_fake_servers_expired_keys_do_not_pile_up_over_a_long_replay(monkeypatch, sweep):
    from simulator.backends import FakeRedisBackend
    from simulator.playback import run as playback

    # 100 clients, one request each per 1 s window, over 60 windows: 6,000 window keys made,
    # at most 200 of them alive at a time (this window's and, until it expires, the last one's)
    clients, windows, every = 100, 60, 500
    t_ms = [w * 1000 + i for w in range(windows) for i in range(clients)]
    names = [f"c{i}" for _ in range(windows) for i in range(clients)]
    requests = traces.Requests(range(len(t_ms)), t_ms, names)
    monkeypatch.setattr(playback, "SWEEP_DECISIONS", every if sweep else 10**9, raising=False)
    backend = FakeRedisBackend()
    done = playback.replay_requests([requests], "fixed_window", 5, 1000, backend)
    assert done.decided == clients * windows
    held = len(backend.server.dbs[0]._dict)  # what the fake server holds, expired or not
    if sweep:
        assert held <= 2 * clients + every  # and what the decisions since the last sweep made
    else:  # the case the sweep is for: without it, every window's key stays
        assert held == clients * windows


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_sweeping_expired_keys_changes_no_decision(monkeypatch, tmp_path, algorithm):
    from simulator.playback import run as playback

    path = tmp_path / "t.csv"
    write_trace(path, 600, seed=3, in_order=True)
    trace = read_trace(path)
    frames = []
    for every in (7, 10**9):  # swept all along, and never
        monkeypatch.setattr(playback, "SWEEP_DECISIONS", every)
        frames.append(replay(trace, algorithm, 3, 40))
    assert frames[0].equals(frames[1])


def test_a_streamed_replay_that_loses_its_server_names_the_total_it_was_given():
    from simulator.backends import BackendError, FakeRedisBackend
    from simulator.playback.run import Streaming, replay_requests

    class GoesAway(FakeRedisBackend):
        """A fake server that answers the first batch and is gone before the second."""

        def stream(self, batches, depth=2):
            replies = super().stream(batches, depth)
            yield next(replies)
            raise BackendError("the server went away")

    requests = traces.Requests(range(10), list(range(10)), ["a"] * 10)
    for streaming, said in [
        (Streaming(), "after 1 decisions"),
        (Streaming(total=10), "after 1 of 10 decisions"),
    ]:
        with pytest.raises(BackendError, match=said):
            replay_requests([requests], "fixed_window", 5, 1000, GoesAway(), streaming=streaming)
