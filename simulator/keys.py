"""Key names: every key of one decision shares one hash tag built from the client id.

On a Redis/Valkey Cluster a script may only touch keys that live in one slot. The slot is chosen by
the part of the key between the first ``{`` and the next ``}``, so all keys of one client carry the
same ``{tag}``. Client ids are arbitrary strings (IP addresses, API keys, chat room names, even the
empty string), so the tag is a percent-encoding of the id's UTF-8 bytes: it never contains a brace,
it is never empty (an empty tag would make Redis hash the whole key) and two different ids never
produce the same tag.
"""

from __future__ import annotations

from functools import lru_cache

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@")

__all__ = ["encode_client", "hash_tag"]


@lru_cache(maxsize=65536)
def encode_client(client: str) -> str:
    """Injective, brace-free, non-empty encoding of a client id.

    Bytes outside ``[A-Za-z0-9._-@]`` become ``%XX``; the empty id becomes ``%`` (a lone ``%`` is
    never produced by encoding a non-empty id, because ``%`` itself is always encoded as ``%25``).
    """
    if client == "":
        return "%"
    data = client.encode("utf-8", "surrogatepass")
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in data)


@lru_cache(maxsize=65536)
def hash_tag(client: str) -> str:
    """The ``{...}`` hash tag shared by every key of one client."""
    return "{" + encode_client(client) + "}"
