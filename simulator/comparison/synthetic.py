"""A large synthetic access log, to show what ``compare`` does at scale.

The log reads like a busy site's: clients drawn from a Zipf law (client of rank ``k`` sends in
proportion to ``1 / k^s``: a few send most of the traffic, most send a handful), a diurnal
rate (a sine over the day, busiest at 14:00 UTC, ``amplitude`` of the mean either way), and
bursts (now and then one client, any of them, sends ``burst`` requests within two seconds: a
script, a retry storm). Arrivals are Poisson at the rate of the moment. Everything comes from
one seed: the same arguments write the same bytes. The file is written in time order, a block
at a time, so memory does not grow with its length.

    python -m simulator.comparison.synthetic OUT.log --lines 5000000 [--clients 200000]
        [--zipf 1.1] [--rate 60] [--amplitude 0.6] [--bursts-per-hour 6] [--burst 120]
        [--format clf|csv] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from simulator.checks import ConfigError, check_int, check_number

__all__ = ["SyntheticLog", "write_log", "main"]

_DAY_S = 86_400.0
_YEAR_S = 365.25 * _DAY_S
#: The most lines a log is written with (its blocks keep memory flat; this keeps it a log).
MOST_LINES = 10_000_000_000
#: The longest a log may span: its dates stay dates, its times far below 2^52 ms.
MOST_SPAN_S = 100 * _YEAR_S
#: Bursts may add at most this many times the quietest rate (they are drawn per block: more
#: would make one block's bursts outweigh it, and memory grow with them).
MOST_BURST_SHARE = 10
_START_S = datetime(2015, 5, 17, tzinfo=UTC).timestamp()
_PATHS = ("/", "/index.html", "/api/items", "/api/search", "/static/app.js", "/login")


@dataclass(frozen=True)
class SyntheticLog:
    """The shape of the log: ``lines`` requests from ``clients`` clients (Zipf exponent
    ``zipf``), ``rate_per_s`` on average with a diurnal ``amplitude`` (0..1), ``bursts_per_hour``
    bursts of ``burst`` requests each, drawn from ``seed``."""

    lines: int
    clients: int = 200_000
    zipf: float = 1.1
    rate_per_s: float = 60.0
    amplitude: float = 0.6
    bursts_per_hour: float = 6.0
    burst: int = 120
    seed: int = 0

    def __post_init__(self) -> None:
        own = "SyntheticLog"
        check_int(own, "lines", self.lines, 1, MOST_LINES)
        check_int(own, "clients", self.clients, 1, 2**24)  # ids are 10.x.y.z: 24 bits
        check_number(own, "zipf", self.zipf, positive=True, hi=10)
        check_number(own, "rate_per_s", self.rate_per_s, positive=True, hi=1e7)
        if not 0 <= check_number(own, "amplitude", self.amplitude) <= 0.99:
            raise ConfigError(f"{own}.amplitude: must be from 0 to 0.99, got {self.amplitude!r}")
        check_number(own, "bursts_per_hour", self.bursts_per_hour, hi=3600)
        check_int(own, "burst", self.burst, 1, 100_000)
        check_int(own, "seed", self.seed, 0, 2**64 - 1)
        quietest = self.rate_per_s * (1 - self.amplitude)
        span_s = self.lines / quietest
        if span_s > MOST_SPAN_S:
            raise ConfigError(
                f"{own}.rate_per_s: {self.lines:,} lines at {self.rate_per_s:g}/s (the quietest "
                f"hour {quietest:g}/s) would span up to {span_s / _YEAR_S:,.3g} years, over the "
                f"{MOST_SPAN_S / _YEAR_S:.0f} a log is written for; give a higher rate"
            )
        burst_per_s = self.bursts_per_hour * self.burst / 3600
        if burst_per_s > MOST_BURST_SHARE * quietest:
            raise ConfigError(
                f"{own}.bursts_per_hour: {self.bursts_per_hour:g} bursts of {self.burst:,} an "
                f"hour are {burst_per_s:,.4g} requests/s, over {MOST_BURST_SHARE} times the "
                f"quietest rate ({quietest:g}/s); give fewer or smaller bursts"
            )

    def rate_at(self, t_s: float) -> float:
        """Requests per second at ``t_s`` seconds since the log's start (midnight UTC)."""
        phase = 2 * math.pi * ((t_s / _DAY_S) - 14 / 24)
        return self.rate_per_s * (1 + self.amplitude * math.cos(phase))


def _client_id(rank: int) -> str:
    return f"10.{(rank >> 16) & 255}.{(rank >> 8) & 255}.{rank & 255}"


def write_log(path: str | Path, shape: SyntheticLog, fmt: str = "clf", block: int = 65_536) -> int:
    """Write ``shape.lines`` requests to ``path`` (an access log, or a CSV ``t_ms,client``),
    in time order; the number of lines written."""
    rng = np.random.default_rng(shape.seed)
    weights = 1.0 / np.arange(1, shape.clients + 1, dtype=np.float64) ** shape.zipf
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ids = [_client_id(k) for k in range(shape.clients)]
    stamps: dict[int, str] = {}
    t_s, written = 0.0, 0
    with Path(path).open("w", encoding="ascii", newline="\n") as out:
        if fmt == "csv":
            out.write("t_ms,client\n")
        while written < shape.lines:
            n = min(block, shape.lines - written)
            # Poisson arrivals at the rate of the block's start (the day turns slowly).
            gaps = rng.exponential(1 / shape.rate_at(t_s), size=n)
            times = t_s + np.cumsum(gaps)
            clients = np.searchsorted(cdf, rng.random(n), side="right")
            span_h = (times[-1] - t_s) / 3600
            bursts = rng.poisson(shape.bursts_per_hour * span_h)
            if bursts:
                at = rng.uniform(t_s, times[-1], size=bursts)
                who = rng.integers(0, shape.clients, size=bursts)
                extra_t = (at[:, None] + rng.uniform(0, 2, size=(bursts, shape.burst))).ravel()
                extra_c = np.repeat(who, shape.burst)
                times = np.concatenate([times, extra_t])
                clients = np.concatenate([clients, extra_c])
                order = np.argsort(times, kind="stable")[:n]  # the line count stays exact
                times, clients = times[order], clients[order]
            t_s = float(times[-1])
            t_ms = np.floor(times * 1000).astype(np.int64)
            paths = rng.integers(0, len(_PATHS), size=n)
            sizes = rng.integers(200, 50_000, size=n)
            lines = []
            if fmt == "csv":
                for t, c in zip(t_ms.tolist(), clients.tolist(), strict=True):
                    lines.append(f"{t},{ids[c]}\n")
            else:
                for t, c, p, b in zip(
                    (t_ms // 1000).tolist(), clients.tolist(), paths.tolist(), sizes.tolist(),
                    strict=True,
                ):  # fmt: skip
                    stamp = stamps.get(t)
                    if stamp is None:
                        if len(stamps) > 4096:
                            stamps.clear()
                        moment = datetime.fromtimestamp(_START_S + t, UTC)
                        stamp = stamps[t] = moment.strftime("%d/%b/%Y:%H:%M:%S +0000")
                    lines.append(
                        f'{ids[c]} - - [{stamp}] "GET {_PATHS[p]} HTTP/1.1" 200 {b} "-" '
                        '"synthetic/1.0"\n'
                    )
            out.write("".join(lines))
            written += n
    return written


#: The option that sets each field, for messages in the command line's words.
_OPTIONS = {
    "lines": "--lines",
    "clients": "--clients",
    "zipf": "--zipf",
    "rate_per_s": "--rate",
    "amplitude": "--amplitude",
    "bursts_per_hour": "--bursts-per-hour",
    "burst": "--burst",
    "seed": "--seed",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m simulator.comparison.synthetic",
        description="Write a synthetic access log: Zipf clients, a diurnal rate, bursts; seeded.",
    )
    p.add_argument("out", type=Path, metavar="OUT")
    p.add_argument("--lines", type=int, required=True, help="requests to write")
    p.add_argument("--clients", type=int, default=200_000, help="distinct clients (default 200000)")
    p.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent s (default 1.1)")
    p.add_argument("--rate", type=float, default=60.0, help="mean requests per second (default 60)")
    p.add_argument("--amplitude", type=float, default=0.6, help="diurnal swing, 0..1 (default 0.6)")
    p.add_argument("--bursts-per-hour", type=float, default=6.0, help="bursts per hour (default 6)")
    p.add_argument("--burst", type=int, default=120, help="requests per burst (default 120)")
    p.add_argument(
        "--format", choices=("clf", "csv"), default="clf", help="clf or csv (t_ms,client)"
    )
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        shape = SyntheticLog(
            args.lines, args.clients, args.zipf, args.rate, args.amplitude,
            args.bursts_per_hour, args.burst, args.seed,
        )  # fmt: skip
        n = write_log(args.out, shape, args.format)
    except ConfigError as exc:
        field, _, rest = str(exc).partition(": ")
        option = _OPTIONS.get(field.removeprefix("SyntheticLog."))
        shown = f"{option}: {rest}" if option else str(exc)
        print(f"{p.prog}: error: {shown}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{p.prog}: error: {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{p.prog}: interrupted", file=sys.stderr)
        return 130
    print(f"wrote {n:,} lines to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
