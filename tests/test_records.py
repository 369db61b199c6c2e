"""The decision log: its columns and dtypes, ids that are not UTF-8, and the headers of a row."""

from __future__ import annotations

import csv

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.records import (
    CLIENT_DTYPE,
    COLUMNS,
    DTYPES,
    Decision,
    DecisionLog,
    http_headers,
    to_frame,
)

decisions = st.builds(
    Decision,
    allowed=st.booleans(),
    count=st.floats(0, 1e6, allow_nan=False),
    limit=st.integers(1, 10**6),
    remaining=st.integers(0, 10**6),
    reset_ms=st.one_of(st.just(-1), st.integers(0, 10**9)),
    retry_after_ms=st.integers(0, 10**9),
)
rows = st.lists(
    st.tuples(st.text(max_size=5), st.integers(0, 10**13), decisions), min_size=1, max_size=20
)

#: A client id as a trace reader keeps it: "café" in Latin-1, then a byte that is never UTF-8.
RAW_ID = b"caf\xe9-\xff"
CLIENT = RAW_ID.decode("utf-8", "surrogateescape")


def _dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return frame.dtypes.astype(str).to_dict()


@settings(max_examples=60, deadline=None)
@given(rows)
def test_to_frame_has_the_declared_columns_dtypes_and_values(log):
    frame = to_frame(log, "run-1", 7, "sliding_log")
    assert list(frame.columns) == list(COLUMNS)
    assert _dtypes(frame) == DTYPES
    assert frame["client"].dtype == CLIENT_DTYPE
    assert (frame["run_id"] == "run-1").all() and (frame["seed"] == 7).all()
    assert (frame["algorithm"] == "sliding_log").all()
    assert frame["client"].tolist() == [c for c, _, _ in log]
    assert frame["t_ms"].tolist() == [t for _, t, _ in log]
    for name in ("allowed", "count", "limit", "remaining", "reset_ms"):
        assert frame[name].tolist() == [getattr(d, name) for _, _, d in log], name


@settings(max_examples=60, deadline=None)
@given(rows)
def test_retry_after_is_missing_exactly_when_the_request_was_allowed(log):
    frame = to_frame(log, "r", 0, "fixed_window")
    assert frame["retry_after_ms"].isna().tolist() == frame["allowed"].tolist()
    refused = [d.retry_after_ms for _, _, d in log if not d.allowed]
    assert frame.loc[~frame["allowed"], "retry_after_ms"].tolist() == refused


def test_an_allowed_row_has_na_not_zero():
    frame = to_frame(
        [
            ("a", 0, Decision(True, 1.0, 2, 1, 1000, 0)),
            ("a", 1, Decision(False, 2.0, 2, 0, 999, 0)),
        ],
        "r",
        0,
        "fixed_window",
    )
    assert frame["retry_after_ms"].iloc[0] is pd.NA
    assert frame["retry_after_ms"].iloc[1] == 0  # a refusal that may retry now keeps its 0


def test_decision_log_collects_rows_into_the_same_frame():
    log = DecisionLog("run-2", 3, "echomq")
    row = ("room", 5, Decision(False, 3.0, 3, 0, 400, 400))
    log.append(*row)
    log.append("room", 9, Decision(True, 1.0, 3, 2, 1000, 0))
    assert len(log) == 2
    expected = to_frame(
        [row, ("room", 9, Decision(True, 1.0, 3, 2, 1000, 0))], "run-2", 3, "echomq"
    )
    pd.testing.assert_frame_equal(log.frame(), expected)


def test_an_empty_log_gives_an_empty_frame_with_every_column():
    for frame in (DecisionLog("r", 0, "sliding_counter").frame(), to_frame([], "r", 0, "x")):
        assert len(frame) == 0
        assert list(frame.columns) == list(COLUMNS)
        assert _dtypes(frame) == DTYPES


def test_an_undecodable_byte_in_a_client_id_survives_to_frame_and_csv(tmp_path):
    assert "\udcff" in CLIENT and "\udce9" in CLIENT
    frame = to_frame(
        [
            (CLIENT, 0, Decision(True, 1.0, 1, 0, 1000, 0)),
            ("b", 1, Decision(True, 1.0, 1, 0, 999, 0)),
        ],
        "r",
        0,
        "sliding_log",
    )
    assert frame["client"].iloc[0] == CLIENT
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False, errors="surrogateescape")
    data = path.read_bytes()
    assert b"," + RAW_ID + b"," in data
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as f:
        back = [row["client"] for row in csv.DictReader(f)]
    assert back == [CLIENT, "b"]
    assert back[0].encode("utf-8", "surrogateescape") == RAW_ID


@pytest.mark.parametrize(
    ("ms", "seconds"),
    [(0, "0"), (1, "1"), (999, "1"), (1000, "1"), (1001, "2"), (59_999, "60"), (60_000, "60")],
)
def test_headers_round_milliseconds_up_to_whole_seconds(ms, seconds):
    refused = http_headers(Decision(False, 5.0, 5, 0, ms, ms), "legacy")
    assert refused == {
        "RateLimit-Limit": "5",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": seconds,
        "Retry-After": seconds,
    }


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 10**12))
def test_header_seconds_are_the_ceiling_of_the_milliseconds(reset_ms, retry_after_ms):
    headers = http_headers(Decision(False, 1.0, 1, 0, reset_ms, retry_after_ms), "legacy")
    assert headers["RateLimit-Reset"] == str(-(-reset_ms // 1000))
    assert headers["Retry-After"] == str(-(-retry_after_ms // 1000))


def test_no_reset_header_for_a_key_without_expiry():
    headers = http_headers(Decision(True, 1.0, 10, 9, -1, 0), "legacy")
    assert headers == {"RateLimit-Limit": "10", "RateLimit-Remaining": "9"}


def test_no_retry_after_when_allowed():
    headers = http_headers(Decision(True, 4.0, 10, 6, 2500, 0), "legacy")
    assert headers == {"RateLimit-Limit": "10", "RateLimit-Remaining": "6", "RateLimit-Reset": "3"}


def test_a_frame_row_gives_the_same_headers_as_its_decision():
    log = [
        ("a", 0, Decision(True, 1.0, 2, 1, 1000, 0)),
        ("a", 1, Decision(False, 2.0, 2, 0, 999, 1999)),
        ("b", 2, Decision(True, 1.0, 2, 1, -1, 0)),
    ]
    frame = to_frame(log, "r", 0, "fixed_window")
    for (_, _, decision), (_, row) in zip(log, frame.iterrows(), strict=True):
        assert http_headers(row, policy="p") == http_headers(decision, policy="p")
        assert http_headers(row)["RateLimit"].startswith('"fixed_window";')  # its algorithm
    assert http_headers(frame.iloc[1])["Retry-After"] == "2"
    assert "Retry-After" not in http_headers(frame.iloc[0])  # its <NA> is never read
