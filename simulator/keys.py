"""Key names: every key of one decision shares one hash tag built from the client id.

On a Redis/Valkey Cluster a script may only touch keys that live in one slot. The slot is chosen by
the part of the key between the first ``{`` and the next ``}``, so all keys of one client carry the
same ``{tag}``. Client ids are arbitrary strings (IP addresses, API keys, chat room names, even the
empty string), so the tag is a percent-encoding of the id's bytes: it never contains a brace, it is
never empty (an empty tag would make Redis hash the whole key) and two different ids never produce
the same tag.

The id's bytes are the ones it was read from: a trace keeps bytes that are not UTF-8 as lone
surrogates (Python's ``surrogateescape``), and the tag holds those bytes again, so ``a\\xff`` in
a log becomes ``{a%FF}`` and stays apart from ``a\\xfe`` and from ``a\\ufffd``.
"""

from __future__ import annotations

from functools import lru_cache

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@")

__all__ = ["encode_client", "hash_tag"]


def _percent(data: bytes) -> str:
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in data)


@lru_cache(maxsize=65536)
def encode_client(client: str) -> str:
    """Injective, brace-free, non-empty encoding of a client id.

    Bytes outside ``[A-Za-z0-9._-@]`` become ``%XX``; the empty id becomes ``%`` (a lone ``%`` is
    never produced by encoding a non-empty id, because ``%`` itself is always encoded as ``%25``).

    A string whose escapes spell bytes that would read back as other text (``"\\udcc3\\udca9"``
    spells the bytes of ``"é"``) never comes from a file, but a program may pass one: it is
    encoded from its code points instead and marked with ``%%``, which no other encoding holds.
    """
    if client == "":
        return "%"
    try:
        return _percent(client.encode("utf-8"))  # no surrogates: the usual case
    except UnicodeEncodeError:
        pass
    try:
        data = client.encode("utf-8", "surrogateescape")
        if data.decode("utf-8", "surrogateescape") == client:
            return _percent(data)
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        pass
    return "%%" + _percent(client.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=65536)
def hash_tag(client: str) -> str:
    """The ``{...}`` hash tag shared by every key of one client."""
    return "{" + encode_client(client) + "}"
