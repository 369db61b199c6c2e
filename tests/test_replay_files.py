"""The files around a replay: what is read from a trace and what is written to ``--out``.

Each case here once went wrong without a word: client ids with bytes that are not UTF-8 merged
into one, a trace overwritten by its own replay, times past 2^53 rounded, a byte-order mark read
as part of a client id. The command line is driven in a subprocess, as a user would, and the
output compared byte for byte where bytes are the point.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FW = ("--algorithm", "fixed_window", "--limit", "10", "--window", "1")


def run(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "simulator", *map(str, args)],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )


def fields(out: bytes, column: str) -> list[bytes]:
    """One column of a replay output, as the bytes in the file (no field here holds a comma)."""
    header, *rows = out.splitlines()
    i = header.split(b",").index(column.encode())
    return [row.split(b",")[i] for row in rows]


CLF_LINE = b'%s - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326\n'
# Three ids that decode to the same text when undecodable bytes become U+FFFD.
LOOKALIKES = [b"a\xff", b"a\xfe", b"a\xef\xbf\xbd"]


@pytest.mark.parametrize("fmt", ["csv", "clf"])
@pytest.mark.parametrize("to_stdout", [False, True], ids=["out-file", "stdout"])
def test_ids_that_are_not_utf8_stay_apart_and_come_back_byte_for_byte(tmp_path, fmt, to_stdout):
    trace = tmp_path / "trace"
    if fmt == "csv":
        trace.write_bytes(
            b"t_ms,client\n" + b"".join(b"%d,%s\n" % (i, c) for i, c in enumerate(LOOKALIKES))
        )
    else:
        trace.write_bytes(b"".join(CLF_LINE % c for c in LOOKALIKES))
    out_csv = tmp_path / "out.csv"
    args = ["replay", trace, "--format", fmt, "--algorithm", "fixed_window"]
    args += ["--limit", "1", "--window", "1"]
    done = run(*args) if to_stdout else run(*args, "--out", out_csv)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout if to_stdout else out_csv.read_bytes()
    assert fields(out, "client") == LOOKALIKES
    assert fields(out, "allowed") == [b"1", b"1", b"1"]  # three clients, three counters
    assert b"3 of 3 admitted" in done.stderr


def test_hash_tags_are_the_ids_bytes_and_never_collide():
    from simulator.keys import encode_client

    assert encode_client("a\udcff") == "a%FF"  # the byte read from the file, not U+DCFF's
    assert encode_client("a\ufffd") == "a%EF%BF%BD"
    # A Python string can spell the bytes of "é" with two escapes; it is another id.
    assert "é".encode() == "\udcc3\udca9".encode("utf-8", "surrogateescape")
    tags = {encode_client(c) for c in ["é", "\udcc3\udca9", "\udcc3", "", "%", "%25", "%%"]}
    assert len(tags) == 7
    assert all("{" not in t and "}" not in t and t for t in tags)


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "other spelling"])
def test_out_that_is_the_trace_is_refused_and_the_trace_kept(tmp_path, how):
    trace = tmp_path / "trace.csv"
    content = b"t_ms,client\n0,a\n1,b\n"
    trace.write_bytes(content)
    out = {
        "same path": lambda: trace,
        "symlink": lambda: (tmp_path / "link.csv").symlink_to(trace) or tmp_path / "link.csv",
        "hard link": lambda: (tmp_path / "hard.csv").hardlink_to(trace) or tmp_path / "hard.csv",
        "other spelling": lambda: tmp_path / "." / ".." / tmp_path.name / "trace.csv",
    }[how]()
    done = run("replay", trace, *FW, "--out", out)
    assert done.returncode == 2
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and "is the trace itself" in errors[0], errors
    assert trace.read_bytes() == content
