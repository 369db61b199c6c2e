"""Why one decision went as it did: the script's lines that ran, its calls, and its arithmetic.

:func:`explain_decision` decides a client's requests again on a fresh fake server and traces one
of them (:mod:`simulator.backends.fakeserver.tracing`): a :class:`Why` holds the script's lines
that ran, every ``redis.call`` with its reply, and for the shipped algorithms the decision worked
out with those replies and the script's ``ARGV``. ``Why.as_text()`` and ``Why.as_html()`` show
it. On a real server the view is not there: :func:`why_unavailable` says so in one line.
"""

from simulator.explain.trace import explain_decision, why_unavailable
from simulator.explain.why import Call, Why

__all__ = ["explain_decision", "why_unavailable", "Why", "Call"]
