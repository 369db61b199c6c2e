"""Why this request was decided so: the explorer's *why* panel, worked out only when asked.

For the chosen request of each server shown, :func:`why_html` asks
:func:`simulator.explain.explain_decision` for the script's executed lines, the ``redis.call``\\ s
it made with their replies and the arithmetic it did (``2 + 100 × 59/60 = 100.33 ≥ 100 →
refused``), and shows :meth:`Why.as_html`. That decides the client's requests again up to the
chosen one, so it runs only while the panel is open (not at every step of a closed panel). On a
real server there is no virtual clock to replay the script on: one line says it needs the fake
server.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from simulator.backends.specs import resolve_spec
from simulator.explain import explain_decision, why_unavailable
from simulator.policy import Policy

__all__ = ["why_html"]


def why_html(
    policy: Policy,
    times_ms: Sequence[int],
    costs: Sequence[int],
    index: int,
    client: str,
    backend: str,
) -> str:
    """The why of request ``index`` of ``client`` (its instants and costs) under ``policy``,
    as HTML; on a real server, the line saying why not."""
    spec = resolve_spec(backend)
    if not spec.virtual_time:
        return f"<i>{html.escape(str(why_unavailable(spec)))}</i>"
    why = explain_decision(policy, list(times_ms), list(costs), index, client)
    return str(why.as_html())
