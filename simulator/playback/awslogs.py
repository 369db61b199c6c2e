"""The access logs AWS writes: an Application Load Balancer's, and CloudFront's standard log.

An ALB writes one line per request, fields apart by spaces, the request line and the user agent
in quotes; AWS adds fields at the end from time to time, so a line is read as far as the fields
the key and time use. The client is ``client:port`` without its port; the time is
``request_creation_time``, when the balancer received the request (``time`` is when it sent the
response: ``--time time`` for that one). Example line (from AWS's documentation)::

    http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817
    10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1"
    "curl/7.46.0" - - arn:aws:elasticloadbalancing:... "Root=1-58337262-36d228ad5d99923122bbe354"
    "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"

CloudFront's standard log is tab-separated, under ``#Version`` and ``#Fields`` lines that name
its columns (a log that picks its own fields says which in ``#Fields``); the time is its
``date`` and ``time`` columns (UTC, whole seconds), the client ``c-ip``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from simulator.playback.logformats import nginx_layout, request_method, request_target
from simulator.playback.patterns import Layout, PatternLayout
from simulator.playback.times import LineError, TimeSpec

__all__ = ["alb_layout", "CloudFrontLayout", "strip_port", "ALB_FIELDS", "CLOUDFRONT_FIELDS"]

#: An ALB log line's fields, in order (AWS's names, ``:`` written ``_``).
ALB_FIELDS = (
    "type time elb client_port target_port request_processing_time target_processing_time "
    "response_processing_time elb_status_code target_status_code received_bytes sent_bytes "
    '"request" "user_agent" ssl_cipher ssl_protocol target_group_arn "trace_id" '
    '"domain_name" "chosen_cert_arn" matched_rule_priority request_creation_time '
    '"actions_executed" "redirect_url" "error_reason" "target_port_list" '
    '"target_status_code_list" "classification" "classification_reason" conn_trace_id'
).split()
#: CloudFront's standard log fields, in the order it writes them all.
CLOUDFRONT_FIELDS = (
    "date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status "
    "cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id "
    "x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher "
    "x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port "
    "time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len "
    "sc-range-start sc-range-end"
).split()
#: The time CloudFront's two columns make, as one field.
CLOUDFRONT_TIME = "date time"


def strip_port(address: Any) -> Any:
    """``192.168.131.39:2817`` -> ``192.168.131.39``, ``[2001:db8::1]:443`` -> ``2001:db8::1``;
    a bare IPv6 address (several colons) as it is."""
    if not isinstance(address, str):
        return address
    if address.startswith("["):
        return address[1:].split("]", 1)[0]
    host, sep, port = address.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else address


def alb_layout() -> PatternLayout:
    spelled = " ".join(f'"${f[1:-1]}"' if f.startswith('"') else f"${f}" for f in ALB_FIELDS)
    layout = nginx_layout(spelled, "--format alb")
    layout.offers = {
        "ip": ("client_port", strip_port),
        "path": ("request", request_target),
        "method": ("request", request_method),
        "header:user-agent": ("user_agent", None),
        "header:host": ("domain_name", None),
    }
    layout.default_time = TimeSpec("request_creation_time", "iso")
    return layout


class CloudFrontLayout(Layout):
    """CloudFront's standard log: columns named by its ``#Fields`` line."""

    what = "--format cloudfront"
    offers = {
        "ip": ("c-ip", None),
        "path": ("cs-uri-stem", None),
        "method": ("cs-method", None),
        "header:host": ("cs(Host)", None),
        "header:referer": ("cs(Referer)", None),
        "header:user-agent": ("cs(User-Agent)", None),
        "header:cookie": ("cs(Cookie)", None),
        "header:x-forwarded-for": ("x-forwarded-for", None),
    }
    default_time = TimeSpec(CLOUDFRONT_TIME, "iso")

    def names(self) -> Sequence[str]:
        return [*CLOUDFRONT_FIELDS, CLOUDFRONT_TIME]

    def reader(self, wanted: Sequence[str]) -> Callable[[str], list[Any] | None]:
        columns = {name: i for i, name in enumerate(CLOUDFRONT_FIELDS)}

        def where(name: str) -> list[int]:
            parts = ("date", "time") if name == CLOUDFRONT_TIME else (name,)
            lacking = [p for p in parts if p not in columns]
            if lacking:
                raise LineError(f"the #Fields line holds no {lacking[0]} (a field this read needs)")
            return [columns[p] for p in parts]

        plan = [where(name) for name in wanted]

        def read(line: str) -> list[Any] | None:
            nonlocal plan
            text = line.rstrip("\r\n")
            if text.startswith("#"):
                if text.startswith("#Fields:"):
                    columns.clear()
                    columns.update((n, i) for i, n in enumerate(text[8:].split()))
                    plan = [where(name) for name in wanted]
                return None
            if not text.strip():
                return None
            cells = text.split("\t")
            most = max((i for p in plan for i in p), default=-1)
            if len(cells) <= most:
                raise LineError(
                    f"not a line of {self.what}: {len(cells)} tab-separated fields where the "
                    f"#Fields line names {len(columns)}: {text[:80]!r}"
                )
            return [
                " ".join(cells[i] for i in p) if len(p) > 1 else _dash(cells[p[0]]) for p in plan
            ]

        return read


def _dash(text: str) -> str | None:
    return None if text == "-" else text
