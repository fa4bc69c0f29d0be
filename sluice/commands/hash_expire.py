"""Hash field expiry (Redis 7.4 and 8.0): HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HTTL,
HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST, HGETDEL, HGETEX, HSETEX.

Mirrors ``t_hash.c``: ``hexpireGenericCommand`` (with ``parseHashCommandArgs``: the time
first, then NX|XX|GT|LT and ``FIELDS numfields field ...`` in any order),
``httlGenericCommand``, ``hpersistCommand``, ``hgetdelCommand``, ``hgetexCommand``,
``hsetexCommand`` (with ``parseHashFieldExpireArgs``). Errors come in Redis's order: these
commands look the key up (WRONGTYPE) before parsing, except HSETEX, which parses first.

Times: a deadline is ``now + ttl`` for the relative forms, and at most 2^46-1 ms
(``HFE_MAX_ABS_TIME_MSEC``); a deadline at or before now deletes the field at once. The clock
is read once per command (Redis's command time snapshot).

Logged effects (AOF), as Redis propagates them: HEXPIRE & co. as ``HPEXPIREAT key ms FIELDS n``
with only the fields whose deadline was set (nothing when none was), a field deleted by a
past deadline as ``HDEL``; HGETEX as ``HPEXPIREAT`` or ``HPERSIST`` over its fields, or its
HDELs only; HGETDEL as ``HDEL key field ...``; HSETEX with EX, PX or EXAT as ``HSETEX ... PXAT
ms``, and not at all when its deadline deleted the fields (their HDELs say it).

Dirty counter: each field whose deadline was set or that was deleted counts one; HPERSIST
counts one per command however many fields it persisted, as Redis does.
"""

from __future__ import annotations

from collections.abc import Callable

from sluice.storage.hashes import (
    COND_GT,
    COND_LT,
    COND_NX,
    COND_XX,
    HFE_MAX_ABS_TIME_MSEC,
    SETEX_DELETED,
    SETEX_OK,
    Hash,
    track_field_expiry,
)
from sluice.storage.keyspace import WrongTypeError

from . import errors as E
from .args import Args, parse_int
from .context import Command, Context, Reply, command_name
from .errors import CommandError, wrong_arity
from .hash_common import (
    AVOID_HASH_DEL,
    EXPIRED,
    INT_MAX,
    NO_SIGNAL,
    Effects,
    count_field_expiry,
    delete_if_empty,
    get_hash,
    get_value,
    limits,
    parse_fields_block,
    written,
)
from .hash_common import (
    OK as GET_OK,
)
from .spec import ACCESS, DELETE, DENYOOM, FAST, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at

Handler = Callable[[Context, Args], Reply]
_CONDITIONS = {b"NX": COND_NX, b"XX": COND_XX, b"GT": COND_GT, b"LT": COND_LT}


def parse_expire_time(ctx: Context, raw: bytes, seconds: bool, basetime: int) -> int:
    """``parseExpireTime``: a deadline in unix ms, checked against Redis's bounds."""
    val = parse_int(raw)
    if val < 0:
        raise CommandError(E.HFE_NEGATIVE_TIME)
    invalid = E.INVALID_EXPIRE % command_name(ctx)
    if seconds:
        if val > HFE_MAX_ABS_TIME_MSEC // 1000:
            raise CommandError(invalid)
        val *= 1000
    if val > HFE_MAX_ABS_TIME_MSEC - basetime:
        raise CommandError(invalid)
    return val + basetime


def _unknown_argument(arg: bytes) -> CommandError:
    return CommandError(E.HFE_UNKNOWN_ARGUMENT % arg.replace(b"\r", b" ").replace(b"\n", b" "))


def _deleted_by_deadline(ctx: Context, effects: Effects, field: bytes) -> None:
    """A deadline at or before now deleted ``field``: logged as HDEL, counted as expired."""
    count_field_expiry(ctx.server.stats)
    effects.field_gone(field)


# -- HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT ---------------------------------------------------


def _hexpire(ctx: Context, args: Args, relative: bool, seconds: bool) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    now = ctx.now_ms()
    when = parse_expire_time(ctx, argv[2], seconds, now if relative else 0)
    fields_at = -1
    count = 0
    cond = 0
    i = 3
    n = len(argv)
    while i < n:
        word = argv[i].upper()
        if word == b"FIELDS":
            if fields_at != -1:
                raise CommandError(E.HFE_FIELDS_TWICE)
            if i >= n - 2:
                raise CommandError(E.HFE_FIELDS_TOO_FEW)
            count = parse_int(argv[i + 1], E.HFE_NUMFIELDS_GT0)
            if not 1 <= count <= INT_MAX:
                raise CommandError(E.HFE_NUMFIELDS_GT0)
            fields_at = i
            if i + 2 + count > n:
                raise CommandError(E.HFE_WRONG_ARGS)
            i += 2 + count
            continue
        bit = _CONDITIONS.get(word)
        if bit is None:
            raise _unknown_argument(argv[i])
        cond |= bit
        i += 1
    if fields_at == -1:
        raise CommandError(E.HFE_MISSING_FIELDS)
    if bin(cond).count("1") > 1:
        raise CommandError(E.HFE_MULTIPLE_CONDITIONS)
    if h is None:
        return [-2] * count
    h.to_listpack_ex()
    replies = []
    failed: list[int] = []  # positions of the fields whose deadline was not set
    updated = deleted = 0
    effects = Effects(key)
    for pos in range(fields_at + 2, fields_at + 2 + count):
        field = argv[pos]
        res = h.set_expiry(field, when, cond, now)
        if res == SETEX_OK:
            updated += 1
        else:
            failed.append(pos)
            if res == SETEX_DELETED:
                deleted += 1
                _deleted_by_deadline(ctx, effects, field)
        replies.append(res)
    if updated:
        track_field_expiry(ctx.db, key, h)
    if updated or deleted:
        delete_if_empty(ctx, key, h)
        written(ctx, key, b"hdel" if deleted else b"hexpire", updated + deleted)  # (+"del")
        if updated:
            # Logged as the command with an absolute time in ms and only the fields it set
            # (Redis rewrites the arguments in place, keeping any condition).
            logged = list(argv)
            logged[0], logged[2] = b"HPEXPIREAT", b"%d" % when
            if failed:
                logged[fields_at + 1] = b"%d" % updated
                for pos in reversed(failed):
                    del logged[pos]
            effects.log(ctx, logged)
        else:
            effects.log(ctx)  # only HDELs
    return replies


def hexpire(ctx: Context, args: Args) -> Reply:
    return _hexpire(ctx, args, True, True)


def hpexpire(ctx: Context, args: Args) -> Reply:
    return _hexpire(ctx, args, True, False)


def hexpireat(ctx: Context, args: Args) -> Reply:
    return _hexpire(ctx, args, False, True)


def hpexpireat(ctx: Context, args: Args) -> Reply:
    return _hexpire(ctx, args, False, False)


# -- HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST -------------------------------------------


def _httl(ctx: Context, args: Args, relative: bool, seconds: bool) -> Reply:
    argv = args.argv
    h = get_hash(ctx, argv[1])
    fields = parse_fields_block(argv)
    if h is None:
        return [-2] * len(fields)
    now = ctx.now_ms()
    base = now if relative else 0
    out = []
    for field in fields:
        when = h.ttl_reply(field, now)
        if when is None:
            out.append(-1)
        elif when == -2:
            out.append(-2)
        elif seconds:
            out.append((when + 999 - base) // 1000)
        else:
            out.append(when - base)
    return out


def httl(ctx: Context, args: Args) -> Reply:
    return _httl(ctx, args, True, True)


def hpttl(ctx: Context, args: Args) -> Reply:
    return _httl(ctx, args, True, False)


def hexpiretime(ctx: Context, args: Args) -> Reply:
    return _httl(ctx, args, False, True)


def hpexpiretime(ctx: Context, args: Args) -> Reply:
    return _httl(ctx, args, False, False)


def hpersist(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    fields = parse_fields_block(argv)
    if h is None:
        return [-2] * len(fields)
    now = ctx.now_ms()
    out = [h.persist(field, now) for field in fields]
    if 1 in out:
        written(ctx, key, b"hpersist")  # one change, however many fields
    return out


# -- HGETDEL -------------------------------------------------------------------------------------


def hgetdel(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    fields = parse_fields_block(argv)
    if h is None:
        return [None] * len(fields)
    now = ctx.now_ms()
    out: list[bytes | None] = []
    expired = deleted = 0
    effects = Effects(key)
    for field in fields:
        res, value = get_value(ctx, key, h, field, now, effects, NO_SIGNAL | AVOID_HASH_DEL)
        out.append(value)
        if res == EXPIRED:
            expired += 1
        elif res == GET_OK:
            deleted += 1
            h.delete(field)
    if not expired and not deleted:
        return out
    delete_if_empty(ctx, key, h)
    written(ctx, key, (b"hexpired",) * bool(expired) + (b"hdel",) * bool(deleted), deleted)
    if deleted:
        effects.log(ctx, [b"HDEL", key, *fields])
    else:
        effects.log(ctx)
    return out


# -- HGETEX and HSETEX -----------------------------------------------------------------------------

_EX, _PX, _EXAT, _PXAT, _PERSIST, _KEEPTTL, _FXX, _FNX = 1, 2, 4, 8, 16, 32, 64, 128
_ANY_TIME = _EX | _PX | _EXAT | _PXAT
_TIME_OPTIONS = {b"EX": (_EX, True, True), b"PX": (_PX, False, True),
                 b"EXAT": (_EXAT, True, False), b"PXAT": (_PXAT, False, False)}


class _ExArgs:
    """What ``parseHashFieldExpireArgs`` finds."""

    __slots__ = ("flags", "when", "when_at", "first", "count")

    def __init__(self) -> None:
        self.flags = 0
        self.when = 0  # the deadline, unix ms
        self.when_at = -1  # its argument's position
        self.first = -1  # the first field's position
        self.count = -1


def _parse_ex_args(ctx: Context, argv: list[bytes], setex: bool, now: int) -> _ExArgs:
    p = _ExArgs()
    per_field = 2 if setex else 1
    one_expiration = E.HSETEX_ONE_EXPIRATION if setex else E.HGETEX_ONE_EXPIRATION
    n = len(argv)
    i = 2
    while i < n:
        word = argv[i].upper()
        if word == b"FIELDS":
            if p.first != -1:
                raise CommandError(E.HFE_FIELDS_TWICE)
            if i + 1 >= n:
                raise wrong_arity(command_name(ctx))
            count = parse_int(argv[i + 1], E.HFE_INVALID_NUMFIELDS)
            if not 1 <= count <= INT_MAX:
                raise CommandError(E.HFE_INVALID_NUMFIELDS)
            p.first, p.count = i + 2, count
            if p.first + count * per_field > n:
                raise CommandError(E.HFE_WRONG_ARGS)
            i = p.first + count * per_field
            continue
        option = _TIME_OPTIONS.get(word)
        if option is not None:
            bit, seconds, relative = option
            if p.flags & (_ANY_TIME | _KEEPTTL | _PERSIST):
                raise CommandError(one_expiration)
            if i >= n - 1:
                raise CommandError(E.HFE_MISSING_EXPIRE)
            p.flags |= bit
            i += 1
            p.when = parse_expire_time(ctx, argv[i], seconds, now if relative else 0)
            p.when_at = i
        elif word == b"PERSIST":
            if p.flags & (_ANY_TIME | _PERSIST):
                raise CommandError(one_expiration)
            p.flags |= _PERSIST
        elif word == b"KEEPTTL":
            if p.flags & (_ANY_TIME | _KEEPTTL):
                raise CommandError(one_expiration)
            p.flags |= _KEEPTTL
        elif word in (b"FXX", b"FNX"):
            if p.flags & (_FXX | _FNX):
                raise CommandError(E.HSETEX_ONE_CONDITION)
            p.flags |= _FXX if word == b"FXX" else _FNX
        else:
            raise _unknown_argument(argv[i])
        i += 1
    if p.first == -1:
        raise CommandError(E.HFE_MISSING_FIELDS)
    if (not setex and p.flags & (_KEEPTTL | _FXX | _FNX)) or (setex and p.flags & _PERSIST):
        raise CommandError(E.HFE_UNKNOWN)
    return p


def hgetex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    now = ctx.now_ms()
    p = _parse_ex_args(ctx, argv, False, now)
    fields = argv[p.first : p.first + p.count]
    if h is None:
        return [None] * p.count
    if p.flags:
        h.to_listpack_ex()
    when = None if p.flags & _PERSIST else p.when
    out: list[bytes | None] = []
    expired = deleted = updated = 0
    effects = Effects(key)
    for field in fields:
        res, value = get_value(ctx, key, h, field, now, effects, NO_SIGNAL | AVOID_HASH_DEL)
        out.append(value)
        if res == EXPIRED:
            expired += 1
        elif res == GET_OK and p.flags:
            done = h.set_expiry(field, when, 0, now)
            if done == SETEX_OK:
                updated += 1
            elif done == SETEX_DELETED:
                deleted += 1
                _deleted_by_deadline(ctx, effects, field)
    if not (expired or deleted or updated):
        return out
    if updated and when is not None:
        track_field_expiry(ctx.db, key, h)
    delete_if_empty(ctx, key, h)
    change = (b"hpersist" if when is None else b"hexpire") if updated else b"hdel"
    written(ctx, key, (b"hexpired",) * bool(expired) + (change,) * bool(updated or deleted),
            deleted + updated)
    if updated:
        head = ([b"HPERSIST", key] if when is None
                else [b"HPEXPIREAT", key, b"%d" % when])
        effects.log(ctx, [*head, b"FIELDS", b"%d" % p.count, *fields])
    else:
        effects.log(ctx)  # its HDELs are all there is to log
    return out


def hsetex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    now = ctx.now_ms()
    p = _parse_ex_args(ctx, argv, True, now)
    db = ctx.db
    h = db.get(key)
    if h is None:
        if p.flags & _FXX:
            return 0
        h = Hash()
        db.add(key, h)
    elif type(h) is not Hash:
        raise WrongTypeError()
    pairs = argv[p.first : p.first + 2 * p.count]
    expired = 0
    effects = Effects(key)
    if p.flags & (_FXX | _FNX):
        found = 0
        for field in pairs[0::2]:
            res, _ = get_value(ctx, key, h, field, now, effects, NO_SIGNAL | AVOID_HASH_DEL)
            exists = res == GET_OK
            expired += res == EXPIRED
            found += exists
            if (p.flags & _FXX and not exists) or (p.flags & _FNX and exists):
                break
        if (p.flags & _FNX and found) or (p.flags & _FXX and found != p.count):
            delete_if_empty(ctx, key, h)
            if expired:
                written(ctx, key, b"hexpired", 0)
                effects.log(ctx)
            return 0
    max_entries, max_value = limits(ctx)
    h.try_conversion(argv, p.first, max_entries, max_value)
    set_expiry = bool(p.flags & _ANY_TIME)
    if set_expiry:
        h.to_listpack_ex()
    keep_ttl = bool(p.flags & (_ANY_TIME | _KEEPTTL))
    updated = deleted = 0
    for i in range(0, len(pairs), 2):
        field = pairs[i]
        h.set(field, pairs[i + 1], max_entries, max_value, keep_ttl)
        if set_expiry:
            res = h.set_expiry(field, p.when, 0, now)
            if res == SETEX_OK:
                updated += 1
            elif res == SETEX_DELETED:
                deleted += 1
                _deleted_by_deadline(ctx, effects, field)
    if updated:
        track_field_expiry(db, key, h)
    delete_if_empty(ctx, key, h)
    change = (b"hdel",) if deleted else (b"hexpire",) if updated else ()
    written(ctx, key, (b"hexpired",) * bool(expired) + (b"hset",) + change, p.count)
    if deleted:
        effects.log(ctx)  # the fields' HDELs say it all
    elif set_expiry and not p.flags & _PXAT:
        logged = list(argv)
        logged[p.when_at - 1] = b"PXAT"
        logged[p.when_at] = b"%d" % p.when
        effects.log(ctx, logged)
    else:
        effects.log(ctx, argv)
    return 1


# -- the table -------------------------------------------------------------------------------

_H = A.HASH
_ON = "O(N) where N is the number of specified fields"
_COND = "[NX | XX | GT | LT]"
_FIELDS = "FIELDS numfields field [field ...]"


def _expire_row(name: str, unit: str, summary: str, handler: Handler) -> Command:
    return cmd(name, -6, WRITE | FAST, _H, key_at(1, RW | UPDATE), handler, summary,
               since="7.4.0", group="hash", complexity=_ON,
               syntax=f"key {unit} {_COND} {_FIELDS}")


def _ttl_row(name: str, summary: str, handler: Handler, tips: tuple[str, ...] = ()
             ) -> Command:
    return cmd(name, -5, READONLY | FAST, _H, key_at(1, RO | ACCESS), handler, summary,
               since="7.4.0", group="hash", complexity=_ON, syntax=f"key {_FIELDS}", tips=tips)


_NONDET = ("nondeterministic_output",)

COMMANDS: tuple[Command, ...] = (
    _expire_row("hexpire", "seconds",
                "Set expiry for hash field using relative time to expire (seconds)", hexpire),
    _expire_row("hpexpire", "milliseconds",
                "Set expiry for hash field using relative time to expire (milliseconds)",
                hpexpire),
    _expire_row("hexpireat", "unix-time-seconds",
                "Set expiry for hash field using an absolute Unix timestamp (seconds)",
                hexpireat),
    _expire_row("hpexpireat", "unix-time-milliseconds",
                "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
                hpexpireat),
    _ttl_row("httl", "Returns the TTL in seconds of a hash field.", httl, _NONDET),
    _ttl_row("hpttl", "Returns the TTL in milliseconds of a hash field.", hpttl, _NONDET),
    _ttl_row("hexpiretime", "Returns the expiration time of a hash field as a Unix timestamp, "
             "in seconds.", hexpiretime),
    _ttl_row("hpexpiretime", "Returns the expiration time of a hash field as a Unix "
             "timestamp, in msec.", hpexpiretime),
    #   name        arity  flags                    acl keys                               handler
    cmd("hpersist",   -5,  WRITE | FAST,            _H, key_at(1, RW | UPDATE),            hpersist,
        "Removes the expiration time for each specified field", since="7.4.0", group="hash",
        complexity=_ON, syntax=f"key {_FIELDS}"),
    cmd("hgetdel",    -5,  WRITE | FAST,            _H, key_at(1, RW | ACCESS | DELETE),   hgetdel,
        "Returns the value of a field and deletes it from the hash.", since="8.0.0",
        group="hash", complexity=_ON, syntax=f"key {_FIELDS}"),
    cmd("hgetex",     -5,  WRITE | FAST,            _H, key_at(1, RW | ACCESS | UPDATE),   hgetex,
        "Get the value of one or more fields of a given hash key, and optionally set their "
        "expiration.", since="8.0.0", group="hash", complexity=_ON,
        syntax="key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
        f"unix-time-milliseconds | PERSIST] {_FIELDS}"),
    cmd("hsetex",     -6,  WRITE | DENYOOM | FAST,  _H, key_at(1, RW | UPDATE),            hsetex,
        "Set the value of one or more fields of a given hash key, and optionally set their "
        "expiration.", since="8.0.0", group="hash",
        complexity="O(N) where N is the number of fields being set.",
        syntax="key [FNX | FXX] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
        "unix-time-milliseconds | KEEPTTL] FIELDS numfields field value [field value ...]"),
)
