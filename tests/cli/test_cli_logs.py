"""``replay`` and ``compare`` on logs as engineers keep them: a LogFormat string gives what
``--format clf`` gives, byte for byte; an nginx log keyed by an API key and JSON lines keyed by
route give the decisions a fixed window counted here gives; gzip and zstd give what the plain
file gives; a bad option or line is one message, exit 2, no output written."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard
from conftest import run_main as run

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"
COMBINED = '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"'
LIMIT, WINDOW_S = 3, 10
FW = ["--algorithm", "fixed_window", "--limit", str(LIMIT), "--window", str(WINDOW_S)]
FW += ["--backend", "fakeredis"]  # the readers' tests: the default would start a valkey-server
NGINX = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_user_agent" "$http_x_forwarded_for" $http_x_api_key'
)
KEYS = ["k-alpha", "k-beta", "k-gamma", "-"]


def fixed_window(events: list[tuple[int, str]], limit: int, window_ms: int) -> list[int]:
    """Admitted (1) or refused (0) for each request, in file order: the requests of one key in
    one window of the clock's grid, in time order (ties in file order), the first ``limit``
    admitted."""
    order = sorted(range(len(events)), key=lambda i: (events[i][0], i))
    seen: Counter[tuple[str, int]] = Counter()
    allowed = [0] * len(events)
    for i in order:
        t_ms, key = events[i]
        seen[key, t_ms // window_ms] += 1
        allowed[i] = int(seen[key, t_ms // window_ms] <= limit)
    return allowed


def _decisions(csv_text: str) -> list[tuple[int, str, int]]:
    rows = [line.split(",") for line in csv_text.splitlines()[1:]]
    return [(int(r[1]), r[2], int(r[3])) for r in rows]


def _nginx_log(path: Path) -> list[tuple[int, str]]:
    """Writes 300 lines over 60 s, out of order within each second; returns (t_ms, api key)."""
    lines, events = [], []
    base = datetime(2026, 12, 2, 2, 52, 0, tzinfo=UTC)
    for i in range(300):
        second = (i * 7) % 60 if i % 11 else i // 5
        key = KEYS[(i * i) % 4]
        lines.append(
            f"198.51.100.{i % 9} - - [02/Dec/2026:03:52:{second:02d} +0100] "
            f'"GET /v1/users/{i % 13}/cart?x={i} HTTP/1.1" 200 {i} "app/{i % 3}" '
            f'"203.0.113.{i % 4}, 10.0.0.{i % 2}" {key}'
        )
        events.append((int(base.timestamp() * 1000) + 1000 * second, key))
    path.write_text("\n".join(lines) + "\n")
    return events


def _json_log(path: Path) -> list[tuple[int, str]]:
    """JSON lines with nested fields and times in seconds with fractions; returns (t_ms, route)."""
    rows, events = [], []
    for i in range(240):
        t_ms = 1_700_000_000_000 + (i * 997) % 45_000
        route = ["/orders/:id", "/orders/:id/items", "/health"][i % 3]
        path_text = route.replace(
            ":id", str(i % 17) if i % 2 else "0b3c1f1e-9d5e-4c7a-8f00-d1c2b3a4e5f6"
        )
        rows.append(
            {"time": {"s": t_ms / 1000}, "http": {"path": f"{path_text}?page={i}"}, "user": i % 5}
        )
        events.append((t_ms, route))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return events


def _replay(trace: Path, *how: str, out: Path) -> str:
    done = run("replay", trace, *how, *FW, "--out", out)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def _clf_events(lines: list[str]) -> list[tuple[int, str]]:
    """(t_ms, remote address) of each line of a common log, read here without the package."""
    events = []
    for line in lines:
        address, _, _, stamp, zone = line.split(" ", 5)[:5]
        at = datetime.strptime(f"{stamp[1:]} {zone[:-1]}", "%d/%b/%Y:%H:%M:%S %z")
        events.append((int(at.timestamp() * 1000), address))
    return events


def test_the_log_format_replays_the_first_lines_of_the_sample_as_clf_does(tmp_path):
    lines = SAMPLE.read_text().splitlines(keepends=True)[:2000]
    head = tmp_path / "head.log"
    head.write_text("".join(lines))
    by_clf = run("replay", head, "--format", "clf", *FW, "--out", tmp_path / "clf.csv")
    by_format = run("replay", head, "--log-format", COMBINED, *FW, "--out", tmp_path / "lf.csv")
    assert by_clf.returncode == by_format.returncode == 0, by_format.stderr
    assert (tmp_path / "lf.csv").read_bytes() == (tmp_path / "clf.csv").read_bytes()
    admitted = sum(fixed_window(_clf_events(lines), LIMIT, WINDOW_S * 1000))
    summary = [d.stderr.splitlines()[-1].split("; wrote")[0] for d in (by_clf, by_format)]
    assert summary[0] == summary[1] and f"{admitted} of 2000 admitted" in summary[0], summary


@pytest.mark.slow  # the whole sample, twice; the first 2,000 lines in the fast run above
def test_the_log_format_replays_the_sample_as_clf_does(tmp_path):
    by_clf = run("replay", SAMPLE, "--format", "clf", *FW, "--out", tmp_path / "clf.csv")
    by_format = run("replay", SAMPLE, "--log-format", COMBINED, *FW, "--out", tmp_path / "lf.csv")
    assert by_clf.returncode == by_format.returncode == 0, by_format.stderr
    assert (tmp_path / "lf.csv").read_bytes() == (tmp_path / "clf.csv").read_bytes()
    summary = [d.stderr.splitlines()[-1].split("; wrote")[0] for d in (by_clf, by_format)]
    assert summary[0] == summary[1] and "8754 of 10000 admitted" in summary[0], summary


@pytest.mark.slow
def test_the_log_format_compares_the_sample_as_clf_does(tmp_path):
    outs = {}
    for name, how in (("clf", ["--format", "clf"]), ("lf", ["--log-format", COMBINED])):
        done = run(
            "compare", SAMPLE, *how, "--baseline", "fixed_window:limit=10,window=60",
            "--candidate", "sliding_counter", "--candidate", "token_bucket:burst=5",
            "--out", tmp_path / f"{name}.csv", "--clients-out", tmp_path / f"{name}-clients.csv",
            "--backend", "fakeredis",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outs[name] = done.stdout
        assert "time resolution 1 s" in done.stdout
    assert outs["lf"] == outs["clf"]
    for suffix in (".csv", "-clients.csv"):
        assert (tmp_path / f"lf{suffix}").read_bytes() == (tmp_path / f"clf{suffix}").read_bytes()


def test_an_nginx_log_keyed_by_api_key_decides_as_an_independent_count(tmp_path):
    log = tmp_path / "api.log"
    events = _nginx_log(log)
    got = _decisions(
        _replay(log, "--log-format", NGINX, "--key", "header:x-api-key", out=tmp_path / "o.csv")
    )
    expected = fixed_window(events, LIMIT, WINDOW_S * 1000)
    assert [(t, c) for t, c, _ in got] == events
    assert [a for _, _, a in got] == expected
    assert 0 < sum(expected) < len(expected)  # some refused, some admitted: the count is tested
    # The same log gzipped: the same bytes out (zstd: the JSON test below).
    packed = tmp_path / "api.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    out = _replay(
        packed, "--log-format", NGINX, "--key", "header:x-api-key", out=tmp_path / "z.csv"
    )
    assert out == (tmp_path / "o.csv").read_text()


@pytest.mark.slow  # three replays: plain, zstd, two shards
def test_json_lines_keyed_by_route_decide_as_an_independent_count(tmp_path):
    log = tmp_path / "app.jsonl"
    events = _json_log(log)
    how = ["--format", "jsonl", "--time", "time.s:s", "--field", "path=http.path", "--key", "route"]
    got = _decisions(_replay(log, *how, out=tmp_path / "o.csv"))
    assert [(t, c) for t, c, _ in got] == events
    assert [a for _, _, a in got] == fixed_window(events, LIMIT, WINDOW_S * 1000)
    packed = tmp_path / "app.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(log.read_bytes()))
    assert _replay(packed, *how, out=tmp_path / "z.csv") == (tmp_path / "o.csv").read_text()
    sharded = _replay(packed, *how, "--shards", "2", out=tmp_path / "s.csv")  # split by route
    assert sharded == (tmp_path / "o.csv").read_text()


@pytest.mark.slow
def test_compare_counts_the_keyed_clients(tmp_path):
    log = tmp_path / "api.log"
    events = _nginx_log(log)
    done = run(
        "compare", log, "--log-format", NGINX, "--key", "xff:2",
        "--backend", "fakeredis",
        "--baseline", f"fixed_window:limit={LIMIT},window={WINDOW_S}", "--candidate", "sliding_counter",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # xff:2 = the address before the one trusted proxy's: 203.0.113.0 to .3
    assert f"{len(events)} requests from 4 clients over 59 s; time resolution 1 s" in done.stdout
    done = run(
        "compare", log, "--log-format", NGINX, "--key", "header:x-api-key",
        "--backend", "fakeredis",
        "--baseline", f"fixed_window:limit={LIMIT},window={WINDOW_S}", "--candidate", "sliding_counter",
    )  # fmt: skip
    admitted = sum(fixed_window(events, LIMIT, WINDOW_S * 1000))
    baseline = next(line for line in done.stdout.splitlines() if line.startswith("fixed_window"))
    assert baseline.split()[1:3] == [f"{admitted:,}", f"{len(events) - admitted:,}"], done.stdout


COMPARE = ["--baseline", "fixed_window:limit=3,window=10", "--candidate", "sliding_counter"]
COMPARE += ["--backend", "fakeredis"]


@pytest.mark.parametrize(
    ("command", "how", "needle"),
    [
        ("replay", ["--log-format", "%h %{foo"], "--log-format '%h %{foo': Invalid log format"),
        ("compare", ["--format", "nginx", "--key", "field:api_key"], "has no field 'api_key'"),
        ("replay", ["--format", "combined", "--key", "header:x-api-key"], "captures no header:"),
        ("compare", ["--format", "nginx", "--key", "xff:0"], "--key xff:0: the trusted hops N"),
        ("replay", ["--format", "jsonl", "--time", "ts:parsecs"], "'parsecs' is not a unit"),
        ("compare", ["--format", "combined", "--field", "oops"], "--field oops: give NAME=PATH"),
    ],
)
def test_a_bad_option_is_one_message_exit_2(tmp_path, command, how, needle):
    log = tmp_path / "api.log"
    _nginx_log(log)
    out = tmp_path / "out.csv"
    done = run(command, log, *how, *(FW if command == "replay" else COMPARE), "--out", out)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not out.exists()


def test_a_bad_time_names_file_line_and_field(tmp_path):
    log = tmp_path / "access.log.gz"
    lines = SAMPLE.read_text().splitlines()[:1233]
    lines.append(lines[0].replace("17/May/2015:10:05:03", "17/Mai/2015:10:05:03"))
    log.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    for command, rest in (("replay", FW), ("compare", COMPARE)):
        done = run(command, log, "--format", "combined", "--key", "ip+ua", *rest)
        assert done.returncode == 2, done.stderr
        assert (
            f'{log}:1234: field time_local: "17/Mai/2015:10:05:03 +0000" is not a time in the '
            "format %d/%b/%Y:%H:%M:%S %z"
        ) in done.stderr
        assert "Traceback" not in done.stderr


def test_help_names_the_trace_options():
    for command in ("replay", "compare"):
        done = run(command, "--help")
        assert done.returncode == 0
        text = " ".join(done.stdout.split())
        for needle in ("--log-format STRING", "--key KEY", "--time FIELD[:SPEC]", "--field NAME=PATH",
                       "xff[:N]", "ipv6/64", "{ip}:{route}", "ts:s", "cloudfront", "docs/logs.md"):  # fmt: skip
            assert needle in text, (command, needle)
