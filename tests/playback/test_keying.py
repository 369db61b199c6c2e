"""The key forms, each against values worked out by hand: X-Forwarded-For with trusted hops,
IPv6 folded to its /64, routes with numeric and UUID segments folded, templates, the bound."""

from __future__ import annotations

import pytest

from simulator.checks import ConfigError
from simulator.playback.keying import (
    MOST_KEY_BYTES,
    KeyPart,
    fold_ipv6,
    parse_key,
    route_of,
    xff_client,
)
from simulator.playback.times import LineError

CHAIN = "203.0.113.7, 198.51.100.2, 10.0.0.5"  # client, then two proxies, left to right


@pytest.mark.parametrize(
    ("hops", "client"),
    [
        (1, "10.0.0.5"),  # one trusted proxy: the address it was reached from
        (2, "198.51.100.2"),
        (3, "203.0.113.7"),
        (4, "203.0.113.7"),  # more hops trusted than the chain holds: its leftmost
    ],
)
def test_xff_takes_the_address_n_hops_from_the_right(hops, client):
    assert xff_client(CHAIN, hops, "192.0.2.1") == client


@pytest.mark.parametrize("header", [None, "", "-"])
def test_xff_without_a_header_is_the_remote_address(header):
    assert xff_client(header, 1, "192.0.2.1") == "192.0.2.1"


def test_xff_through_a_parsed_key():
    key = parse_key("xff:2")
    got = {"header:x-forwarded-for": CHAIN, "ip": "192.0.2.1"}
    assert key.client(got) == "198.51.100.2"
    assert parse_key("xff").client(got) == "10.0.0.5"  # one hop by default


@pytest.mark.parametrize(
    ("address", "folded"),
    [
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # the same /64
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),  # the next /64 is another client
        ("[2001:db8::1]", "2001:db8::/64"),
        ("203.0.113.7", "203.0.113.7"),  # IPv4 as it is
        ("::ffff:203.0.113.7", "203.0.113.7"),  # IPv4 mapped into IPv6: the IPv4 address
        ("host.example", "host.example"),  # a looked-up name: unchanged
    ],
)
def test_ipv6_folds_to_its_64(address, folded):
    assert fold_ipv6(address) == folded


@pytest.mark.parametrize(
    ("target", "route"),
    [
        ("/users/42/orders?page=2", "/users/:id/orders"),
        ("/users/7/orders", "/users/:id/orders"),
        ("/files/3f2504e0-4f89-11d3-9a0c-0305e82c3301", "/files/:id"),
        ("/files/3F2504E0-4F89-11D3-9A0C-0305E82C3301/raw", "/files/:id/raw"),
        ("/v2/items", "/v2/items"),  # v2 is not a number
        ("/a/12b", "/a/12b"),
        ("/", "/"),
        ("/search?q=1#top", "/search"),
        ("http://www.example.com:80/users/9?x", "/users/:id"),  # as an ALB logs the target
        ("-", "-"),
    ],
)
def test_route_folds_numeric_and_uuid_segments(target, route):
    assert route_of(target) == route


def test_a_template_joins_its_forms():
    key = parse_key("{ip}:{route}")
    assert key.pieces == (KeyPart("ip"), ":", KeyPart("route"))
    assert key.client({"ip": "203.0.113.7", "path": "/users/42?a"}) == "203.0.113.7:/users/:id"
    assert key.needs == {"ip", "path"}


def test_forms_name_what_they_need():
    assert parse_key("ip+ua").needs == {"ip", "header:user-agent"}
    assert parse_key("header:X-Api-Key").needs == {"header:x-api-key"}  # names are lower case
    assert parse_key("field:user_id").needs == {"field:user_id"}


def test_an_empty_value_is_a_dash():
    assert parse_key("header:x-api-key").client({"header:x-api-key": None}) == "-"
    assert parse_key("ip+ua").client({"ip": "203.0.113.7", "header:user-agent": ""}) == (
        "203.0.113.7 -"
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hostname", "not a key; one of ip, ip+ua, xff[:N]"),
        ("xff:0", "from 1 to 64"),
        ("xff:two", "from 1 to 64"),
        ("header:", "give the header's name"),
        ("field:", "give the field's name"),
        ("{ip}:{route", "braces do not pair up"),
        ("{nope}", "placeholder nope: not a key"),
        ("}{", "braces do not pair up"),
    ],
)
def test_a_bad_key_is_one_message(text, needle):
    with pytest.raises(ConfigError, match=None) as caught:
        parse_key(text)
    assert needle in str(caught.value) and f"--key {text}" in str(caught.value)


def test_a_key_over_the_bound_is_refused():
    key = parse_key("header:cookie")
    assert key.client({"header:cookie": "a" * MOST_KEY_BYTES}) == "a" * MOST_KEY_BYTES
    with pytest.raises(LineError, match=f"over the {MOST_KEY_BYTES:,}"):
        key.client({"header:cookie": "a" * (MOST_KEY_BYTES + 1)})
    with pytest.raises(LineError, match="bytes"):  # counted in bytes, not characters
        key.client({"header:cookie": "é" * (MOST_KEY_BYTES // 2 + 1)})
