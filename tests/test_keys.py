"""Client ids become hash tags: one slot per client, no id escapes its tag or collides with another.

Injectivity is checked by decoding: the test holds its own decoder of the encoding, and every id
it is given must come back from its tag. An encoding that can be decoded cannot merge two ids.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from simulator.keys import encode_client, hash_tag

#: What a tag may hold: the empty id's ``%``, or an optional ``%%`` marker and then safe characters
#: and ``%XX`` escapes with two upper-case hex digits.
WELL_FORMED = re.compile(r"%|(%%)?(?:[A-Za-z0-9._\-@]|%[0-9A-F]{2})+")

#: Any character, including lone surrogates: the escapes of undecodable bytes (U+DC80..U+DCFF),
#: the other surrogates (a program may pass them), and the characters the encoding treats specially.
characters = st.one_of(
    st.characters(),
    st.integers(0xDC80, 0xDCFF).map(chr),
    st.integers(0xD800, 0xDFFF).map(chr),
    st.sampled_from("%{}A41-é\ufffd"),
)
ids = st.text(characters, max_size=12)
raw_ids = st.binary(max_size=12)


def decode(encoded: str) -> str:
    """The id an encoding was made from (the inverse of :func:`encode_client`)."""
    if encoded == "%":
        return ""
    if encoded.startswith("%%"):
        return unquote_to_bytes(encoded[2:]).decode("utf-8", "surrogatepass")
    return unquote_to_bytes(encoded).decode("utf-8", "surrogateescape")


def redis_tag(key: str) -> str | None:
    """The part of ``key`` Redis Cluster hashes when the key has a tag (None: the whole key)."""
    start = key.find("{")
    end = key.find("}", start + 1)
    if start < 0 or end < 0 or end == start + 1:
        return None
    return key[start + 1 : end]


@settings(max_examples=200, deadline=None)
@given(ids)
def test_every_id_comes_back_from_its_encoding(client):
    encoded = encode_client(client)
    assert WELL_FORMED.fullmatch(encoded), encoded
    assert decode(encoded) == client


@settings(max_examples=100, deadline=None)
@given(st.lists(ids, min_size=2, max_size=8, unique=True))
def test_different_ids_never_share_an_encoding(clients):
    encodings = [encode_client(c) for c in clients]
    assert len(set(encodings)) == len(clients)


@settings(max_examples=150, deadline=None)
@given(raw_ids)
def test_an_id_read_from_bytes_is_encoded_from_those_bytes(raw):
    client = raw.decode("utf-8", "surrogateescape")
    encoded = encode_client(client)
    assert not encoded.startswith("%%")  # ids read from files never need the marker
    assert raw == b"" or unquote_to_bytes(encoded) == raw
    assert decode(encoded) == client


@settings(max_examples=100, deadline=None)
@given(st.lists(raw_ids, min_size=2, max_size=8, unique=True))
def test_different_bytes_never_share_a_tag(raws):
    tags = {hash_tag(r.decode("utf-8", "surrogateescape")) for r in raws}
    assert len(tags) == len(raws)


@settings(max_examples=150, deadline=None)
@given(ids)
def test_the_encoding_has_no_brace_and_is_never_empty(client):
    encoded = encode_client(client)
    assert "{" not in encoded and "}" not in encoded
    assert encoded != ""


@settings(max_examples=150, deadline=None)
@given(st.text(characters, min_size=1, max_size=12))
def test_only_the_empty_id_is_encoded_as_a_lone_percent(client):
    assert encode_client(client) != "%"


def test_the_empty_id_has_an_encoding_of_its_own():
    assert encode_client("") == "%"
    assert hash_tag("") == "{%}"
    assert redis_tag(f"rl:{hash_tag('')}:count") == "%"  # not an empty tag: Redis uses it


@pytest.mark.parametrize(
    ("fake", "real"),
    [("%41", "A"), ("%25", "%"), ("%%41", "A"), ("%7B", "{"), ("%", ""), ("%%", "%")],
)
def test_a_percent_sign_in_an_id_cannot_spell_another_id(fake, real):
    assert encode_client(fake) != encode_client(real)
    assert decode(encode_client(fake)) == fake


def test_braces_in_an_id_cannot_break_out_of_the_tag():
    for client in ("}", "{", "}{", "a}b{c", "{x}", "}}}"):
        tag = hash_tag(client)
        assert redis_tag(f"rl:{tag}:count") == encode_client(client)
        assert tag.count("{") == 1 and tag.count("}") == 1


@settings(max_examples=150, deadline=None)
@given(ids)
def test_hash_tag_wraps_the_encoding_in_one_pair_of_braces(client):
    tag = hash_tag(client)
    assert tag == "{" + encode_client(client) + "}"
    assert tag.count("{") == 1 and tag.count("}") == 1
    assert redis_tag(f"rl:{tag}:count") == encode_client(client)


#: Key names of the shapes the algorithms build: a prefix, the tag, a suffix.
_KEY_SHAPES = (("rl:fw:", ":7"), ("rl:sc:", ":6"), ("rl:sl:", ""), ("emq:", ":meta"))


@settings(max_examples=100, deadline=None)
@given(ids)
def test_every_key_of_one_client_lands_in_one_cluster_slot(client):
    tag = hash_tag(client)
    slots = {key_slot(f"{prefix}{tag}{suffix}".encode()) for prefix, suffix in _KEY_SHAPES}
    assert slots == {key_slot(tag[1:-1].encode())}


def test_ids_that_differ_only_in_an_undecodable_byte_get_different_tags():
    ff = b"a\xff".decode("utf-8", "surrogateescape")
    fe = b"a\xfe".decode("utf-8", "surrogateescape")
    tags = [hash_tag(ff), hash_tag(fe), hash_tag("a\ufffd")]
    assert tags == ["{a%FF}", "{a%FE}", "{a%EF%BF%BD}"]


def test_escapes_that_spell_real_text_stay_apart_from_that_text():
    spelled = "\udcc3\udca9"  # the escapes of the two bytes of "é"
    assert spelled.encode("utf-8", "surrogateescape") == "é".encode()
    assert encode_client("é") == "%C3%A9"
    assert encode_client(spelled).startswith("%%")
    assert decode(encode_client(spelled)) == spelled


def test_a_surrogate_that_stands_for_no_byte_is_still_encoded():
    for client in ("\ud800", "x\udfff", "\udc7f", "\ud83d\ude00"):
        encoded = encode_client(client)
        assert encoded.startswith("%%") and decode(encoded) == client
        # the same bytes read from a file are escapes, one per byte: the marker keeps them apart
        read = client.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")
        assert read != client and encode_client(read) != encoded
    assert encode_client("\ud83d\ude00") != encode_client("\U0001f600")
