"""Key expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX XX GT LT), TTL, PTTL,
EXPIRETIME, PEXPIRETIME and PERSIST.

Mirrors Redis's expire.c (``expireGenericCommand``, ``ttlGenericCommand``,
``persistCommand``). Times are unix milliseconds from the server clock (``ctx.now_ms()``, read
once per command like Redis's command time snapshot).

* A deadline at or before now deletes the key (reply 1) and is logged as ``DEL key``; any
  other deadline is logged as ``PEXPIREAT key <ms>`` so replay is independent of when it runs.
* Options are checked before the time argument, and the time argument before the key exists,
  so the error replies come in Redis's order.
* TTL and EXPIRETIME round to the nearest second (Redis adds 500 ms before dividing).
"""

from __future__ import annotations

from .args import Args, parse_int
from .context import Command, Context, Reply, command_name
from .errors import (
    EXPIRE_GT_LT_CONFLICT,
    EXPIRE_NX_CONFLICT,
    INVALID_EXPIRE,
    UNSUPPORTED_OPTION,
    CommandError,
)
from .spec import ACCESS, FAST, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at

LLONG_MIN, LLONG_MAX = -(1 << 63), (1 << 63) - 1
_SECONDS_MAX = LLONG_MAX // 1000
_SECONDS_MIN = -(-LLONG_MIN // 1000)  # C division truncates towards zero

_NX, _XX, _GT, _LT = 1, 2, 4, 8
_OPTIONS = {b"nx": _NX, b"xx": _XX, b"gt": _GT, b"lt": _LT}


def _expire(ctx: Context, args: Args, relative: bool, seconds: bool) -> Reply:
    argv = args.argv
    key, param = argv[1], argv[2]
    flags = 0
    if len(argv) > 3:
        for opt in argv[3:]:
            bit = _OPTIONS.get(opt.lower())
            if bit is None:
                raise CommandError(UNSUPPORTED_OPTION % opt.decode("utf-8", "replace"))
            flags |= bit
        if flags & _NX and flags & (_XX | _GT | _LT):
            raise CommandError(EXPIRE_NX_CONFLICT)
        if flags & _GT and flags & _LT:
            raise CommandError(EXPIRE_GT_LT_CONFLICT)
    when = parse_int(param)
    if seconds:
        if when > _SECONDS_MAX or when < _SECONDS_MIN:
            raise CommandError(INVALID_EXPIRE % command_name(ctx))
        when *= 1000
    now = ctx.now_ms()
    if relative:
        if when > LLONG_MAX - now:
            raise CommandError(INVALID_EXPIRE % command_name(ctx))
        when += now
    db = ctx.db
    if db.get(key) is None:
        return 0
    if flags:
        current = db.get_expire(key)
        if flags & _NX and current is not None:
            return 0
        if flags & _XX and current is None:
            return 0
        # No TTL counts as an infinite one: GT never beats it, LT always does.
        if flags & _GT and (current is None or when <= current):
            return 0
        if flags & _LT and current is not None and when >= current:
            return 0
    if when <= now:
        db.delete(key)
        ctx.rewrite_argv([b"DEL", key])
    else:
        db.set_expire(key, when)
        ctx.rewrite_argv([b"PEXPIREAT", key, b"%d" % when])
    ctx.modified(key, ready=when <= now)  # only a deletion wakes blocked readers
    ctx.notify(b"del" if when <= now else b"expire", key)
    return 1


def expire(ctx: Context, args: Args) -> Reply:
    return _expire(ctx, args, True, True)


def pexpire(ctx: Context, args: Args) -> Reply:
    return _expire(ctx, args, True, False)


def expireat(ctx: Context, args: Args) -> Reply:
    return _expire(ctx, args, False, True)


def pexpireat(ctx: Context, args: Args) -> Reply:
    return _expire(ctx, args, False, False)


def _ttl(ctx: Context, args: Args, ms: bool, absolute: bool) -> Reply:
    key = args.next_key()
    db = ctx.db
    if db.peek(key) is None:
        return -2
    when = db.get_expire(key)
    if when is None:
        return -1
    ttl = when if absolute else when - ctx.now_ms()
    if ttl < 0:
        ttl = 0
    return ttl if ms else (ttl + 500) // 1000


def ttl(ctx: Context, args: Args) -> Reply:
    return _ttl(ctx, args, False, False)


def pttl(ctx: Context, args: Args) -> Reply:
    return _ttl(ctx, args, True, False)


def expiretime(ctx: Context, args: Args) -> Reply:
    return _ttl(ctx, args, False, True)


def pexpiretime(ctx: Context, args: Args) -> Reply:
    return _ttl(ctx, args, True, True)


def persist(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    db = ctx.db
    if db.get(key) is None or not db.persist(key):
        return 0
    ctx.modified(key, ready=False)
    ctx.notify(b"persist", key)
    return 1


_O1 = "O(1)"
_NONDET = ("nondeterministic_output",)
_EXPIRE_SYNTAX = "key {} [NX | XX | GT | LT]"

COMMANDS: tuple[Command, ...] = (
    #   name          arity  flags            acl         keys                           handler
    cmd("expire",       -3,  WRITE | FAST,    A.KEYSPACE, key_at(1, RW | UPDATE),        expire,
        "Sets the expiration time of a key in seconds.", complexity=_O1,
        syntax=_EXPIRE_SYNTAX.format("seconds")),
    cmd("pexpire",      -3,  WRITE | FAST,    A.KEYSPACE, key_at(1, RW | UPDATE),        pexpire,
        "Sets the expiration time of a key in milliseconds.", since="2.6.0", complexity=_O1,
        syntax=_EXPIRE_SYNTAX.format("milliseconds")),
    cmd("expireat",     -3,  WRITE | FAST,    A.KEYSPACE, key_at(1, RW | UPDATE),        expireat,
        "Sets the expiration time of a key to a Unix timestamp in seconds.", since="1.2.0",
        complexity=_O1, syntax=_EXPIRE_SYNTAX.format("unix-time-seconds")),
    cmd("pexpireat",    -3,  WRITE | FAST,    A.KEYSPACE, key_at(1, RW | UPDATE),        pexpireat,
        "Sets the expiration time of a key to a Unix timestamp in milliseconds.",
        since="2.6.0", complexity=_O1, syntax=_EXPIRE_SYNTAX.format("unix-time-milliseconds")),
    cmd("ttl",           2,  READONLY | FAST, A.KEYSPACE, key_at(1, RO | ACCESS),        ttl,
        "Returns the remaining time to live of a key, in seconds.", tips=_NONDET,
        complexity=_O1, syntax="key"),
    cmd("pttl",          2,  READONLY | FAST, A.KEYSPACE, key_at(1, RO | ACCESS),        pttl,
        "Returns the remaining time to live of a key, in milliseconds.", since="2.6.0",
        tips=_NONDET, complexity=_O1, syntax="key"),
    cmd("expiretime",    2,  READONLY | FAST, A.KEYSPACE, key_at(1, RO | ACCESS),        expiretime,
        "Returns the expiration time of a key as a Unix timestamp in seconds.",
        since="7.0.0", complexity=_O1, syntax="key"),
    cmd("pexpiretime",   2,  READONLY | FAST, A.KEYSPACE, key_at(1, RO | ACCESS),        pexpiretime,
        "Returns the expiration time of a key as a Unix timestamp in milliseconds.",
        since="7.0.0", complexity=_O1, syntax="key"),
    cmd("persist",       2,  WRITE | FAST,    A.KEYSPACE, key_at(1, RW | UPDATE),        persist,
        "Removes the expiration time of a key.", since="2.2.0", complexity=_O1, syntax="key"),
)
