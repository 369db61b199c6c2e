"""Logs read by their own format strings, as JSON lines and by the presets: each gives the
times and keys worked out here from the lines the test wrote, and each bad option or line is
one message naming it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.checks import ConfigError
from simulator.playback.traces import TraceError, TraceSource, read_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"
COMBINED = '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"'
NGINX_API = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_user_agent" key=$http_x_api_key rt=$request_time'
)


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _read(path: Path, **how) -> list[tuple[int, str]]:
    frame = read_trace(TraceSource(path, **how))
    return list(zip(frame["t_ms"].tolist(), frame["client"].tolist(), strict=True))


def test_the_apache_log_format_reads_the_sample_as_clf_does():
    by_clf = read_trace(SAMPLE, "clf")
    by_format = read_trace(TraceSource(SAMPLE, log_format=COMBINED))
    assert by_format.equals(by_clf) and len(by_clf) == 10_000


def test_the_combined_preset_reads_the_sample_as_clf_does():
    assert read_trace(TraceSource(SAMPLE, "combined")).equals(read_trace(SAMPLE, "clf"))


def test_a_line_is_read_as_far_as_the_key_needs(tmp_path):
    # Line 8899 of the sample ends inside its User-Agent: the address and time are there.
    log = tmp_path / "cut.log"
    log.write_text(SAMPLE.read_text().splitlines()[8898] + "\n")
    assert _read(log, log_format=COMBINED) == [(_ms("2015-05-20T12:05:17"), "46.118.127.106")]
    with pytest.raises(TraceError, match=rf"{log}:1: not a line of the LogFormat"):
        _read(log, log_format=COMBINED, key="ip+ua")


def _nginx_lines() -> tuple[list[str], list[tuple[int, str]]]:
    lines, expected = [], []
    for i in range(40):
        key = ["k-alpha", "k-beta", "-"][i % 3]
        second = 10 + i // 4
        lines.append(
            f'2001:db8::{i % 5:x} - - [02/Dec/2026:02:52:{second:02d} +0100] "GET /v1/items/{i} '
            f'HTTP/1.1" 200 {i} "curl/8.{i} (x; \\x22quoted\\x22)" key={key} rt=0.00{i % 10}'
        )
        expected.append((_ms(f"2026-12-02T01:52:{second:02d}"), key))
    return lines, expected


def test_an_nginx_log_format_keyed_by_a_header(tmp_path):
    lines, expected = _nginx_lines()
    log = tmp_path / "api.log"
    log.write_text("\n".join(lines) + "\n")
    assert _read(log, log_format=NGINX_API, key="header:x-api-key") == expected
    # The same format as nginx.conf spells it, directive, name, quotes and all.
    conf = "log_format api '" + NGINX_API.replace(" key=", "' ' key=") + "';"
    assert _read(log, log_format=conf, key="header:X-Api-Key") == expected
    routes = {c for _, c in _read(log, log_format=NGINX_API, key="{route}")}
    assert routes == {"/v1/items/:id"}
    folded = {c for _, c in _read(log, log_format=NGINX_API, key="ipv6/64")}
    assert folded == {"2001:db8::/64"}


def test_fields_with_nothing_between_them(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        '192.0.2.4 2026-12-02 02:52:27 123 /users/42?x=1 "k1"\n'
        '192.0.2.4 2026-12-02 02:52:28 007 /users/43 "k2"\n'
    )
    apache = '%a %{%Y-%m-%d %H:%M:%S}t %{msec_frac}t %U%q "%{X-Api-Key}i"'
    t0 = _ms("2026-12-02T02:52:27")
    assert _read(log, log_format=apache, key="{route}{field:request_query}") == [
        (t0 + 123, "/users/:id?x=1"),
        (t0 + 1007, "/users/:id-"),
    ]
    log.write_text("192.0.2.4 [02/Dec/2026:02:52:27 +0000] /users/42?x=1 k1\n")
    nginx = "$remote_addr [$time_local] $uri$is_args$args $http_x_api_key"
    assert _read(log, log_format=nginx, key="{field:uri}|{field:args}|{header:x-api-key}") == [
        (t0, "/users/42|x=1|k1")
    ]
    with pytest.raises(ConfigError, match=r"\$a is followed at once by \$b, with nothing between"):
        TraceSource(log, log_format="$remote_addr [$time_local] $a$b")


def test_json_lines_with_nested_fields(tmp_path):
    log = tmp_path / "app.jsonl"
    rows = [
        {"ts": 1700000000.1239 + i, "req": {"path": f"/u/{i}/x?q={i}", "user": {"id": i % 2}}}
        for i in range(6)
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = _read(log, format="jsonl", time="ts:s", fields=("path=req.path",), key="route")
    assert got == [(1_700_000_000_123 + 1000 * i, "/u/:id/x") for i in range(6)]
    by_user = _read(log, format="jsonl", time="ts:s", key="field:req.user.id")
    assert [c for _, c in by_user] == ["0", "1"] * 3
    named = _read(
        log, format="jsonl", time="ts:s", fields=("user=req.user.id",), key="user-{field:user}"
    )
    assert [c for _, c in named] == ["user-0", "user-1"] * 3


def test_a_strftime_time(tmp_path):
    log = tmp_path / "app.jsonl"
    log.write_text('{"start_time": "2026-12-02T02:52:27.123456Z", "ip": "192.0.2.9"}\n')
    got = _read(log, format="jsonl", time="start_time:%Y-%m-%dT%H:%M:%S.%fZ")
    assert got == [(_ms("2026-12-02T02:52:27.123"), "192.0.2.9")]
    assert _read(log, format="jsonl", time="start_time") == got  # ISO 8601, the default


NGINX_MAIN = (
    '10.0.0.5 - - [02/Dec/2026:02:52:27 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8" '
    '"203.0.113.7, 198.51.100.2"'
)
ALB = (
    "http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 "
    "192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "
    '"GET http://www.example.com:80/users/42?x=1 HTTP/1.1" "curl/7.46.0" - - '
    "arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "
    '"Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z '
    '"forward" "-" "-" "10.0.0.1:80" "200" "-" "-"'
)
CLOUDFRONT = (
    "#Version: 1.0\n"
    "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem "
    "sc-status cs(Referer) cs(User-Agent) cs-uri-query\n"
    "2019-12-04\t21:02:31\tLAX1\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t"
    "/index.html\t200\t-\tMozilla/5.0%20(Windows)\t-\n"
)
ENVOY = {
    "start_time": "2016-04-15T20:17:00.310Z",
    "method": "POST",
    "path": "/api/v1/locations/7",
    "x_forwarded_for": "10.0.35.28, 10.0.0.2",
    "user_agent": "nsq2http",
    "request_id": "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2",
    "authority": "locations",
    "downstream_remote_address": "10.0.0.2:51234",
}
CLOUDFLARE = {
    "ClientIP": "2001:db8:5:6:7:8:9:a",
    "ClientRequestURI": "/cart/3?a=b",
    "ClientRequestUserAgent": "Mozilla/5.0",
    "EdgeStartTimestamp": 1700000000123456789,
    "RequestHeaders": {"x-api-key": "abc"},
}


@pytest.mark.parametrize(
    ("fmt", "text", "key", "expected"),
    [
        ("nginx", NGINX_MAIN, "xff:1", (_ms("2026-12-02T02:52:27"), "198.51.100.2")),
        ("nginx", NGINX_MAIN, "xff:2", (_ms("2026-12-02T02:52:27"), "203.0.113.7")),
        ("nginx", NGINX_MAIN.rsplit(" ", 1)[0], "ip", (_ms("2026-12-02T02:52:27"), "10.0.0.5")),
        ("alb", ALB, "ip", (_ms("2018-07-02T22:22:48.364"), "192.168.131.39")),
        ("alb", ALB, "{ip}:{route}", (_ms("2018-07-02T22:22:48.364"), "192.168.131.39:/users/:id")),
        ("alb", ALB, "header:user-agent", (_ms("2018-07-02T22:22:48.364"), "curl/7.46.0")),
        ("cloudfront", CLOUDFRONT, "ip", (_ms("2019-12-04T21:02:31"), "192.0.2.100")),
        (
            "cloudfront",
            CLOUDFRONT,
            "ip+ua",
            (_ms("2019-12-04T21:02:31"), "192.0.2.100 Mozilla/5.0%20(Windows)"),
        ),
        ("envoy", json.dumps(ENVOY), "ip", (_ms("2016-04-15T20:17:00.310"), "10.0.0.2")),
        ("envoy", json.dumps(ENVOY), "xff:2", (_ms("2016-04-15T20:17:00.310"), "10.0.35.28")),
        (
            "envoy",
            json.dumps(ENVOY),
            "route",
            (_ms("2016-04-15T20:17:00.310"), "/api/v1/locations/:id"),
        ),
        ("cloudflare", json.dumps(CLOUDFLARE), "ipv6/64", (1_700_000_000_123, "2001:db8:5:6::/64")),
        ("cloudflare", json.dumps(CLOUDFLARE), "header:x-api-key", (1_700_000_000_123, "abc")),
    ],
)
def test_presets(tmp_path, fmt, text, key, expected):
    log = tmp_path / "preset.log"
    log.write_text(text + ("" if text.endswith("\n") else "\n"))
    assert _read(log, format=fmt, key=key) == [expected]


def test_an_alb_line_without_the_later_fields_is_read(tmp_path):
    log = tmp_path / "alb.log"
    log.write_text(ALB.rsplit(' "10.0.0.1:80"', 1)[0] + "\n")  # as an older balancer wrote it
    assert _read(log, format="alb") == [(_ms("2018-07-02T22:22:48.364"), "192.168.131.39")]


@pytest.mark.parametrize(
    ("how", "needle"),
    [
        ({"log_format": "%h %{foo"}, "--log-format '%h %{foo': Invalid log format directive"),
        ({"log_format": "%h %Q"}, "Unknown log format directive: '%Q'"),
        ({"log_format": "%h $remote_addr"}, "both Apache %-directives and nginx $variables"),
        ({"log_format": "just text"}, "holds no Apache directive"),
        ({"log_format": "$a $b $a"}, "$a stands in it twice"),
        ({"log_format": "%h %>s"}, "has no time field of its own; give --time"),
        (
            {"format": "combined", "key": "field:nope"},
            "has no field 'nope' (its fields: remote_addr",
        ),
        ({"format": "combined", "key": "header:x-api-key"}, "captures no header:x-api-key"),
        ({"format": "combined", "key": "bogus"}, "--key bogus: not a key"),
        ({"format": "combined", "time": "time_local:fortnights"}, "'fortnights' is not a unit"),
        (
            {"format": "combined", "time": "when:clf"},
            "--time when:clf: --format combined has no field 'when'",
        ),
        ({"format": "jsonl"}, "--format jsonl has no time field of its own"),
        ({"format": "jsonl", "time": "ts:s", "fields": ("user",)}, "--field user: give NAME=PATH"),
        ({"format": "csv", "key": "route"}, "--key: a CSV trace has its time in t_ms"),
        ({"format": "cloudfront", "log_format": "%h %t"}, "leave out --format cloudfront"),
    ],
)
def test_a_bad_option_is_one_message(tmp_path, how, needle):
    with pytest.raises(ConfigError) as caught:
        TraceSource(tmp_path / "any.log", **how)
    assert needle in str(caught.value), str(caught.value)


JSON_FIRST = '{"ts": 1, "ip": "9.9.9.9"}'


@pytest.mark.parametrize(
    ("how", "first", "line", "needle"),
    [
        (
            {"format": "combined"},
            "",
            '1.2.3.4 - - [32/Foo/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
            'field time_local: "32/Foo/2015:10:05:03 +0000" is not a time in the format '
            "%d/%b/%Y:%H:%M:%S %z",
        ),
        (
            {"format": "combined"},
            "",
            "1.2.3.4 - - [02/Dec/2026:02:52:27 +0000]",  # cut short before the request
            "not a line of --format combined: '1.2.3.4 - - [02/Dec",
        ),
        (
            {"log_format": "%h %t"},
            "",
            "1.2.3.4 [32/Foo/2026:02:52:27 +0000]",
            'field %t: "[32/Foo/2026:02:52:27 +0000]" is not a time in the format %t',
        ),
        (
            {"format": "jsonl", "time": "ts:s"},
            JSON_FIRST,
            '{"ts": "yesterday", "ip": "1.2.3.4"}',
            'field ts: "yesterday" is not a time in the format a number of s since the Unix epoch',
        ),
        (
            {"format": "jsonl", "time": "ts"},
            '{"ts": "2026-12-02T02:52:27Z", "ip": "9.9.9.9"}',
            '{"ts": 1700000000, "ip": "1.2.3.4"}',
            "field ts: 1700000000 is a number, not ISO 8601",
        ),
        (
            {"format": "jsonl", "time": "ts:ms"},
            JSON_FIRST,
            '{"ts": -5, "ip": "1.2.3.4"}',
            "field ts: '-5' is -5 ms since the Unix epoch",
        ),
        (
            {"format": "jsonl", "time": "ts:ms"},
            JSON_FIRST,
            '{"ts": 5}',
            "field ip: the line's object holds no such path",
        ),
        ({"format": "jsonl", "time": "ts:ms"}, JSON_FIRST, "[1, 2]", "not a JSON object but list"),
        ({"format": "jsonl", "time": "ts:ms"}, JSON_FIRST, '{"ts": 5', "not a line of JSON"),
    ],
)
def test_a_bad_line_names_file_line_and_field(tmp_path, how, first, line, needle):
    log = tmp_path / "access.log"
    log.write_text((first + "\n" if first else "") + line + "\n")
    with pytest.raises(TraceError) as caught:
        read_trace(TraceSource(log, **how))
    message = str(caught.value)
    assert message.startswith(f"{log}:{2 if first else 1}: ") and needle in message, message


def test_a_key_over_the_bound_names_the_line(tmp_path):
    log = tmp_path / "access.log"
    first = SAMPLE.read_text().splitlines()[0]
    long_agent = first.rsplit('"', 2)[0] + '"' + "A" * 1100 + '"'
    log.write_text(first + "\n" + long_agent + "\n")
    assert len(_read(log, format="combined", key="ip")) == 2
    with pytest.raises(TraceError) as caught:
        _read(log, format="combined", key="ip+ua")
    message = str(caught.value)
    assert message.startswith(f"{log}:2: key '83.149.9.216 AAAA") and "is 1,113 bytes" in message
    assert "over the 1,024 a client id may hold (--key ip+ua)" in message and len(message) < 300
