"""``python -m simulator memory``: bytes per user at 5 million users, measured on a real server.

Starts an embedded Valkey (or uses ``--backend-url``), runs :mod:`simulator.studies.memory` and writes the
tables under ``data/``: per-user memory per layout, the ``used_memory`` samples behind each fit,
the big-key study and the sliding log's encoding sweep. Every table carries the server, its
version, the date and the method, so a committed table says where its figures came from.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import redis

from simulator.algorithms import ALGORITHMS
from simulator.backends import BackendError, RedisBackend, ScriptError
from simulator.cli.args import (
    UsageError,
    add_foreign_options,
    add_script_option,
    algorithm_name,
    counted,
    machine_bytes,
    out_folder,
    positive_float,
    positive_int,
    without_commands,
)
from simulator.studies import bigkey, memory

__all__ = ["register", "cmd_memory", "table_tag"]

GIB = 1 << 30
REDUCED_USERS = 250_000
REDUCED_BUDGET_GIB, FULL_BUDGET_GIB = 2.0, 11.0
GUARD_GIB = 2.0  # maxmemory on the embedded server = budget + this: a hard stop, never reached
#: Timed decisions per point of the big-key study: each one's time is kept in memory until the end.
MAX_DECISIONS = 1_000_000


def table_tag(users: int) -> str:
    """5000000 -> '5m', 250000 -> '250k', 1234 -> '1234' (names the per-user table files)."""
    for unit, size in (("m", 1_000_000), ("k", 1_000)):
        if users % size == 0:
            return f"{users // size}{unit}"
    return str(users)


def _stamp(frame: pd.DataFrame, facts: dict[str, Any], server: str, method: str) -> pd.DataFrame:
    frame = frame.copy()
    for name, value in reversed(
        [
            ("server", server),
            ("server_version", facts["server_version"]),
            ("date", pd.Timestamp.now("UTC").strftime("%Y-%m-%d")),
            ("method", method),
        ]
    ):
        frame.insert(0, name, value)
    return frame


def _check_empty(client: Any, server: str) -> None:
    if int(client.dbsize()) != 0:
        raise UsageError(
            f"{server} holds {client.dbsize()} keys; the measurement fills and empties its "
            "database (FLUSHDB), so point --backend-url at an empty database (e.g. "
            "redis://HOST:PORT/15; the server's other databases are never touched)"
        )


def _chosen_layouts(only: tuple[str, ...], mine: Sequence[str]) -> list[memory.Layout]:
    """The layouts of the algorithms ``only`` (every one when empty), each user's script in its
    steady state; an algorithm chosen that has no layout is named on stderr, and only its
    big-key row is measured."""
    every = [*memory.LAYOUTS, *(memory.Layout(n) for n in mine)]
    layouts = [la for la in every if not only or la.algorithm in only]
    for name in only:
        if not any(la.algorithm == name for la in layouts):
            print(
                f"memory: {name} has no per-user layout (the memory study does not weigh its"
                " keys); only its big-key row is measured",
                file=sys.stderr,
            )
    return layouts


def _tables(
    backend: RedisBackend, args: argparse.Namespace, server: str, users: int, budget_gib: float
) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame]:
    """The per-user table and its growth samples (None when no layout was chosen) and the
    big-key study, stamped."""
    from simulator.userscripts import user_scripts

    mine = user_scripts()  # --script: each in its steady state, at the limit
    only = tuple(args.algorithm or ())
    layouts = _chosen_layouts(only, mine)
    table = growth = None
    if layouts and not args.bigkey_only:
        table, growth = memory.measure_all(
            backend, users, int(budget_gib * GIB), server, layouts, script_users=args.script_users
        )
    chosen = list(only or (*bigkey.ALGORITHMS_STUDIED, *mine))
    skipped, why = without_commands(chosen, backend)
    if why is not None:  # INCREX on a server without it: said once, the rest still measured
        if not (set(chosen) - set(skipped)) and table is None:
            raise UsageError(why)
        print(f"memory: {why}", file=sys.stderr)
        chosen = [a for a in chosen if a not in skipped]
    study = bigkey.bigkey_study(backend, decisions=args.decisions, algorithms=chosen)
    bigkeys = _stamp(
        study,
        memory.server_facts(backend.client),
        server,
        "one user at exactly its limit per minute; server time = INFO commandstats evalsha",
    )
    return table, growth, bigkeys


def _measure(backend: RedisBackend, args: argparse.Namespace, server: str) -> list[Path]:
    client = backend.client
    _check_empty(client, server)
    users = memory.TARGET_USERS if args.full else args.users
    budget_gib = args.budget or (FULL_BUDGET_GIB if args.full else REDUCED_BUDGET_GIB)
    facts = memory.server_facts(client)
    print(
        f"{server}: {facts['server_name']} {facts['server_version']}; {users:,} users per layout, "
        f"stop loading at {budget_gib:g} GiB used_memory",
        file=sys.stderr,
    )
    only = tuple(args.algorithm or ())
    table, growth, bigkeys = _tables(backend, args, server, users, budget_gib)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tag = table_tag(users)
    frames = {}
    if table is not None and growth is not None:
        frames[out / f"memory_per_user_{tag}.csv"] = table
        frames[out / f"memory_growth_{tag}.csv"] = growth
    frames[out / "memory_bigkey.csv"] = bigkeys
    if not only or "sliding_log" in only:  # the log's encoding sweep
        frames[out / "memory_encoding.csv"] = _stamp(
            bigkey.encoding_sweep(backend, decisions=min(args.decisions, 300)),
            facts,
            server,
            "sliding log filled to N entries; MEMORY USAGE, OBJECT ENCODING, commandstats",
        )
    for path, frame in frames.items():
        if only:  # the other algorithms' rows of an earlier run stay as they were
            frame = _merged(path, frame, only)
        frame.to_csv(path, index=False)
    _print_summary(table, bigkeys)
    return list(frames)


def _merged(path: Path, new: pd.DataFrame, only: tuple[str, ...]) -> pd.DataFrame:
    """The table at ``path`` (if there is one) with ``new`` in place of its rows for the
    algorithms ``only``: a layout measured again takes its old place, a new one goes last, and
    every other row stays as it was."""
    if not path.exists():
        return new
    old = pd.read_csv(path, keep_default_na=False, na_values=[""])
    key = [c for c in ("algorithm", "state", "limit", "id_format") if c in old and c in new]
    if "algorithm" not in key:
        return new

    def groups(frame: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
        ids = frame[key].astype(str).apply(tuple, axis=1)
        return {k: frame[ids == k] for k in dict.fromkeys(ids)}

    fresh = groups(new)
    parts = []
    for k, rows in groups(old).items():
        if k in fresh:
            parts.append(fresh.pop(k))
        elif rows["algorithm"].iloc[0] not in only:
            parts.append(rows)
    parts += fresh.values()
    return pd.concat(parts, ignore_index=True)


def _print_summary(table: pd.DataFrame | None, bigkey: pd.DataFrame) -> None:
    print(
        f"{'algorithm':<16}{'state':<7}{'limit':>6} {'ids':<11}{'MEMORY USAGE':>13}"
        f"{'used_memory/user':>17}{'users':>10}{'total at 5M':>14}  encoding"
    )
    for r in () if table is None else table.itertuples():
        print(
            f"{r.algorithm:<16}{r.state:<7}{r.limit:>6} {r.id_format or '-':<11}"
            f"{r.memory_usage_bytes_per_user:>11} B{r.bytes_per_user_used_memory:>13.1f} B"
            f"{r.users_measured:>12,}{r.total_at_5m_bytes / 1e9:>10.2f} GB"
            f" {'(measured)' if r.total_at_5m_source == 'measured' else '(extrap.)'} {r.encoding}"
        )
    print(f"\n{'algorithm':<16}{'limit/min':>10}{'bytes':>10}{'server us':>11}{'after pause':>13}")
    for r in bigkey.itertuples():
        print(
            f"{r.algorithm:<16}{r.limit:>10}{r.user_bytes:>10}{r.server_us_per_decision:>11.1f}"
            f"{r.server_us_after_pause:>13.1f}"
        )


def _url_backend(url: str) -> RedisBackend:
    """The one database of a server the program did not start, refused before connecting when
    the URL names a cluster (its used_memory is split over the nodes)."""
    from simulator.backends.specs import open_url, redact

    if urlsplit(url).scheme == "redis+cluster":
        raise UsageError(
            f"--backend-url {redact(url)}: a cluster splits used_memory over its nodes; "
            "give one node as redis://HOST:PORT/DB"
        )
    try:
        client = open_url(url)
    except ValueError as exc:
        raise UsageError(f"--backend-url {exc}") from None
    return RedisBackend(client, redact(url))


def _check_foreign(args: argparse.Namespace, backend: RedisBackend) -> None:
    """A server the program did not start: refused, or each user's script rehearsed on the
    fake server first (a few users' requests; see simulator.userscripts.foreign)."""
    from simulator.cli.rehearsal import rehearse_requests
    from simulator.userscripts.foreign import check_foreign

    requests = [(f"user{u}", t_ms, 1) for u in range(20) for t_ms in range(0, 120_000, 1000)]
    rehearsal = rehearse_requests(requests, 100, 60_000)
    check_foreign(backend, args.algorithm or list(ALGORITHMS), args, rehearsal)


def cmd_memory(args: argparse.Namespace) -> int:
    from simulator.backends.embedded import EmbeddedValkey

    try:
        if args.backend_url:
            backend = _url_backend(args.backend_url)
            try:
                _check_foreign(args, backend)
                paths = _measure(backend, args, backend.name)  # the URL, its password hidden
            finally:
                backend.close()
        else:
            budget = args.budget or (FULL_BUDGET_GIB if args.full else REDUCED_BUDGET_GIB)
            machine_gib = machine_bytes() / GIB
            if budget + GUARD_GIB > machine_gib:  # refused before a server is started
                raise UsageError(
                    f"--budget {budget:g}: the embedded server may grow to the budget + "
                    f"{GUARD_GIB:g} GiB and this machine has {machine_gib:.1f} GiB; give at "
                    f"most {max(0.0, machine_gib - GUARD_GIB):.1f}"
                )
            guard = f"{int((budget + GUARD_GIB) * 1024)}mb"
            with EmbeddedValkey(maxmemory=guard, config={"maxmemory-policy": "noeviction"}) as s:
                paths = _measure(RedisBackend(s.client(), "embedded"), args, "embedded valkey")
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise BackendError(f"memory: the server went away: {exc}") from exc
    except ScriptError as exc:  # a user's script: its own message, exit status 2
        from simulator.userscripts.limiter import user_failure

        raise user_failure(exc) or exc from None
    for path in paths:
        print(f"wrote {path}")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "memory",
        help="bytes per user for every algorithm, measured on a real server",
        description="Builds one user per layout with the real scripts, weighs its keys (MEMORY "
        "USAGE), clones it under many users' keys (DUMP/RESTORE) while sampling used_memory, "
        "and writes the per-user table, the big-key study and the encoding sweep to OUT_DIR. "
        "Needs a real server: an embedded Valkey is started unless --backend-url is given.",
    )
    p.add_argument(
        "--users",
        type=positive_int,
        default=REDUCED_USERS,
        metavar="N",
        help=f"users loaded per layout (count; default {REDUCED_USERS:,}, a few minutes)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help=f"load {memory.TARGET_USERS:,} users per layout where the budget allows "
        f"(default budget {FULL_BUDGET_GIB:g} GiB; about 25 minutes on 2 cores)",
    )
    p.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        metavar="GIB",
        help="stop loading a layout before the server's used_memory passes this many GiB "
        f"(default {REDUCED_BUDGET_GIB:g}, {FULL_BUDGET_GIB:g} with --full); the rest is "
        f"extrapolated. The embedded server's maxmemory is the budget + {GUARD_GIB:g} GiB, which "
        "must fit in this machine's memory",
    )
    p.add_argument(
        "--backend-url",
        default=None,
        metavar="URL",
        help="measure on this running server (redis://HOST:PORT/DB) instead of an embedded "
        "Valkey. That database must be empty: the measurement fills it and empties it again "
        "(FLUSHDB) and never touches the server's other databases. used_memory is server-wide, "
        "so the figures are approximate if anything else changes that server's memory meanwhile",
    )
    p.add_argument(
        "--script-users",
        type=positive_int,
        default=2000,
        metavar="N",
        help="users built by the scripts themselves to check the clones against (count; "
        "default 2000)",
    )
    p.add_argument(
        "--decisions",
        type=counted(MAX_DECISIONS),
        default=1000,
        metavar="N",
        help=f"timed decisions per point of the big-key study (count, 1 to {MAX_DECISIONS:,}; "
        "default 1000)",
    )
    p.add_argument(
        "--algorithm",
        action="append",
        type=algorithm_name,
        default=None,
        metavar="NAME",
        help="measure only this algorithm (repeatable; default: all of "
        f"{', '.join(ALGORITHMS)}); its rows replace its earlier ones in the tables, the other "
        "algorithms' rows are kept",
    )
    p.add_argument(
        "--bigkey-only",
        action="store_true",
        help="run only the big-key study (bytes per user and server us per decision at 5, 100 "
        "and 10,000 requests/min, all algorithms in one run) and the log's encoding sweep",
    )
    p.add_argument(
        "--out-dir",
        type=out_folder,
        default="data",
        metavar="DIR",
        help="output folder (default data; made if missing, checked before anything is measured)",
    )
    add_script_option(p)
    add_foreign_options(p)
    p.set_defaults(func=cmd_memory)
