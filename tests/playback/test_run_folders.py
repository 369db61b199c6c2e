"""The folders a replay or a comparison keeps its files in under ``$TMPDIR`` name their owner
(pid and start time), so that one left by a run killed outright is removed by a later run, and
nothing else is: not a live run's, not a folder whose pid was used again, not one without its
owner file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.playback import spool

ROOT = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def folder(root: Path, name: str, owner: str | None) -> Path:
    path = root / name
    path.mkdir()
    (path / "shard-00000.pickle").write_bytes(b"x" * 100)
    if owner is not None:
        (path / spool.OWNER_FILE).write_text(owner)
    return path


def test_only_folders_of_dead_owners_named_and_marked_so_are_removed(tmp_path):
    gone = dead_pid()
    me, started = os.getpid(), spool._started(os.getpid())
    dead = [
        folder(tmp_path, f"compare-{gone}-a", f"{gone} 12.0\n"),
        folder(tmp_path, f"replay-{gone}-b", f"{gone} 12.0\n"),
        folder(tmp_path, f"compare-{me}-c", f"{me} {started - 1000}\n"),  # pid used again
    ]
    kept = [
        folder(tmp_path, f"compare-{me}-d", f"{me} {started!r}\n"),  # alive
        folder(tmp_path, f"compare-{gone}-e", None),  # no owner file
        folder(tmp_path, f"compare-{gone}-f", f"{gone + 1} 12.0\n"),  # names another pid
        folder(tmp_path, f"other-{gone}-g", f"{gone} 12.0\n"),  # not of this naming
        folder(tmp_path, f"compare-x{gone}-h", f"{gone} 12.0\n"),
    ]
    assert sorted(spool.remove_dead_folders(tmp_path)) == sorted(dead)
    assert all(p.is_dir() for p in kept) and not any(p.exists() for p in dead)


def test_a_new_folder_records_its_owner_and_goes_with_it(tmp_path):
    with spool.work_folder("compare-", tmp_path) as made:
        pid, start = (tmp_path / made / spool.OWNER_FILE).read_text().split()
        assert int(pid) == os.getpid() and float(start) == spool._started(os.getpid())
        assert Path(made).name.startswith(f"compare-{os.getpid()}-")
    assert not Path(made).exists()


@pytest.mark.slow
def test_a_compare_killed_outright_leaves_a_folder_the_next_run_removes(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i},c{i % 50}\n" for i in range(200_000)))
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    args = [sys.executable, "-m", "simulator", "compare", str(trace), "--baseline",
            "fixed_window:limit=3,window=1", "--candidate", "gcra:limit=3,window=1",
            "--backend", "fakeredis"]  # fmt: skip
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while not list(tmp_path.glob("compare-*/owner")) and child.poll() is None:
            time.sleep(0.01)  # polls the folder; no order is assumed
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=120)
    left = list(tmp_path.glob(f"compare-{child.pid}-*"))
    if not left:  # it finished before the kill: nothing to see here, but nothing left either
        return
    small = tmp_path / "s.csv"
    small.write_text("t_ms,client\n0,a\n")
    done = subprocess.run([*args[:4], str(small), *args[5:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not any(p.exists() for p in left)


@pytest.mark.slow
def test_ctrl_c_in_replay_shards_keeps_the_rows_of_the_finished_shards(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i},c{i % 97}\n" for i in range(160_000)))
    out = tmp_path / "out.csv"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    args = [sys.executable, "-m", "simulator", "replay", str(trace), "--algorithm",
            "fixed_window", "--limit", "3", "--window", "1", "--shards", "8", "--out", str(out)]  # fmt: skip
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:  # the third shard's output begun: two are finished (the shards run one after another)
        while len(list(tmp_path.glob("replay-*/*.out"))) < 3 and child.poll() is None:
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if child.returncode == 0:  # it finished before the signal: nothing to keep
        return
    assert child.returncode == 130, err
    assert "Traceback" not in err and " of 8 shards were finished before the stop" in err, err
    kept = int(err.split(" of 8 shards")[0].split()[-1])
    rows = out.read_text().splitlines()[1:]
    assert kept >= 2 and len(rows) >= kept * 160_000 // 97 // 2  # whole shards' rows
    assert not list(tmp_path.glob("replay-*"))
