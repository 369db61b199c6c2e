"""One command on the fake server, as fakeredis's ``_run_command`` runs it, with less work per call.

Every command the fake server runs for a limiter, a script's ``redis.call`` and the ``EVALSHA``
itself, goes through the same steps as fakeredis's ``_run_command`` (the arguments checked and
decoded, the keys read and their types checked, the command run, its reply shaped for the
protocol, its keys written back, keyspace and hash-field messages sent); what those steps work out
from the command's signature alone (which argument is a key, which a number, the command's
flags) is kept per command and number of arguments instead of being worked out on every call
(:class:`Plan`), and the notifications are skipped where their own first test would end them
(nobody subscribed, no hash-field event). A wrong arity, a Dragonfly server or a wrapped
``_run_command`` (:func:`~simulator.backends.fakeserver.stock.counted_commands`) go fakeredis's
own way.
"""

from __future__ import annotations

from typing import Any

from fakeredis import _msgs
from fakeredis._commands import Key as _Key
from fakeredis._core import _database
from fakeredis._socket import _base, _resp
from fakeredis.commands_mixins import scripting_mixin as _scripting
from fakeredis.model import Hash as _Hash

from simulator.backends.fakeserver.stock import COMPILED_MAX, PLAIN_RUN

__all__ = ["Plan", "run", "plain_list", "PLAIN_REPLIES", "LUA_LEAVES"]

#: Replies that need no shaping for RESP2 or Lua and pass every reply check (exact types: not bool).
PLAIN_REPLIES = frozenset((bytes, int, type(None)))
LUA_LEAVES = frozenset((bytes, int))


class Plan:
    """What fakeredis's ``Signature.apply`` works out again on every call of one command with
    one number of arguments: which arguments are decoded, which are keys (and whether a missing
    one answers at once, and what an absent key starts as), and the command's flags."""

    __slots__ = ("first", "keys", "no_script", "pubsub_ok", "convert", "remove_empty", "event")

    def __init__(self, sig: Any, n_args: int) -> None:
        types = list(sig.fixed)
        types += [sig.repeat[i % len(sig.repeat)] for i in range(n_args - len(types))]
        create = _msgs.FLAG_DO_NOT_CREATE not in sig.flags
        #: (position, type, is a key with an answer when missing), in argument order
        self.first: tuple[tuple[int, Any, bool], ...] = tuple(
            (i, t, isinstance(t, _Key))
            for i, t in enumerate(types)
            if (isinstance(t, _Key) and t.missing_return is not _Key.UNSPECIFIED)
            or (not isinstance(t, _Key) and t is not bytes)
        )
        #: (position, the value type a key must hold or None, whether an absent key starts empty)
        self.keys: tuple[tuple[int, Any, bool], ...] = tuple(
            (i, t.type_, create and t.type_ is not None and t.type_ is not bytes)
            for i, t in enumerate(types)
            if isinstance(t, _Key)
        )
        self.no_script = _msgs.FLAG_NO_SCRIPT in sig.flags
        self.pubsub_ok = sig.name in _base.BaseFakeSocket.ACCEPTED_COMMANDS_WHILE_PUBSUB
        self.convert = _msgs.FLAG_SKIP_CONVERT_TO_RESP2 not in sig.flags
        self.remove_empty = _msgs.FLAG_LEAVE_EMPTY_VAL not in sig.flags
        self.event = sig.name.encode()

    def apply(self, args: list[Any], db: Any) -> tuple[Any, ...]:
        """``Signature.apply`` on ``args`` (changed in place), its arity already known good."""
        for i, type_, is_key in self.first:
            if is_key:
                if args[i] not in db:
                    return (type_.missing_return,)
            else:
                args[i] = type_.decode(args[i])
        items = []
        for i, value_type, starts_empty in self.keys:
            key = args[i]
            item = _stored(db, key)
            if value_type is not None and item is not None and type(item.value) is not value_type:
                raise _scripting.SimpleError(_msgs.WRONGTYPE_MSG)
            default = value_type() if starts_empty and item is None else None
            args[i] = command_item = _database.CommandItem(key, db, item, default=default)
            items.append(command_item)
        return args, items


_PLANS: dict[tuple[Any, int], Plan | None] = {}


def _stored(db: Any, key: bytes) -> Any:
    """``db.get(key)``: the key's item, None when absent or expired (an expired one removed,
    as ``Database.__getitem__`` removes it), without a KeyError raised and caught for a key
    that is not there."""
    if type(db) is not _database.Database:
        return db.get(key)
    item = db._dict.get(key)
    if item is not None and db.expired(item):
        del db._dict[key]
        return None
    return item


def _plan(sig: Any, n_args: int) -> Plan | None:
    """The plan of ``sig`` for ``n_args`` arguments; None where the arity is wrong."""
    key = (sig, n_args)
    try:
        return _PLANS[key]
    except KeyError:
        pass
    try:
        sig.check_arity([None] * n_args, (7,))  # whether it fails, not its message
        plan: Plan | None = Plan(sig, n_args)
    except _scripting.SimpleError:
        plan = None
    if len(_PLANS) >= COMPILED_MAX * 4:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def run(socket: Any, func: Any, sig: Any, args: list[Any], from_script: bool) -> Any:
    """fakeredis's ``_run_command`` (one command, its keys written back, notifications sent)
    with what it works out per call kept per command (:class:`Plan`). A wrong arity, Dragonfly
    or a ``_run_command`` someone has wrapped (:func:`~simulator.backends.fakeserver.stock.counted_commands`) goes fakeredis's way."""
    plan = _plan(sig, len(args))
    if (
        plan is None
        or type(socket)._run_command is not PLAIN_RUN
        or socket._server.server_type == "dragonfly"
    ):
        return socket._run_command(func, sig, args, from_script)
    socket._subkey_events = []
    items: list[Any] = []
    try:
        ret = plan.apply(args, socket._db)
        if from_script and plan.no_script:
            raise _scripting.SimpleError(_msgs.COMMAND_IN_SCRIPT_MSG)
        if socket._pubsub and not plan.pubsub_ok:
            raise _scripting.SimpleError(_msgs.BAD_COMMAND_IN_PUBSUB_MSG)
        if len(ret) == 1:
            result = ret[0]
        else:
            args, items = ret
            result = func(*args)
            if type(result) not in PLAIN_REPLIES and plan.convert and not plain_list(result):
                result = _shaped(socket, result)
    except _scripting.SimpleError as exc:
        result = exc
    _written(socket, plan, items)
    return result


def plain_list(result: Any) -> bool:
    """True for a list of numbers, strings and nils: shaping and checking leave it as it is, and
    so does redis-py's reading of a reply."""
    if type(result) is not list:
        return False
    for item in result:
        if type(item) not in PLAIN_REPLIES:
            return False
    return True


def _shaped(socket: Any, result: Any) -> Any:
    """A reply shaped for the protocol in use and checked, as ``_run_command`` does."""
    resp_version = socket._resp_version
    if resp_version == 2:
        result = _resp.convert_to_resp2(result, socket.server_type, keep_doubles=False)
    if not _resp.valid_response_type(result, resp_version):
        raise AssertionError(f"Invalid response type for {result}")
    return result


def _written(socket: Any, plan: Plan, items: list[Any]) -> None:
    """The command's keys written back and its notifications sent; where nobody listens and
    no hash field expired, the notifications' own early way out, taken before the call."""
    remove_empty = plan.remove_empty
    for item in items:
        item.writeback(remove_empty_val=remove_empty)
    server = socket._server
    if server.subscribers or server.psubscribers:
        socket._keyspace_notifications(items, plan.event)
    if socket._subkey_events:
        socket._subkey_notifications(items)
        return
    for item in items:
        if isinstance(item.value, _Hash):  # a field may have expired: fakeredis says so
            socket._subkey_notifications(items)
            return
    socket._subkey_events = []
