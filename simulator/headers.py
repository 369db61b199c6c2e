"""The response header fields a server sends with a decision, in whole seconds.

``RateLimit-Policy`` and ``RateLimit`` of the IETF draft (draft-ietf-httpapi-ratelimit-headers-11),
the legacy ``RateLimit-Limit/-Remaining/-Reset`` trio of its earlier drafts, and ``Retry-After``,
computed from one row of the decision log (a frame row or a
:class:`~simulator.records.Decision`), whose times are kept in milliseconds.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

__all__ = ["http_headers", "policy_fields", "HEADER_STYLES"]


#: Which header fields :func:`http_headers` gives: the IETF draft's, the legacy trio, or both.
HEADER_STYLES = ("draft", "legacy", "both")


def _seconds(ms: int) -> int:
    return math.ceil(ms / 1000)


def http_headers(
    row: Any,
    style: str = "both",
    window_ms: int | None = None,
    rate_limit: int | None = None,
    policy: str | None = None,
) -> dict[str, str]:
    """The response header fields for one decision (a frame row or a :class:`Decision`), in
    whole seconds rounded up, as HTTP wants.

    ``draft`` (draft-ietf-httpapi-ratelimit-headers-11): ``RateLimit-Policy: "p";q=Q;w=W`` and
    ``RateLimit: "p";r=R;t=T``, with the policy name ``p`` (default: the row's algorithm, else
    ``default``). ``legacy``: ``RateLimit-Limit``, ``-Remaining``, ``-Reset`` (draft -06 and
    before). Both add ``Retry-After`` on a refusal that may be retried (none for a request that
    costs more than the policy ever admits: Retry-After -1).

    ``q`` is the decision's limit; ``w`` (given ``window_ms``) is the window it applies to:
    ``window_ms`` itself for the windows, and for a bucket (whose limit is its capacity, the
    burst) the time it takes to refill from empty, ``window_ms x burst / rate_limit`` (pass the
    configured ``rate_limit`` for those; it defaults to ``q``). ``r`` is what remains after this
    request. ``t`` is when the quota comes back: the decision's reset, except on a refusal,
    where it is the Retry-After if that is sooner (so a client never reads a Retry-After earlier
    than ``t``). A key without expiry (``reset_ms`` -1) sends no ``t``.
    """
    if style not in HEADER_STYLES:
        raise ValueError(f"style: one of {', '.join(HEADER_STYLES)}, got {style!r}")
    allowed, retry = bool(row.allowed), row.retry_after_ms
    retry = -1 if allowed or retry is None or pd.isna(retry) else int(retry)
    reset, q, r = int(row.reset_ms), int(row.limit), int(row.remaining)
    headers: dict[str, str] = {}
    if style in ("draft", "both"):
        name = policy or str(getattr(row, "algorithm", "") or "default")
        quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
        fields = f"{quoted};q={q}"
        if window_ms is not None:
            fields += f";w={_seconds(window_ms * q // (rate_limit or q))}"
        headers["RateLimit-Policy"] = fields
        now = f"{quoted};r={r}"
        until = reset if allowed or retry < 0 else (retry if reset < 0 else min(reset, retry))
        if until >= 0:
            now += f";t={_seconds(until)}"
        headers["RateLimit"] = now
    if style in ("legacy", "both"):
        headers["RateLimit-Limit"] = str(q)
        headers["RateLimit-Remaining"] = str(r)
        if reset >= 0:
            headers["RateLimit-Reset"] = str(_seconds(reset))
    if not allowed and retry >= 0:
        headers["Retry-After"] = str(_seconds(retry))
    return headers


def policy_fields(row: Any, policies: Any) -> dict[str, str]:
    """The draft's fields for a decision under several policies at once: every policy in
    ``RateLimit-Policy`` (``"name";q=Q;w=W``, in the order given), the binding one in
    ``RateLimit`` and ``Retry-After``. ``policies`` are ``(name, limit, window_ms)``; the binding
    one is the first whose limit is the decision's."""
    binding = next((n for n, q, _ in policies if q == int(row.limit)), policies[0][0])
    own = http_headers(row, "draft", policy=binding)
    items = ", ".join(
        '"' + n.replace("\\", "\\\\").replace('"', '\\"') + f'";q={q};w={_seconds(w)}'
        for n, q, w in policies
    )
    out = {"RateLimit-Policy": items, "RateLimit": own["RateLimit"]}
    if "Retry-After" in own:
        out["Retry-After"] = own["Retry-After"]
    return out
