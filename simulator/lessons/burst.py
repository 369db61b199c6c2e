"""Lesson 01's explanations, written from its run: each figure in the prose is read from the log.

The boundary-burst lesson explains, limiter by limiter, why a count came out as it did. Typed
prose would go stale the moment a learner changes the parameter cell; these functions take the
run's frames and return Markdown whose numbers are the run's own, so the notebook only calls
them. :data:`CARD` is the six limiters the lesson starts with; :data:`BEYOND` the others the
registry holds, each with the sentence that introduces it before it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from IPython.display import Markdown

__all__ = [
    "BEYOND",
    "CARD",
    "anchored_story",
    "beyond_intro",
    "bucket_story",
    "fixed_window_story",
    "keys_story",
    "seam_story",
    "sliding_counter_story",
]

#: The six limiters the lesson's question is about (four windows, two buckets).
CARD = ("fixed_window", "echomq", "sliding_log", "sliding_counter", "token_bucket", "gcra")

#: The registry's other limiters, each introduced in a sentence before the lesson shows it.
BEYOND: Mapping[str, str] = {
    "sliding_counter_all": "the sliding counter as Kong keeps it: refused hits are counted too, "
    "so a client that keeps knocking keeps itself out",
    "increx": "the first-hit window in one server command (`INCREX … PX window ENX`) instead of "
    "a script: the counter's expiry is armed by the first hit",
    "increx_grid": "INCREX with its expiry at the next clock-grid seam (`PXAT`): the "
    "clock-aligned fixed window in one command",
    "multi_policy": "two clock-grid limits checked in one script, the lesson's (100 a minute) "
    "and a long one (by default 5 × the limit per 10 windows): admitted only if both admit, counted "
    "in neither otherwise",
}


def _verb(allowed: object) -> str:
    return "admitted" if bool(allowed) else "refused"


def beyond_intro(names: Sequence[str]) -> Markdown:
    """A bullet per limiter past the card, in the registry's order (names it does not know: the
    registry's own one-line description is not at hand, so the name alone)."""
    lines = [
        f"- **`{n}`**: {BEYOND.get(n, 'an algorithm registered beside the six')}." for n in names
    ]
    return Markdown("\n".join(lines))


def keys_story(seam: Mapping[str, Sequence[Any]]) -> Markdown:
    """The keys on the server after each stepped call, as the step-through read them."""
    from simulator.explore.steps import keys_text

    return Markdown(
        "\n".join(
            f"- **{name}**, after request {s.index + 1} (t = {s.t_ms:,} ms): {keys_text(s.after)}"
            for name, steps in seam.items()
            for s in steps
        )
    )


def seam_story(seam: Mapping[str, Sequence[Any]], limit: int, first_s: float) -> Markdown:
    """At the first request of the second burst: the fixed window's new key, the log's members."""
    fw, sl = seam["fixed_window"][1], seam["sliding_log"][1]
    (sl_log,) = sl.before
    new_key = fw.after[-1]
    return Markdown(
        f"At request {limit + 1} (second {fw.t_ms / 1000:g}) the fixed window's script counts "
        f"in the key of the new grid cell, `{new_key.key}`, which it has just created (value "
        f"{new_key.value}): the counter of the first burst is still on the server but no longer "
        f"read, so the request is **{_verb(fw.allowed)}**. The sliding log keeps one key, "
        f"`{sl_log.key}`, holding **{sl_log.size}** members all scored in second {first_s:g}: "
        f"the request is **{_verb(sl.allowed)}** with "
        f"`Retry-After: {sl.headers.get('Retry-After', '–')}` (seconds until the oldest member "
        f"leaves the window), and the exact count before it is {sl.exact_in_window}."
    )


def fixed_window_story(summary: pd.DataFrame, limit: int, window_s: float) -> Markdown:
    """The fixed window's peak in one trailing window against the exact log's."""
    peak = summary["max_in_window"]
    return Markdown(
        f"In the fixed window's panel of the chart above, the trailing {window_s:g}-s count "
        f"reaches **{peak['fixed_window']}**, {peak['fixed_window'] / limit:.2f}× the limit of "
        f"{limit}; the exact log's never passes **{peak['sliding_log']}**."
    )


def anchored_story(summary: pd.DataFrame, window_s: float) -> Markdown:
    """How much the first-hit window lets through when the bursts sit on its own seam."""
    row = summary.loc["echomq"]
    return Markdown(
        f"**{row['max_in_window']}** of the {row['requests']} requests are admitted within one "
        f"{window_s:g}-s window: {row['ratio_to_limit']:.2f}× the limit."
    )


def sliding_counter_story(
    log: pd.DataFrame, summary: pd.DataFrame, limit: int, second_s: float
) -> Markdown:
    """The sliding counter's first estimates at the second burst, and how far past the limit."""
    at = log[(log["algorithm"] == "sliding_counter") & (log["t_ms"] == round(second_s * 1000))]
    estimates, allowed = at["count"].tolist(), at["allowed"].tolist()
    extra = max(int(summary.loc["sliding_counter", "max_in_window"]) - limit, 0)
    after = ", ".join(
        f"{e:.2f} ({'admit' if a else 'refuse'})"
        for e, a in zip(estimates[1:4], allowed[1:4], strict=False)
    )
    return Markdown(
        f"The estimate starts at **{estimates[0]:.2f}** ({_verb(allowed[0])}), then {after}: "
        f"**{extra}** more than the limit in one trailing window. The estimate assumes the "
        "previous window's requests were spread evenly, and here they were not."
    )


def bucket_story(  # noqa: PLR0913 (the run's four parameters and its two frames)
    log: pd.DataFrame,
    summary: pd.DataFrame,
    limit: int,
    window_s: float,
    first_s: float,
    second_s: float,
) -> Markdown:
    """The token bucket's level at the second burst: what two seconds of refill bought."""
    at = log[(log["algorithm"] == "token_bucket") & (log["t_ms"] == round(second_s * 1000))]
    gap_s = second_s - first_s
    refill = gap_s * limit / window_s
    return Markdown(
        f"At {second_s:g} s the bucket holds **{at['count'].iloc[0]:.2f}** tokens ({gap_s:g} s × "
        f"{limit} per {window_s:g} s = {refill:.2f} refilled), so **{int(at['allowed'].sum())}** "
        f"of the second burst get through: {int(summary.loc['token_bucket', 'admitted'])} in all "
        f"for the token bucket, {int(summary.loc['gcra', 'admitted'])} for GCRA. A bucket's "
        "promise is a rate with a burst saved up, not a count per window: any window may hold "
        "the burst plus a window's refill."
    )
