"""The files around a replay: what is read from a trace and what is written to ``--out``.

Each case here once went wrong without a word: client ids with bytes that are not UTF-8 merged
into one, a trace overwritten by its own replay, times past 2^53 rounded, a byte-order mark read
as part of a client id. The command line is driven as a user would (its ``main`` in this
process, output taken at the file descriptors; in a subprocess where the process itself is the
point, a file size limit), and the output compared byte for byte where bytes are the point.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_main

ROOT = Path(__file__).resolve().parents[2]
# The fake server, named: these are the trace reader's tests, many tiny runs (on the default
# backend each would start a valkey-server; the choice's own tests are tests/backends/).
FAKE = ("--backend", "fakeredis")
FW = ("--algorithm", "fixed_window", "--limit", "10", "--window", "1", *FAKE)


def run(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return run_main(*args, text=False)  # the output's bytes, as they are in the file


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
    args += ["--limit", "1", "--window", "1", *FAKE]
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


MAX_T_MS = 2**52 - 1


def replay_csv(
    tmp_path: Path, body: bytes, *extra: str
) -> tuple[subprocess.CompletedProcess[bytes], Path]:
    trace, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace.write_bytes(body)
    return run("replay", trace, *FW, "--out", out_csv, *extra), out_csv


@pytest.mark.parametrize(
    "text, line",
    [
        (b"9223372036854775808", 3),  # 2^63: once wrapped round to -2^63
        (b"18446744073709551616", 3),
        (b"%d" % (MAX_T_MS + 1), 3),
        (b"9007199254740993", 3),  # 2^53 + 1: once rounded to 2^53
        (b"4503599627370496.5", 3),  # floors to MAX_T_MS + 1
        (b"-1", 3),
        (b"-0.5", 3),  # floors to -1
        (b"1e400", 3),
        (b"nan", 3),
        (b"inf", 3),
    ],
)
def test_a_time_outside_what_a_script_holds_is_refused_naming_the_line(tmp_path, text, line):
    done, out_csv = replay_csv(tmp_path, b"t_ms,client\n0,a\n" + text + b",b\n2,c\n")
    assert done.returncode == 2, done.stderr
    message = done.stderr.decode()
    assert f"trace.csv:{line}: t_ms {text.decode()!r}" in message, message
    assert "Traceback" not in message
    assert not out_csv.exists()


def test_times_are_read_exactly_and_decimals_floored(tmp_path):
    body = b"t_ms,client\n12.5,a\n4503599627370494.9,b\n%d,c\n1e3,d\n0,e\n" % MAX_T_MS
    done, out_csv = replay_csv(tmp_path, body)
    assert done.returncode == 0, done.stderr
    # 4503599627370494.9 as a float is ...495.0: the exact floor is ...494.
    assert fields(out_csv.read_bytes(), "t_ms") == [
        b"12",
        b"4503599627370494",
        b"%d" % MAX_T_MS,
        b"1000",
        b"0",
    ]


def test_access_log_before_1970_is_refused_naming_the_line(tmp_path):
    log = tmp_path / "old.log"
    lines = [CLF_LINE % b"a", CLF_LINE.replace(b"2000", b"1969") % b"b"]
    log.write_bytes(b"".join(lines))
    done = run("replay", log, "--format", "clf", *FW)
    assert done.returncode == 2
    message = done.stderr.decode()
    assert "old.log:2: time [10/Oct/1969:13:55:36 -0700] is before 1970" in message, message
    assert "Traceback" not in message


def test_readers_give_exact_int64_times(tmp_path):
    from simulator.playback.traces import read_trace

    trace = tmp_path / "t.csv"
    trace.write_bytes(b"t_ms,client\n%d,a\n7.9,b\n" % MAX_T_MS)
    frame = read_trace(trace)
    assert str(frame["t_ms"].dtype) == "int64"
    assert frame["t_ms"].tolist() == [MAX_T_MS, 7]
    log = tmp_path / "a.log"
    log.write_bytes(CLF_LINE % b"x")
    frame = read_trace(log, "clf")
    assert str(frame["t_ms"].dtype) == "int64"
    assert frame["t_ms"].tolist() == [971_211_336_000]


@pytest.mark.parametrize(
    "values",
    [
        [0, 2**60],
        np.array([0, 2**63], dtype="uint64"),
        [0.0, 2.0**53],
        [0, -1],
        [0.0, float("nan")],
    ],
    ids=["2^60", "uint64 2^63", "float 2^53", "negative", "nan"],
)
def test_api_replay_refuses_times_a_script_cannot_hold(values):
    import pandas as pd

    from simulator.checks import ConfigError
    from simulator.playback.run import replay

    frame = pd.DataFrame({"t_ms": values, "client": ["a", "b"]})
    with pytest.raises(ConfigError, match="t_ms"):
        replay(frame, "fixed_window", 10, 1000)


def test_api_replay_keeps_times_exact():
    import pandas as pd

    from simulator.playback.run import replay

    t_ms = [MAX_T_MS, MAX_T_MS - 1, 0]
    frame = pd.DataFrame({"t_ms": np.array(t_ms, dtype="int64"), "client": ["a", "a", "b"]})
    got = replay(frame, "fixed_window", 10, 1000)
    assert got["t_ms"].tolist() == t_ms
    floats = pd.DataFrame({"t_ms": [2.5, 1.9999], "client": ["a", "b"]})
    assert replay(floats, "fixed_window", 10, 1000)["t_ms"].tolist() == [2, 1]


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("fmt", ["csv", "clf"])
def test_a_byte_order_mark_is_not_part_of_the_data(tmp_path, fmt):
    trace = tmp_path / "trace"
    if fmt == "csv":
        trace.write_bytes(BOM + b"client,t_ms\nalice,0\nbob,1\n")
    else:
        trace.write_bytes(BOM + CLF_LINE % b"alice" + CLF_LINE % b"bob")
    out_csv = tmp_path / "out.csv"
    done = run("replay", trace, "--format", fmt, *FW, "--out", out_csv)
    assert done.returncode == 0, done.stderr
    assert fields(out_csv.read_bytes(), "client") == [b"alice", b"bob"]


@pytest.mark.parametrize("column", ["t_ms", "client"])
def test_a_column_twice_in_the_header_is_refused(tmp_path, column):
    header = {"t_ms": b"t_ms,client,t_ms", "client": b"client,t_ms,client"}[column]
    done, out_csv = replay_csv(tmp_path, header + b"\n0,a,1\n")
    assert done.returncode == 2
    message = done.stderr.decode()
    assert f"trace.csv:1: the header holds column {column!r} 2 times" in message, message
    assert not out_csv.exists()


@pytest.fixture
def unwritable(tmp_path):
    """A file with content that this process may not write (read-only, or immutable for root)."""
    path = tmp_path / "kept.csv"
    path.write_bytes(b"precious\n")
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield path
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("root and no chattr +i here: every file is writable")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("case", ["missing folder", "a directory", "unwritable"])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, case, request):
    out = {
        "missing folder": lambda: tmp_path / "no" / "such" / "out.csv",
        "a directory": lambda: tmp_path,
        "unwritable": lambda: request.getfixturevalue("unwritable"),
    }[case]()
    before = out.read_bytes() if out.is_file() else None
    trace = tmp_path / "trace.csv"
    trace.write_bytes(b"t_ms,client\n0,a\n1,b\n")
    done = run("replay", trace, *FW, "--out", out)
    assert done.returncode == 2
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and f"--out {out}: " in errors[0], errors
    assert "Traceback" not in done.stderr.decode()
    if before is not None:
        assert out.read_bytes() == before  # refused: not even truncated
    else:
        assert not (tmp_path / "no").exists()


def test_a_full_disk_stops_the_replay_with_a_message():
    trace = ROOT / "data" / "traces" / "apache_combined_sample.log"
    done = run("replay", trace, "--format", "clf", *FW, "--out", "/dev/full")
    assert done.returncode == 2
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and "--out /dev/full: " in errors[0], errors
    assert "No space left on device" in errors[0]


@pytest.mark.parametrize("in_order", [True, False], ids=["in-order", "out-of-order"])
@pytest.mark.slow
def test_a_disk_that_fills_up_keeps_every_complete_row_written(tmp_path, in_order):
    """The file may grow to 64 KiB only (as on a nearly full disk): the rows before stay whole."""
    trace, out_csv = tmp_path / "trace.csv", tmp_path / "out.csv"
    t_ms = range(4000) if in_order else [(i * 7919) % 4000 for i in range(4000)]
    trace.write_text("t_ms,client\n" + "".join(f"{t},client-{t % 97}\n" for t in t_ms))
    full = ["--out", str(tmp_path / "full.csv")]
    assert run("replay", trace, *FW, *full).returncode == 0
    expected = (tmp_path / "full.csv").read_bytes().splitlines(keepends=True)

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed program
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))

    args = ["replay", str(trace), *FW, "--out", str(out_csv)]
    done = subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        preexec_fn=small_disk,
    )
    assert done.returncode == 2, done.stderr
    message = done.stderr.decode()
    assert f"--out {out_csv}: " in message and "Traceback" not in message, message
    written = int(re.search(r"(\d+) decisions", message).group(1))
    got = out_csv.read_bytes().splitlines(keepends=True)
    assert 0 < written == len(got) - 1  # the header and every row whole, none cut in half
    assert got == expected[: len(got)]
    assert len(b"".join(got)) <= 65536 < len(b"".join(expected))


def _compressed(kind: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    if kind == "gzip":
        return gzip.compress(data)
    if kind == "bzip2":
        return bz2.compress(data)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "zstd":  # the frame's magic number; what follows does not matter here
        return b"\x28\xb5\x2f\xfd" + os.urandom(300)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("trace.csv", data)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "clf"])
# gzip and zstd are read as streams: tests/playback/test_log_streams.py
@pytest.mark.parametrize("kind", ["bzip2", "xz", "zip"])
def test_a_compressed_trace_is_named_compressed_not_quoted(tmp_path, kind, fmt):
    trace = tmp_path / "trace.csv.z"
    trace.write_bytes(
        _compressed(kind, b"t_ms,client\n" + b"".join(b"%d,a\n" % i for i in range(500)))
    )
    done = run("replay", trace, "--format", fmt, *FW, "--out", tmp_path / "out.csv")
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"{trace}: is {kind}-compressed" in err and "decompress it first" in err
    assert len(err) < 300 and "Traceback" not in err
    assert not (tmp_path / "out.csv").exists()


def test_a_binary_trace_is_named_binary(tmp_path):
    trace = tmp_path / "trace.bin"
    trace.write_bytes(b"t_ms,client\n0,a\x00\x01\x02" + bytes(range(256)) * 2)
    done = run("replay", trace, *FW)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"{trace}: is a binary file (a NUL byte at byte 15)" in err
    assert len(err) < 300 and "Traceback" not in err
