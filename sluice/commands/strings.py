"""String commands that read or replace a whole value: GET, SET, SETNX, SETEX, PSETEX, MGET,
MSET, MSETNX, MSETEX, GETSET, GETDEL, GETEX, DIGEST and DELEX. The commands that edit a value
in place or count with it (APPEND, SETRANGE, GETRANGE, INCR ..., LCS) are in ``string_edits.py``.

Mirrors Redis's t_string.c (``setGenericCommand``, ``parseExtendedStringArgumentsOrReply``,
``msetGenericCommand``, ``getexCommand``, ``getdelCommand``, the 8.4 ``digestCommand`` and
``delexCommand``). Encodings are in ``storage/strings.py``; handlers parse, call the keyspace
and build the reply.

GET and plain ``SET key value`` are the server's hottest paths (benchmarked): they index
``argv`` directly and do nothing else. Writes that depend on the time are logged in absolute
form (``SET ... PXAT``, ``PEXPIREAT``), as Redis propagates them, so an AOF replays to the
same state.
"""

from __future__ import annotations

from xxhash import xxh3_64_intdigest

from sluice.protocol import OK
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.rawstring import RawString

from .args import Args, parse_int
from .context import Command, Context, Reply, command_name
from .errors import (
    DELEX_CONDITION,
    DELEX_NOT_STRING,
    DIGEST_LENGTH,
    INVALID_EXPIRE,
    MSETEX_NUMKEYS,
    MSETEX_PAIRS,
    SYNTAX,
    CommandError,
    wrong_arity,
)
from .spec import (
    ACCESS,
    DELETE,
    DENYOOM,
    FAST,
    INSERT,
    OW,
    READONLY,
    RO,
    RW,
    UPDATE,
    WRITE,
    A,
    K,
    cmd,
    key_at,
    keys_counted,
)

LLONG_MIN, LLONG_MAX = -(1 << 63), (1 << 63) - 1

# SET / GETEX / MSETEX option bits (Redis's OBJ_* flags)
_NX, _XX, _GET, _KEEPTTL, _PERSIST = 1, 2, 4, 8, 16
_EX, _PX, _EXAT, _PXAT = 32, 64, 128, 256
_IFEQ, _IFNE, _IFDEQ, _IFDNE = 512, 1024, 2048, 4096  # Redis 8.4 SET conditions
_EXPIRES = _EX | _PX | _EXAT | _PXAT
_IFS = _IFEQ | _IFNE | _IFDEQ | _IFDNE
_CONDITIONS = _NX | _XX | _IFS
_SET, _GETEX, _MSETEX = 1, 2, 4  # which commands take an option
# For each option: its bit, the bits it cannot be combined with, whether it takes a value,
# and the commands that accept it. As in Redis 8.6, NX and XX only exclude each other, and
# an IF* condition excludes every condition but itself.
_OPTIONS: dict[bytes, tuple[int, int, bool, int]] = {
    #           bit       conflicts                          value  commands
    b"NX":      (_NX,      _XX,                               False, _SET | _MSETEX),
    b"XX":      (_XX,      _NX,                               False, _SET | _MSETEX),
    b"GET":     (_GET,     0,                                 False, _SET),
    b"KEEPTTL": (_KEEPTTL, _PERSIST | _EXPIRES,               False, _SET | _MSETEX),
    b"PERSIST": (_PERSIST, _EXPIRES | _KEEPTTL,               False, _GETEX),
    b"EX":      (_EX,      _KEEPTTL | _PERSIST | _EXAT | _PX | _PXAT, True, _SET | _GETEX | _MSETEX),
    b"PX":      (_PX,      _KEEPTTL | _PERSIST | _EX | _EXAT | _PXAT, True, _SET | _GETEX | _MSETEX),
    b"EXAT":    (_EXAT,    _KEEPTTL | _PERSIST | _EX | _PX | _PXAT,   True, _SET | _GETEX | _MSETEX),
    b"PXAT":    (_PXAT,    _KEEPTTL | _PERSIST | _EX | _EXAT | _PX,   True, _SET | _GETEX | _MSETEX),
    b"IFEQ":    (_IFEQ,    _CONDITIONS & ~_IFEQ,              True,  _SET),
    b"IFNE":    (_IFNE,    _CONDITIONS & ~_IFNE,              True,  _SET),
    b"IFDEQ":   (_IFDEQ,   _CONDITIONS & ~_IFDEQ,             True,  _SET),
    b"IFDNE":   (_IFDNE,   _CONDITIONS & ~_IFDNE,             True,  _SET),
}
_EXPIRE_POS = -1  # no EX/PX among the options


def _parse_options(argv: list[bytes], start: int, command: int
                   ) -> tuple[int, bytes | None, bytes | None, int]:
    """Redis's ``parseExtendedStringArgumentsOrReply``: (flags, expire argument, match value
    of an IF* condition, position of a relative EX/PX option or -1)."""
    flags = 0
    expire = match = None
    relative_at = _EXPIRE_POS
    j = start
    n = len(argv)
    while j < n:
        spec = _OPTIONS.get(argv[j].upper())
        if spec is None:
            raise CommandError(SYNTAX)
        bit, conflicts, takes_value, commands = spec
        if flags & conflicts or not commands & command:
            raise CommandError(SYNTAX)
        if takes_value:
            if j == n - 1:
                raise CommandError(SYNTAX)
            j += 1
            if bit & _IFS:
                match = argv[j]
            else:
                expire = argv[j]
                relative_at = j - 1 if bit & (_EX | _PX) else _EXPIRE_POS
        flags |= bit
        j += 1
    return flags, expire, match, relative_at


def digest(value: bytes) -> bytes:
    """DIGEST of a string: XXH3-64 of its bytes as 16 lower-case hex digits (Redis 8.4)."""
    return b"%016x" % xxh3_64_intdigest(value)


def _digest_arg(raw: bytes) -> bytes:
    if len(raw) != 16:
        raise CommandError(DIGEST_LENGTH)
    return raw.lower()


def _condition_holds(flags: int, current: bytes, match: bytes) -> bool:
    """SET / DELEX IFEQ, IFNE, IFDEQ, IFDNE against the current string value."""
    if flags & (_IFEQ | _IFNE):
        return (current == match) == bool(flags & _IFEQ)
    return (digest(current) == _digest_arg(match)) == bool(flags & _IFDEQ)


def _expire_ms(ctx: Context, raw: bytes, flags: int) -> int:
    """The absolute deadline for EX/PX/EXAT/PXAT ``raw`` (Redis's getExpireMillisecondsOrReply)."""
    ms = parse_int(raw)
    seconds = flags & (_EX | _EXAT)
    if ms <= 0 or (seconds and ms > LLONG_MAX // 1000):
        raise CommandError(INVALID_EXPIRE % command_name(ctx))
    if seconds:
        ms *= 1000
    if flags & (_EX | _PX):
        ms += ctx.now_ms()
        if ms > LLONG_MAX:  # C would wrap negative: Redis reports it the same way
            raise CommandError(INVALID_EXPIRE % command_name(ctx))
    return ms


def string_value(value: object) -> bytes | None:
    """``value`` if it is a string (or absent); WRONGTYPE otherwise. A string being edited
    in place by the bit commands (``RawString``) is read as a copy of its bytes."""
    if value is None or type(value) is bytes:
        return value
    if type(value) is RawString:
        return bytes(value.buf)
    raise WrongTypeError()


# -- GET / SET and friends --------------------------------------------------------------------


def get(ctx: Context, args: Args) -> Reply:
    value = ctx.db.get(args.argv[1])
    if value is None or type(value) is bytes:
        return value
    return string_value(value)


def set_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) == 3:  # the hot path: SET key value (ctx.modified without its indirection)
        key = argv[1]
        db = ctx.db
        db.set(key, argv[2])
        server = ctx.server
        server.key_modified(db, key)
        if server.notify_flags:
            ctx.notify(b"set", key)
        return OK
    flags, expire, match, _ = _parse_options(argv, 3, _SET)
    return _set_generic(ctx, argv[1], argv[2], flags, expire, OK, None, match)


def _set_generic(ctx: Context, key: bytes, value: bytes, flags: int, expire: bytes | None,
                 ok: Reply, abort: Reply, match: bytes | None = None) -> Reply:
    """Redis's ``setGenericCommand``: ``ok``/``abort`` are the replies without GET."""
    when = _expire_ms(ctx, expire, flags) if expire is not None else None
    db = ctx.db
    # One touch of the key, as Redis's lookupKeyWrite: ``db.set`` does it (GET reads it
    # once more, as getGenericCommand does).
    current = db.get(key) if flags & _GET else db.find(key)
    found = current is not None
    if flags & _GET:
        db.note_read(key, found)  # GET reads the key as GET does (Redis's getGenericCommand)
    old = string_value(current) if flags & _GET else None
    if (flags & _NX and found) or (flags & (_XX | _IFEQ | _IFDEQ) and not found):
        return old if flags & _GET else abort
    if found and flags & _IFS:
        # Only when the key exists: IFNE / IFDNE on a missing key set it. Redis looks it up
        # again, for reading (a keyspace hit).
        db.note_read(key, True)
        current = string_value(current)
        assert match is not None and current is not None
        if not _condition_holds(flags, current, match):
            return old if flags & _GET else abort
    db.set(key, value, keep_ttl=bool(flags & _KEEPTTL))
    if when is not None:
        db.set_expire(key, when)
        ctx.rewrite_argv([b"SET", key, value, b"PXAT", b"%d" % when])
    elif flags & (_GET | _IFS):
        # Logged as the plain SET it became (the condition held here, and GET reads only).
        ctx.rewrite_argv([b"SET", key, value, *([b"KEEPTTL"] if flags & _KEEPTTL else [])])
    ctx.modified(key)
    ctx.notify(b"set", key)
    if when is not None:
        ctx.notify(b"expire", key)
    return old if flags & _GET else ok


def setnx(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _set_generic(ctx, argv[1], argv[2], _NX, None, 1, 0)


def setex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _set_generic(ctx, argv[1], argv[3], _EX, argv[2], OK, None)


def psetex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _set_generic(ctx, argv[1], argv[3], _PX, argv[2], OK, None)


def mget(ctx: Context, args: Args) -> Reply:
    get_value = ctx.db.get
    out = []
    for key in args.rest():
        value = get_value(key)
        out.append(value if type(value) is bytes
                   else bytes(value.buf) if type(value) is RawString else None)
    return out


def mset(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) % 2 == 0:
        raise wrong_arity("mset")
    db = ctx.db
    for i in range(1, len(argv), 2):
        key = argv[i]
        db.set(key, argv[i + 1])
        ctx.modified(key)
        ctx.notify(b"set", key)
    return OK


def msetnx(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) % 2 == 0:
        raise wrong_arity("msetnx")
    db = ctx.db
    for i in range(1, len(argv), 2):
        if db.get(argv[i]) is not None:
            return 0
    for i in range(1, len(argv), 2):
        key = argv[i]
        db.set(key, argv[i + 1])
        ctx.modified(key)
        ctx.notify(b"set", key)
    return 1


def msetex(ctx: Context, args: Args) -> Reply:
    """MSETEX numkeys key value [key value ...] [NX | XX] [EX | PX | EXAT | PXAT | KEEPTTL]
    (Redis 8.4): all keys or none (NX / XX are checked on every key first), one deadline."""
    argv = args.argv
    n = parse_int(argv[1], MSETEX_NUMKEYS)
    if not 1 <= n <= 2**31 - 1:
        raise CommandError(MSETEX_NUMKEYS)
    if 2 * n + 2 > len(argv):
        raise CommandError(MSETEX_PAIRS)
    flags, expire, _, relative_at = _parse_options(argv, 2 * n + 2, _MSETEX)
    when = _expire_ms(ctx, expire, flags) if expire is not None else None
    db = ctx.db
    pairs = range(2, 2 * n + 2, 2)
    if flags & (_NX | _XX):
        for i in pairs:
            if (db.get(argv[i]) is not None) == bool(flags & _NX):
                return 0
    keep_ttl = bool(flags & _KEEPTTL)
    for i in pairs:
        key = argv[i]
        db.set(key, argv[i + 1], keep_ttl=keep_ttl)
        ctx.modified(key)
        if when is not None and not keep_ttl:
            db.set_expire(key, when)
            ctx.notify(b"expire", key)
        ctx.notify(b"set", key)
    if when is not None and relative_at != _EXPIRE_POS:
        # A relative EX / PX is logged as the PXAT deadline it gave, as Redis propagates it.
        logged = argv[:]
        logged[relative_at : relative_at + 2] = [b"PXAT", b"%d" % when]
        ctx.rewrite_argv(logged)
    return 1


def digest_(ctx: Context, args: Args) -> Reply:
    value = string_value(ctx.db.get(args.argv[1]))
    return None if value is None else digest(value)


def delex(ctx: Context, args: Args) -> Reply:
    """DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest] (Redis 8.4)."""
    argv = args.argv
    key = argv[1]
    db = ctx.db
    if len(argv) == 2:  # DEL itself (no read lookup)
        if db.delete(key):
            ctx.modified(key)
            ctx.notify(b"del", key)
            return 1
        return 0
    if len(argv) != 4:
        raise wrong_arity("delex")
    current = db.get(key)
    if current is None:
        return 0
    if type(current) is RawString:
        current = bytes(current.buf)
    elif type(current) is not bytes:
        raise CommandError(DELEX_NOT_STRING)
    flag = {b"IFEQ": _IFEQ, b"IFNE": _IFNE, b"IFDEQ": _IFDEQ,
            b"IFDNE": _IFDNE}.get(argv[2].upper())
    if flag is None:
        raise CommandError(DELEX_CONDITION)
    if not _condition_holds(flag, current, argv[3]):
        return 0
    db.delete(key)
    ctx.modified(key)
    ctx.notify(b"del", key)
    ctx.rewrite_argv([b"DEL", key])
    return 1


def getset(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    db = ctx.db
    old = string_value(db.get(key))
    db.set(key, argv[2])
    ctx.modified(key)
    ctx.notify(b"set", key)
    ctx.rewrite_argv([b"SET", key, argv[2]])
    return old


def getdel(ctx: Context, args: Args) -> Reply:
    key = args.argv[1]
    db = ctx.db
    old = string_value(db.get(key))
    if old is not None:
        db.delete(key)
        ctx.modified(key)
        ctx.notify(b"del", key)
        ctx.rewrite_argv([b"DEL", key])
    return old


def getex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    flags, expire, _, _ = _parse_options(argv, 2, _GETEX)
    db = ctx.db
    value = string_value(db.get(key))
    if value is None:
        return None
    when = _expire_ms(ctx, expire, flags) if expire is not None else None
    if when is not None:
        if flags & (_EXAT | _PXAT) and when <= ctx.now_ms():
            db.delete(key)
            ctx.rewrite_argv([b"DEL", key])
            ctx.modified(key)
            ctx.notify(b"del", key)
        else:
            db.set_expire(key, when)
            ctx.rewrite_argv([b"PEXPIREAT", key, b"%d" % when])
            ctx.modified(key)
            ctx.notify(b"expire", key)
    elif flags & _PERSIST and db.persist(key):
        ctx.rewrite_argv([b"PERSIST", key])
        ctx.modified(key)
        ctx.notify(b"persist", key)
    return value


_O1 = "O(1)"
_SET_KEYS = key_at(1, RW | ACCESS | UPDATE | K.VARIABLE_FLAGS)
_INCR_KEYS = key_at(1, RW | ACCESS | UPDATE)

COMMANDS: tuple[Command, ...] = (
    #   name          arity  flags                    acl       keys                     handler
    cmd("get",           2,  READONLY | FAST,         A.STRING, key_at(1, RO | ACCESS),  get,
        "Returns the string value of a key.", group="string", complexity=_O1, syntax="key"),
    cmd("set",          -3,  WRITE | DENYOOM,         A.STRING, _SET_KEYS,               set_,
        "Sets the string value of a key, ignoring its type; the key is created if missing.",
        group="string", complexity=_O1,
        syntax="key value [NX | XX | IFEQ ifeq-value | IFNE ifne-value | "
        "IFDEQ ifdeq-digest | IFDNE ifdne-digest] [GET] [EX seconds | PX milliseconds | "
        "EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    cmd("setnx",         3,  WRITE | DENYOOM | FAST,  A.STRING, key_at(1, OW | INSERT),  setnx,
        "Sets the string value of a key only when the key doesn't exist.", group="string",
        complexity=_O1, syntax="key value"),
    cmd("setex",         4,  WRITE | DENYOOM,         A.STRING, key_at(1, OW | UPDATE),  setex,
        "Sets the string value and expiration time of a key (seconds).", group="string",
        since="2.0.0", complexity=_O1, syntax="key seconds value"),
    cmd("psetex",        4,  WRITE | DENYOOM,         A.STRING, key_at(1, OW | UPDATE),  psetex,
        "Sets the string value and expiration time of a key (milliseconds).", group="string",
        since="2.6.0", complexity=_O1, syntax="key milliseconds value"),
    cmd("mget",         -2,  READONLY | FAST,         A.STRING, key_at(1, RO | ACCESS, last=-1), mget,
        "Returns the string values of one or more keys.", group="string",
        tips=("request_policy:multi_shard",),
        complexity="O(N) where N is the number of keys to retrieve.", syntax="key [key ...]"),
    cmd("msetex",       -4,  WRITE | DENYOOM,         A.STRING,
        keys_counted(1, OW | UPDATE, firstkey=1, step=2), msetex,
        "Atomically sets multiple string keys with a shared expiration in a single operation.",
        group="string", since="8.4.0",
        complexity="O(N) where N is the number of keys to set.",
        syntax="numkeys key value [key value ...] [NX | XX] [EX seconds | PX milliseconds | "
        "EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    cmd("digest",        2,  READONLY | FAST,         A.STRING, key_at(1, RO | ACCESS),  digest_,
        "Returns the XXH3 hash of a string value as 16 hexadecimal digits.",
        group="string", since="8.4.0",
        complexity="O(N) where N is the length of the string value.", syntax="key"),
    cmd("delex",        -2,  WRITE | FAST,            A.STRING,
        key_at(1, RW | DELETE | K.VARIABLE_FLAGS), delex,
        "Deletes a key, optionally only if its string value or digest matches a condition.",
        group="string", since="8.4.0",
        complexity="O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the "
        "string value.",
        syntax="key [IFEQ ifeq-value | IFNE ifne-value | IFDEQ ifdeq-digest | "
        "IFDNE ifdne-digest]", reads=True),
    cmd("mset",         -3,  WRITE | DENYOOM,         A.STRING, key_at(1, OW | UPDATE, last=-1, step=2), mset,
        "Sets the string values of one or more keys, creating them as needed.",
        group="string", since="1.0.1",
        tips=("request_policy:multi_shard", "response_policy:all_succeeded"),
        complexity="O(N) where N is the number of keys to set.", syntax="key value [key value ...]"),
    cmd("msetnx",       -3,  WRITE | DENYOOM,         A.STRING, key_at(1, OW | INSERT, last=-1, step=2), msetnx,
        "Sets the string values of keys only when none of them exists.", group="string",
        since="1.0.1", tips=("request_policy:multi_shard", "response_policy:agg_min"),
        complexity="O(N) where N is the number of keys to set.", syntax="key value [key value ...]"),
    cmd("getset",        3,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              getset,
        "Returns the previous string value of a key after setting it to a new one.",
        group="string", complexity=_O1, syntax="key value", doc_flags=("deprecated",), reads=True),
    cmd("getdel",        2,  WRITE | FAST,            A.STRING, key_at(1, RW | ACCESS | DELETE), getdel,
        "Returns the string value of a key and deletes the key.", group="string",
        since="6.2.0", complexity=_O1, syntax="key", reads=True),
    cmd("getex",        -2,  WRITE | FAST,            A.STRING, _INCR_KEYS,              getex,
        "Returns the string value of a key after changing or removing its expiration time.",
        group="string", since="6.2.0", complexity=_O1,
        syntax="key [EX seconds | PX milliseconds | EXAT unix-time-seconds | "
        "PXAT unix-time-milliseconds | PERSIST]", reads=True),
)
