"""gzip and zstd traces read as streams give what the plain file gives; a damaged stream, a
binary file inside one, a kind not streamed are each one message naming the file."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
import zstandard

from simulator.playback.traces import TraceError, TraceSource, iter_trace, read_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def _gzip_members(data: bytes) -> bytes:  # as logrotate's appended pieces are
    half = data.index(b"\n", len(data) // 2) + 1
    return gzip.compress(data[:half]) + gzip.compress(data[half:])


@pytest.mark.parametrize("pack", [gzip.compress, _gzip_members, _zstd], ids=["gz", "gz2", "zst"])
@pytest.mark.parametrize("how", ["clf", TraceSource("x", "combined", key="route")], ids=str)
def test_a_compressed_log_reads_as_the_plain_one(tmp_path, pack, how):
    packed = tmp_path / "access.log.z"
    packed.write_bytes(pack(SAMPLE.read_bytes()))
    assert read_trace(packed, how).equals(read_trace(SAMPLE, how))


def test_a_compressed_csv_in_small_chunks(tmp_path):
    data = b"t_ms,client,cost\n" + b"".join(
        b"%d,c%d,%d\n" % (i, i % 7, 1 + i % 3) for i in range(5000)
    )
    plain, packed = tmp_path / "t.csv", tmp_path / "t.csv.zst"
    plain.write_bytes(data)
    packed.write_bytes(_zstd(data))
    assert list(iter_trace(packed, "csv", 999)) == list(iter_trace(plain, "csv", 999))


def _refused(path: Path, fmt: str = "clf") -> str:
    with pytest.raises(TraceError) as caught:
        read_trace(path, fmt)
    return str(caught.value)


def test_a_cut_gzip_names_the_line_it_stopped_at(tmp_path):
    packed = tmp_path / "access.log.gz"
    whole = gzip.compress(SAMPLE.read_bytes())
    packed.write_bytes(whole[: len(whole) // 2])
    message = _refused(packed)
    assert message.startswith(f"{packed}:") and "damaged or cut short" in message, message
    assert len(message) < 300


def test_damaged_zstd_is_one_message(tmp_path):
    packed = tmp_path / "access.log.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(300))
    message = _refused(packed)
    assert message.startswith(f"{packed}") and "damaged" in message and len(message) < 300


def test_a_binary_file_inside_gzip_is_named_binary(tmp_path):
    packed = tmp_path / "blob.gz"
    packed.write_bytes(gzip.compress(b"t_ms,client\n0,a\x00\x01" + bytes(range(256))))
    assert _refused(packed, "csv").startswith(
        f"{packed}: is a binary file (a NUL byte at byte 15 inside its gzip compression)"
    )


def test_gzip_inside_gzip_is_refused(tmp_path):
    packed = tmp_path / "twice.gz"
    packed.write_bytes(gzip.compress(gzip.compress(b"t_ms,client\n0,a\n")))
    assert "is gzip-compressed inside its gzip compression" in _refused(packed, "csv")


def test_a_bzip2_log_is_still_refused_with_one_line(tmp_path):
    import bz2

    packed = tmp_path / "access.log.bz2"
    packed.write_bytes(bz2.compress(SAMPLE.read_bytes()[:5000]))
    message = _refused(packed, "clf")
    assert message == (
        f"{packed}: is bzip2-compressed, not a text trace; decompress it first (a trace is a "
        "CSV or a log as plain text, or gzip- or zstd-compressed)"
    )
