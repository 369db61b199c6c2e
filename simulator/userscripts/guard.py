"""What a user's script may touch: its own keys, through the commands a limiter needs.

A user's script runs on the fake server, on an embedded server, and on a server the program did
not start, where other programs keep their data. So every ``redis.call`` and ``redis.pcall`` of
the script first passes a guard, the same on every backend: the command must be in
:data:`ALLOWED` (counters, strings, expiry, hashes, sorted sets, lists, sets, the server's clock)
and each of its key arguments, at the command's own key positions, must be one of the KEYS the
script was given. Anything else (``FLUSHALL``, ``SELECT``, ``KEYS``, ``DEL`` of another key,
``RENAME`` onto one) is stopped before the server acts, with an error that names the command and
the key, and the script's line.

The guard is a ``local redis`` that shadows the server's table, prepended to the script on its
first line (so the line numbers in the server's messages are the script's own). It stops
mistakes; it cannot stop a script written to get round it (``_G.redis`` is still there).

Nor may a script share a key with another algorithm of the same run: on one server each would
count the other's requests. :func:`shared_key` finds such a key before the run starts, on every
backend alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["ALLOWED", "GUARD_MARK", "guarded", "guard_message", "shared_key"]

#: The commands a script may run, by where their keys are:
#: ``first`` the first argument; ``all`` every argument; ``pairs`` every other one from the
#: first (MSET); ``two`` the first two; ``store`` a destination, a count, that many keys
#: (ZUNIONSTORE); ``none`` no key at all.
ALLOWED: dict[str, str] = {
    **dict.fromkeys(
        (
            # strings and counters
            "GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX INCR INCRBY INCRBYFLOAT DECR DECRBY "
            "APPEND STRLEN GETRANGE SETRANGE SETBIT GETBIT BITCOUNT BITPOS BITFIELD BITFIELD_RO "
            # expiry
            "EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME PEXPIRETIME PERSIST TTL PTTL TYPE "
            # hashes
            "HGET HSET HSETNX HMSET HMGET HGETALL HDEL HEXISTS HINCRBY HINCRBYFLOAT HKEYS HVALS "
            "HLEN HSTRLEN HRANDFIELD "
            # sorted sets
            "ZADD ZREM ZCARD ZCOUNT ZSCORE ZMSCORE ZINCRBY ZRANK ZREVRANK ZRANGE ZREVRANGE "
            "ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZLEXCOUNT ZREMRANGEBYSCORE "
            "ZREMRANGEBYRANK ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZRANDMEMBER "
            # lists
            "LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LTRIM LREM LINSERT LPOS "
            # sets, HyperLogLog, streams
            "SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER PFADD "
            "XADD XLEN XRANGE XREVRANGE XTRIM XDEL"
        ).split(),
        "first",
    ),
    **dict.fromkeys(
        "DEL UNLINK EXISTS TOUCH MGET PFCOUNT SINTER SUNION SDIFF SINTERSTORE SUNIONSTORE "
        "SDIFFSTORE".split(),
        "all",
    ),
    **dict.fromkeys("MSET MSETNX".split(), "pairs"),
    **dict.fromkeys("RENAME RENAMENX LMOVE RPOPLPUSH SMOVE ZRANGESTORE".split(), "two"),
    **dict.fromkeys("ZUNIONSTORE ZINTERSTORE ZDIFFSTORE".split(), "store"),
    **dict.fromkeys("TIME PING ECHO".split(), "none"),
}

#: What every message of the guard starts with (to tell it from the script's own errors).
GUARD_MARK = "ratelimit guard:"

# One line of Lua: nothing in it may hold a newline, or the script's line numbers would move.
_GUARD = (
    "local redis = (function(server, given) "
    "local allowed = '%(allowed)s' "
    "local own = {} for _, k in ipairs(given) do own[k] = true end "
    "local function key(cmd, args, i) local k = args[i] "
    "if k == nil then return cmd .. ' with a nil key: the declaration gives the script ' "
    ".. #given .. ' key(s), KEYS[1] to KEYS[' .. #given .. ']; a KEYS[i] beyond them is not ' "
    ".. 'declared (add it to keys = [...])' end "
    "if not own[tostring(k)] then return cmd .. ' on key ' .. string.format('%%q', tostring(k)) "
    ".. ', which is not one of its KEYS' end end "
    "local function check(n, args) local cmd = args[1] "
    "if type(cmd) ~= 'string' then return 'a command whose name is ' .. tostring(cmd) end "
    "cmd = string.upper(cmd) local where = nil "
    "if string.match(cmd, '^[%%w_]+$') then where = string.match(allowed, ' ' .. cmd .. '=(%%a+)') end "
    "if where == nil then return cmd .. ', which is not a command a limiter script may run' end "
    "if where == 'n' then return nil end "
    "local first, last, step = 2, 2, 1 "
    "if where == 't' then last = 3 end "
    "if where == 'a' then last = math.max(n, 2) end "
    "if where == 'p' then last, step = math.max(n, 2), 2 end "
    "if where == 's' then local m = tonumber(args[3]) "
    "if m == nil then return cmd .. ' without a number of keys' end "
    "local why = key(cmd, args, 2) if why then return why end "
    # a count beyond the arguments given: the first one missing is named as nil
    "first, last = 4, math.min(3 + m, n + 1) end "
    "for i = first, last, step do local why = key(cmd, args, i) if why then return why end end "
    "return nil end "
    "local guard = {} "
    "guard.call = function(...) local why = check(select('#', ...), {...}) "
    "if why then error('%(mark)s ' .. why, 2) end return server.call(...) end "
    "guard.pcall = function(...) local why = check(select('#', ...), {...}) "
    "if why then error('%(mark)s ' .. why, 2) end return server.pcall(...) end "
    "return setmetatable(guard, {__index = server}) end)(redis, KEYS); "
)


def guarded(source: str) -> str:
    """``source`` with the guard in front, on its first line."""
    # one constant string (no table built at every call), kinds by their first letter:
    # " GET=f SET=f DEL=a MSET=p RENAME=t ZUNIONSTORE=s TIME=n ... "
    table = " " + " ".join(f"{name}={where[0]}" for name, where in sorted(ALLOWED.items())) + " "
    return _GUARD % {"allowed": table, "mark": GUARD_MARK} + source


def guard_message(said: str) -> str | None:
    """What the guard stopped, from the server's error text (None: not the guard's)."""
    match = re.search(rf"(?:line (\d+): )?{re.escape(GUARD_MARK)} (.*)$", said, re.S)
    if match is None:
        return None
    line, what = match.groups()
    where = f"line {line}: " if line else ""
    return f"{where}the guard stopped {what.strip()}"


def shared_key(keys: Mapping[str, Iterable[str]]) -> str | None:
    """Why a run of these algorithms (name -> every key it will use) must not start: two of them
    would use one key; or None."""
    owner: dict[str, str] = {}
    for algorithm, names in keys.items():
        for key in names:
            first = owner.setdefault(key, algorithm)
            if first != algorithm:
                return (
                    f"{first} and {algorithm} would both use key {key!r}: on one server each "
                    "would count the other's requests. Give a script's keys a prefix of their "
                    'own in its declaration (e.g. keys = ["rl:mine:{client}:{window}"])'
                )
    return None
