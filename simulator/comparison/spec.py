"""A candidate limiter as the command line names it: ``ALGORITHM:key=value,...``.

``sliding_counter:limit=100,window=60`` is the sliding window counter at 100 requests per 60 s;
``token_bucket:limit=100,window=60,burst=20`` adds the bucket's own parameter. ``limit`` is a
whole number of requests, ``window`` is in seconds (as everywhere on the command line, rounded
to whole ms), every other key is one of the algorithm's own parameters (``burst``). A candidate
that leaves out its limit or window takes the baseline's. A file of candidates is TOML, one
``[[candidate]]`` table each (``algorithm = "gcra"``, ``limit = 100``, ``window = 60``,
``burst = 20``, optionally ``name``). Every mistake is one :class:`ConfigError` naming the SPEC
(or the file and table) and the key.

A gateway is written in its own configuration's words and units instead
(:mod:`simulator.algorithms.gateways`): ``nginx:rate=10r/s,burst=20,nodelay``,
``traefik:average=6,period=1m,burst=1``, ``envoy:max_tokens=10,fill_interval=500ms``; a bare
word is a flag (``nodelay``; in a file, ``nodelay = true``), and the limit and window come from
the configuration, never from the baseline.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.algorithms import ALGORITHMS, gateways
from simulator.algorithms.base import own_params
from simulator.algorithms.gateways import units
from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError
from simulator.playback.files import read_regular
from simulator.policy import Policy, resolve

#: The largest candidates file read (a few hundred tables fit in a few KiB).
MOST_CANDIDATES_BYTES = 1 << 20

__all__ = ["Candidate", "parse_spec", "load_candidates", "resolve_candidates"]


@dataclass(frozen=True)
class Candidate:
    """One limiter configuration to replay: its label (the SPEC), algorithm, limit, window in
    ms and its own parameters (every declared one, defaults filled in)."""

    name: str
    algorithm: str
    limit: int
    window_ms: int
    params: Mapping[str, float] = field(default_factory=dict)

    @property
    def window_s(self) -> float:
        return self.window_ms / 1000

    def describe(self) -> str:
        """The configuration in plain words, one line (a gateway's in its own terms)."""
        if gateways.is_gateway(self.algorithm):
            return gateways.describe(self.algorithm, self.limit, self.window_ms, self.params)
        return f"{self.algorithm}: {self.limit} requests per {self.window_s:g} s"

    @property
    def policy(self) -> Policy:
        """The algorithm resolved with this candidate's numbers (the name stays the field a
        task carries to a worker, where a user's script is installed before it is resolved)."""
        return resolve(self.algorithm, self.limit, self.window_ms, self.params, owner=self.name)


def _limit(where: str, value: object) -> int:
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ConfigError(
            f"{where}: limit must be a whole number from 1 to {MAX_LIMIT:,}, got {value!r}"
        )
    return value


def _window_ms(where: str, value: object) -> int:
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    ms = round(seconds * 1000) if math.isfinite(seconds) else 0
    if not 1 <= ms <= MAX_WINDOW_MS:
        raise ConfigError(
            f"{where}: window must be a number of seconds from 0.001 to "
            f"{MAX_WINDOW_MS / 1000:,.0f}, got {value!r}"
        )
    return ms


def _number(where: str, key: str, text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ConfigError(f"{where}: {key} must be a number, got {text!r}")
    return int(number) if number.is_integer() and "." not in text else number


def _build(
    where: str,
    name: str,
    algorithm: object,
    values: Mapping[str, Any],
    default: Candidate | None,
) -> Candidate:
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ConfigError(
            f"{where}: unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}"
            f" (or a gateway's configuration: {', '.join(gateways.GATEWAYS)})"
        )
    if gateways.is_gateway(algorithm):
        limit, window_ms, params = gateways.translate(algorithm, where, values)
        return Candidate(name, algorithm, limit, window_ms, params)
    cls = ALGORITHMS[algorithm]
    declared = [p.name for p in cls.params_declared]
    for key in values:
        if key not in ("limit", "window", *declared):
            own = ", ".join(declared) or "none"
            raise ConfigError(
                f"{where}: unknown parameter {key!r} for {algorithm} (it takes limit, window "
                f"and its own: {own})"
            )
    if "limit" in values:
        limit = _limit(where, values["limit"])
    elif default is not None:
        limit = default.limit
    else:
        raise ConfigError(f"{where}: needs limit=N (requests per window)")
    if "window" in values:
        window_ms = _window_ms(where, values["window"])
    elif default is not None:
        window_ms = default.window_ms
    else:
        raise ConfigError(f"{where}: needs window=SECONDS")
    given = {k: v for k, v in values.items() if k not in ("limit", "window")}
    try:
        params = own_params(algorithm, cls.params_declared, given, limit, window_ms)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return Candidate(name, algorithm, limit, window_ms, params)


def parse_spec(text: str, default: Candidate | None = None, what: str = "SPEC") -> Candidate:
    """``ALGORITHM:key=value,...`` as a :class:`Candidate` (limit and window default to
    ``default``'s when it is given)."""
    spec = text.strip()
    where = f"{what} {units.shown(text)}"  # a 5000-digit SPEC is not echoed whole
    algorithm, _, rest = spec.partition(":")
    values: dict[str, Any] = {}
    gateway = gateways.is_gateway(algorithm.strip())
    for part in rest.split(",") if rest.strip() else []:
        key, sep, value = (s.strip() for s in part.partition("="))
        flag = gateway and bool(key) and not sep  # nodelay: the gateway says which it takes
        if not flag and (not sep or not key or not value):
            raise ConfigError(
                f"{where}: {part.strip()!r} is not key=value (ALGORITHM:limit=N,window=SECONDS,...)"
            )
        if key in values:
            raise ConfigError(f"{where}: {key!r} given twice")
        if gateway:  # in the gateway's own units (10r/s, 1m; None: a flag): its module reads them
            values[key] = None if flag else value
        else:
            values[key] = value if key in ("limit", "window") else _number(where, key, value)
    return _build(where, spec, algorithm.strip(), values, default)


def load_candidates(path: str | Path, default: Candidate | None = None) -> list[Candidate]:
    """The ``[[candidate]]`` tables of a TOML file."""
    path = Path(path)
    raw = read_regular(path, "candidates file", MOST_CANDIDATES_BYTES)  # not /dev/zero, no FIFO
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: a candidates file must be UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(data) - {"candidate"}
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {sorted(unknown)[0]!r} (expected [[candidate]] tables)"
        )
    tables = data.get("candidate", [])
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{path}: no [[candidate]] tables")
    out = []
    for i, table in enumerate(tables):
        where = f"{path}: candidate[{i}]"
        table = dict(table)
        algorithm = table.pop("algorithm", None)
        name = table.pop("name", None)
        if algorithm is None:
            raise ConfigError(f'{where}: needs algorithm = "NAME"')
        candidate = _build(where, "", algorithm, table, default)
        name = _table_name(algorithm, table, candidate) if name is None else name
        out.append(Candidate(str(name), *_fields(candidate)))
    return out


def _table_name(algorithm: str, table: Mapping[str, Any], candidate: Candidate) -> str:
    """The label of a table that names none: written as its SPEC would be (a gateway's in its
    own terms, flags bare; another with its limit and window first)."""
    if gateways.is_gateway(algorithm):
        return f"{algorithm}:" + ",".join(
            k if v is True else f"{k}={v}" for k, v in table.items() if v is not False
        )
    shown = ",".join(
        [f"limit={candidate.limit}", f"window={candidate.window_s:g}"]
        + [f"{k}={table[k]}" for k in table if k not in ("limit", "window")]
    )
    return f"{algorithm}:{shown}"


def _fields(c: Candidate) -> tuple[str, int, int, Mapping[str, float]]:
    return c.algorithm, c.limit, c.window_ms, c.params


def resolve_candidates(
    baseline: str | Candidate,
    candidates: Sequence[str | Candidate],
) -> tuple[Candidate, list[Candidate]]:
    """The baseline and the candidates, parsed and checked: at least one candidate, no label
    twice (the baseline's included; the same configuration under another label is allowed, and
    flips nothing)."""
    base = baseline if isinstance(baseline, Candidate) else parse_spec(baseline, what="baseline")
    out = [c if isinstance(c, Candidate) else parse_spec(c, base, "candidate") for c in candidates]
    if not out:
        raise ConfigError("candidates: give at least one (--candidate SPEC or --candidates FILE)")
    seen: set[str] = {base.name}
    for c in out:
        if c.name in seen:
            raise ConfigError(f"candidate {c.name!r}: given twice (or the same as the baseline)")
        seen.add(c.name)
    return base, out
