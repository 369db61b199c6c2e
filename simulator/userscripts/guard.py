"""What a user's script may touch: its own keys, through the commands a limiter needs.

A user's script runs on the fake server, on an embedded server, and on a server the program did
not start, where other programs keep their data. So every call of the script's scripting API
first passes a guard, the same on every backend: ``redis.call`` and ``redis.pcall``, and the same
through every other name of that table (``server``, Valkey 8's name for it; ``_G.redis``,
``_G.server``). The command must be in :data:`ALLOWED` (counters, strings, expiry, hashes, sorted
sets, lists, sets, the server's clock), each of its key arguments, at the command's own key
positions, must be one of the KEYS the script was given, and no value may grow past
:data:`MAX_VALUE_BYTES` (a ``SETRANGE`` at offset 100,000,000 would make a 100 MB key; on a
server with an eviction policy, others' keys would go to make room). Anything else
(``FLUSHALL``, ``SELECT``, ``KEYS``, ``DEL`` of another key, ``RENAME`` onto one) is stopped
before the server acts, with an error that names the command and the key, and the script's line.
A stop that the script's own ``pcall`` catches stops the run all the same: the guard writes it
down, and checks after the script's last line.

The guard is a set of locals that shadow the server's names, prepended to the script on its
first line (so the line numbers in the server's messages are the script's own). It stops
mistakes; it cannot stop a script written to get round it (``loadstring`` compiles in the
global table, where the server's own names are). That is why a user's script does not run on a server the program did not start
unless asked to (:mod:`simulator.userscripts.foreign`).

Nor may a script share a key with another algorithm of the same run: on one server each would
count the other's requests. :func:`shared_key` finds such a key before the run starts, on every
backend alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "ALLOWED",
    "GUARD_MARK",
    "MAX_VALUE_BYTES",
    "MAX_REPLY_BYTES",
    "MAX_REPLY_ITEMS",
    "guarded",
    "guard_message",
    "shared_key",
]

#: The commands a script may run, by where their keys are:
#: ``first`` the first argument; ``all`` every argument; ``pairs`` every other one from the
#: first (MSET); ``two`` the first two; ``store`` a destination, a count, that many keys
#: (ZUNIONSTORE); ``none`` no key at all.
ALLOWED: dict[str, str] = {
    **dict.fromkeys(
        (
            # strings and counters
            "GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX INCR INCRBY INCRBYFLOAT DECR DECRBY "
            "APPEND STRLEN GETRANGE SETRANGE SETBIT GETBIT BITCOUNT BITPOS BITFIELD_RO "
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

#: The longest value a script may give or make one key (SET, SETRANGE's offset plus its bytes,
#: APPEND's result, SETBIT's byte) and the longest argument of any command: a counter, a time,
#: a log's member, a hash field take a few bytes each. A value that grows past it on a server
#: with others' data could take their memory (or have them evicted).
MAX_VALUE_BYTES = 65_536
#: The most bytes of one string reply, and the most elements of one array reply, a script may
#: read: a limiter reads its own counters and logs, never a whole keyspace's worth.
MAX_REPLY_BYTES = MAX_VALUE_BYTES
MAX_REPLY_ITEMS = 100_000

# The guard, on the script's first line: nothing in it may hold a newline, or the script's
# line numbers would move. It shadows every name of the server's scripting API (``redis``;
# ``server``, Valkey 8's name for the same table; ``_G.redis`` and ``_G.server``) with one
# table whose call and pcall check first. A stop is also written in ``__guard_stop``: the
# script's body runs as a function, and when it returns, a stop its own pcall caught still
# stops the run (the epilogue, after the script's last line).
_PROLOGUE = (
    "local __guard_stop = {} "
    "local redis = (function(real, given, stop) "
    "local allowed = '@ALLOWED@' "
    "local most, items = @MOST@, @ITEMS@ "
    "local own = {} for _, k in ipairs(given) do own[k] = true end "
    "local function key(cmd, args, i) local k = args[i] "
    "if k == nil then return cmd .. ' with a nil key: the declaration gives the script ' "
    ".. #given .. ' key(s), KEYS[1] to KEYS[' .. #given .. ']; a KEYS[i] beyond them is not ' "
    ".. 'declared (add it to keys = [...])' end "
    "if not own[tostring(k)] then return cmd .. ' on key ' .. string.format('%q', tostring(k)) "
    ".. ', which is not one of its KEYS' end end "
    "local function big(cmd, what, n) return cmd .. ' ' .. what .. ' of ' .. n .. ' bytes, over "
    "the ' .. most .. ' a limiter needs' end "
    "local function sizes(cmd, n, args) "
    "for i = 2, n do local a = args[i] if type(a) == 'string' and #a > most then "
    "return big(cmd, 'with an argument', #a) end end "
    "if cmd == 'SETRANGE' then local at = tonumber(args[3]) or 0 "
    "local v = tostring(args[4] or '') if at + #v > most then "
    "return big(cmd, 'making a value', at + #v) end end "
    "if cmd == 'SETBIT' then local at = tonumber(args[3]) or 0 "
    "if math.floor(at / 8) + 1 > most then return big(cmd, 'making a value', math.floor(at / 8) + 1) end end "
    "if cmd == 'APPEND' then local n0 = real.call('STRLEN', args[2]) "
    "local v = tostring(args[3] or '') if n0 + #v > most then "
    "return big(cmd, 'making a value', n0 + #v) end end "
    "return nil end "
    "local function check(n, args) local cmd = args[1] "
    "if type(cmd) ~= 'string' then return 'a command whose name is ' .. tostring(cmd) end "
    "cmd = string.upper(cmd) local where = nil "
    "if string.match(cmd, '^[%w_]+$') then where = string.match(allowed, ' ' .. cmd .. '=(%a+)') end "
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
    "return sizes(cmd, n, args) end "
    "local function read(cmd, r) "
    "if type(r) == 'string' and #r > most then return big(tostring(cmd), 'replying', #r) end "
    "if type(r) == 'table' and #r > items then return tostring(cmd) .. ' replying ' .. #r .. "
    "' elements, over the ' .. items .. ' a limiter needs' end return nil end "
    "local function stopped(why, level) stop[1] = why error('@MARK@ ' .. why, level) end "
    "local guard = {} "
    "guard.call = function(...) local why = check(select('#', ...), {...}) "
    "if why then stopped(why, 3) end local r = real.call(...) "
    "why = read(..., r) if why then stopped(why, 3) end return r end "
    "guard.pcall = function(...) local why = check(select('#', ...), {...}) "
    "if why then stopped(why, 3) end local r = real.pcall(...) "
    "why = read(..., r) if why then stopped(why, 3) end return r end "
    "return setmetatable(guard, {__index = real, __metatable = false}) end)(redis, KEYS, __guard_stop) "
    "local server, _G = redis, setmetatable({redis = redis, server = redis}, "
    "{__index = _G, __metatable = false}) "
    "local __guard_reply = (function() "
)
_EPILOGUE = (
    "\nend)() "
    "if __guard_stop[1] then error('@MARK@ ' .. __guard_stop[1] .. ' (the script caught the "
    "error with pcall; the run stops all the same)', 0) end "
    "return __guard_reply\n"
)


def guarded(source: str) -> str:
    """``source`` with the guard in front, on its first line, and its check of a stop the
    script caught after its last line."""
    # one constant string (no table built at every call), kinds by their first letter:
    # " GET=f SET=f DEL=a MSET=p RENAME=t ZUNIONSTORE=s TIME=n ... "
    table = " " + " ".join(f"{name}={where[0]}" for name, where in sorted(ALLOWED.items())) + " "
    fields = {
        "@ALLOWED@": table,
        "@MARK@": GUARD_MARK,
        "@MOST@": str(MAX_VALUE_BYTES),
        "@ITEMS@": str(MAX_REPLY_ITEMS),
    }
    head, tail = _PROLOGUE, _EPILOGUE
    for field, value in fields.items():
        head, tail = head.replace(field, value), tail.replace(field, value)
    return head + source + tail


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
