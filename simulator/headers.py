"""The response header fields a server sends with a decision, in whole seconds.

``RateLimit-Policy`` and ``RateLimit`` of the IETF draft (draft-ietf-httpapi-ratelimit-headers-11),
the legacy ``RateLimit-Limit/-Remaining/-Reset`` trio of its earlier drafts, and ``Retry-After``,
computed from one row of the decision log (a frame row or a
:class:`~simulator.records.Decision`), whose times are kept in milliseconds.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = [
    "http_headers",
    "HEADER_STYLES",
    "MAX_FIELD_INTEGER",
    "policy_fields",
    "check_policy",
    "several_policies",
]


#: Which header fields :func:`http_headers` gives: the IETF draft's, the legacy trio, or both.
HEADER_STYLES = ("draft", "legacy", "both")
#: The largest integer a Structured Field can hold (RFC 9651: at most 15 decimal digits).
MAX_FIELD_INTEGER = 999_999_999_999_999


def _seconds(ms: int) -> int:
    return -(-ms // 1000)


def _bounded_seconds(ms: int) -> int:
    """Whole seconds rounded up, at most the largest Structured Field integer (31 million
    years: as good as never)."""
    return min(_seconds(ms), MAX_FIELD_INTEGER)


def policy_fields(q: int, window_ms: int, rate_limit: int | None = None) -> tuple[int, int]:
    """``(q, w)`` of ``RateLimit-Policy``: the quota and the seconds it applies to, rounded up
    and never 0 (the draft wants ``w > 0``; a quota refilled in half a second is stated as one
    per second, which a client may trust). For a bucket ``q`` is its burst and ``w`` the time to
    refill it from empty at ``rate_limit`` per ``window_ms``: ``window_ms x q / rate_limit``.

    ValueError when either does not fit a Structured Field integer (15 digits).
    """
    per = rate_limit or q
    w = max(1, -(-(window_ms * q) // (per * 1000)))
    for name, value in (("q", q), ("w", w)):
        if value > MAX_FIELD_INTEGER:
            raise ValueError(
                f"RateLimit-Policy's {name} would be {value:,}, past the 15 digits of a "
                f"Structured Field integer (at most {MAX_FIELD_INTEGER:,})"
            )
    return q, w


def check_policy(
    limit: int,
    window_ms: int,
    burst: int | None = None,
    *,
    names: tuple[str, str] = ("limit", "burst"),
) -> None:
    """Refuse, before a run, a policy whose ``RateLimit-Policy`` could not be written: ValueError
    naming the setting (``names``: what the limit and the burst are called where they were
    given). A bucket's ``q`` is its ``burst``; the windows' is the limit."""
    try:
        policy_fields(limit, window_ms)
    except ValueError as exc:
        raise ValueError(f"{names[0]}: {exc}") from None
    if burst is not None:
        try:
            policy_fields(burst, window_ms, limit)
        except ValueError as exc:
            raise ValueError(f"{names[1]}: {exc}") from None


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

    ``q`` is the decision's limit; ``w`` (given ``window_ms``) is the window it applies to (see
    :func:`policy_fields`). ``r`` is what remains for a request of cost 1, never above ``q``.
    ``t`` is when the quota comes back: the decision's reset, except on a refusal, where it is
    the Retry-After if that is sooner (so a client never reads a Retry-After earlier than ``t``).
    A key without expiry (``reset_ms`` -1) sends no ``t``; a decision whose remaining is unknown
    (-1, a user's script that does not say) sends no ``RateLimit`` (its ``r`` is required) and no
    ``RateLimit-Remaining``. Seconds past 15 digits are written as the largest there is.
    """
    if style not in HEADER_STYLES:
        raise ValueError(f"style: one of {', '.join(HEADER_STYLES)}, got {style!r}")
    allowed, retry = bool(row.allowed), row.retry_after_ms
    retry = -1 if allowed or retry is None or pd.isna(retry) else int(retry)
    reset, q, r = int(row.reset_ms), int(row.limit), int(row.remaining)
    r = min(r, q)  # nothing promises more than the quota
    _, w = policy_fields(q, 1000 if window_ms is None else window_ms, rate_limit)
    headers: dict[str, str] = {}
    if style in ("draft", "both"):
        name = policy or str(getattr(row, "algorithm", "") or "default")
        window = None if window_ms is None else w
        headers.update(_draft_fields(_quoted(name), allowed, retry, reset, q, r, window))
    if style in ("legacy", "both"):
        headers.update(_legacy_fields(reset, q, r))
    if not allowed and retry >= 0:
        headers["Retry-After"] = str(_seconds(retry))
    return headers


def _quoted(name: str) -> str:
    """A policy's name as a Structured Field string; ValueError for one that cannot be."""
    if not all(" " <= ch <= "~" for ch in name):
        raise ValueError(f"policy: a Structured Field string is printable ASCII, got {name!r}")
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _draft_fields(
    quoted: str, allowed: bool, retry: int, reset: int, q: int, r: int, w: int | None
) -> dict[str, str]:
    """The draft's ``RateLimit-Policy`` (``w`` only when the window is known) and, where ``r``
    is known, ``RateLimit``."""
    fields = {"RateLimit-Policy": f"{quoted};q={q}" + ("" if w is None else f";w={w}")}
    if r >= 0:
        now = f"{quoted};r={r}"
        until = reset if allowed or retry < 0 else (retry if reset < 0 else min(reset, retry))
        if until >= 0:
            now += f";t={_bounded_seconds(until)}"
        fields["RateLimit"] = now
    return fields


def _legacy_fields(reset: int, q: int, r: int) -> dict[str, str]:
    """``RateLimit-Limit``, and ``-Remaining`` and ``-Reset`` where they are known."""
    fields = {"RateLimit-Limit": str(q)}
    if r >= 0:
        fields["RateLimit-Remaining"] = str(r)
    if reset >= 0:
        fields["RateLimit-Reset"] = str(_bounded_seconds(reset))
    return fields


def several_policies(row: Any, policies: Any) -> dict[str, str]:
    """The draft's fields for a decision under several policies at once: every policy in
    ``RateLimit-Policy`` (``"name";q=Q;w=W``, in the order given), the binding one in
    ``RateLimit`` and ``Retry-After``. ``policies`` are ``(name, limit, window_ms)``; the binding
    one is the first whose limit is the decision's."""
    binding = next((n for n, q, _ in policies if q == int(row.limit)), policies[0][0])
    own = http_headers(row, "draft", policy=binding)
    items = []
    for name, q, window_ms in policies:
        _, w = policy_fields(q, window_ms)
        items.append('"' + name.replace("\\", "\\\\").replace('"', '\\"') + f'";q={q};w={w}')
    out = {"RateLimit-Policy": ", ".join(items)}
    for field in ("RateLimit", "Retry-After"):
        if field in own:
            out[field] = own[field]
    return out
