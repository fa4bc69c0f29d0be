"""Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HGETALL, HKEYS, HVALS, HLEN, HEXISTS, HDEL,
HINCRBY, HINCRBYFLOAT, HSTRLEN, HRANDFIELD, HSCAN (Redis's ``t_hash.c``; field expiry is in
``hash_expire.py``).

Handlers parse, call ``storage.hashes.Hash`` and build the reply; argument checks run in
Redis's order (HINCRBY parses its increment before it looks the key up, HSCAN its cursor
before and its options after). Reads honour field TTLs as Redis 8.6 does: HGET, HMGET,
HEXISTS, HSTRLEN, HINCRBY* delete an expired field they touch (``hash_common.get_value``);
HGETALL, HKEYS, HVALS and HSCAN skip expired fields without deleting them; HLEN counts them
until they are deleted; HRANDFIELD first deletes every due field. A command that removes a
hash's last field deletes the key.

What is logged (AOF) is what Redis propagates: the command itself, except HINCRBYFLOAT, logged
as ``HSETEX key KEEPTTL FIELDS 1 field value`` with the value it computed, and field
expiries, logged as ``HDEL`` when they happen. The dirty counter moves as Redis's does (HSET
counts every pair given, HDEL every field removed, a lazy expiry nothing).

HSET and HGET are benchmarked hot paths: they index ``argv`` and the hash's dict directly
when no field has a TTL.

Deviations: a hashtable's HGETALL/HSCAN order is the dict's (insertion order) where Redis's
follows its hash table; both are unspecified. HSCAN cursors over a hashtable are Sluice's own
(``storage.hashes.FieldOrder``) with Redis's guarantees. HRANDFIELD's picks are random, as
Redis's, from Python's generator.
"""

from __future__ import annotations

from fractions import Fraction

from sluice.protocol import OK, Map
from sluice.storage.glob import compile_pattern
from sluice.storage.hashes import (
    HASHTABLE,
    LISTPACK_EX,
    PACK_MAX_FIELDS,
    Hash,
    PackedFields,
    shared_field,
)
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.strings import LongDouble, parse_long_double, string2ll

from . import errors as E
from .args import Args, capped_repeats, parse_int
from .context import Command, Context, Reply, command_name
from .errors import SYNTAX, CommandError, wrong_arity
from .hash_common import (
    EXPIRED_HASH,
    LONG_MAX,
    NO_NOTIFICATION,
    Effects,
    expire_all_due,
    get_hash,
    get_or_create,
    get_value,
    limits,
    written,
)
from .hash_common import (
    OK as GET_OK,
)
from .keyspace import parse_cursor
from .spec import (
    ACCESS,
    DELETE,
    DENYOOM,
    FAST,
    INSERT,
    READONLY,
    RO,
    RW,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
)

LLONG_MIN = -(1 << 63)

# -- writes ----------------------------------------------------------------------------------


def _set_pairs(ctx: Context, argv: list[bytes]) -> int:
    """HSET / HMSET: store ``argv[2:]`` pairs; the number of new fields."""
    n = len(argv)
    if n & 1:
        raise wrong_arity(command_name(ctx))
    key = argv[1]
    db = ctx.db
    h = db.get(key)
    if h is None:
        h = Hash()
        db.add(key, h)
    elif type(h) is not Hash:
        raise WrongTypeError()
    cfg = ctx.server.config
    max_entries, max_value = cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value
    if h.enc != HASHTABLE:
        h.try_conversion(argv, 2, max_entries, max_value)
    created = 0
    if isinstance(h.d, PackedFields) and n == 4:  # one pair into a small packed listpack
        created = 1 if h.set(argv[2], argv[3], max_entries, max_value) else 0
    elif h.ttl is None and h.order is None and h.enc != LISTPACK_EX:  # the hot path
        # try_conversion has checked every string's length: only the count can convert
        d = h.unpack()
        small = h.enc != HASHTABLE
        for i in range(2, n, 2):
            field = argv[i]
            if field not in d:
                created += 1
                if small and len(d) >= PACK_MAX_FIELDS:  # too big to pack: share the name
                    field = shared_field(field)
            d[field] = argv[i + 1]
        if small:
            if len(d) > max_entries:
                h.convert_to_hashtable()
            else:
                h.maybe_pack()
    else:
        put = h.set
        for i in range(2, n, 2):
            created += put(argv[i], argv[i + 1], max_entries, max_value)
    written(ctx, key, b"hset", (n - 2) // 2)
    return created


def hset(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) == 4:  # one pair into a plain hashtable: the benchmarked path, inlined
        key = argv[1]
        h = ctx.db.get(key)
        if (type(h) is Hash and h.enc == HASHTABLE and h.ttl is None and h.order is None):
            d = h.unpack()  # (a hashtable is a dict already)
            field = argv[2]
            created = field not in d
            d[field] = argv[3]
            written(ctx, key, b"hset")
            return 1 if created else 0
    return _set_pairs(ctx, argv)


def hmset(ctx: Context, args: Args) -> Reply:
    _set_pairs(ctx, args.argv)
    return OK


def hsetnx(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key, field = argv[1], argv[2]
    h = get_or_create(ctx, key)
    effects = Effects(key)
    res, _ = get_value(ctx, key, h, field, ctx.now_ms(), effects)
    if res == GET_OK:
        effects.log(ctx)
        return 0
    if res == EXPIRED_HASH:  # its last field expired and took the key: start afresh
        h = get_or_create(ctx, key)
    max_entries, max_value = limits(ctx)
    h.try_conversion(argv, 2, max_entries, max_value)
    h.set(field, argv[3], max_entries, max_value)
    written(ctx, key, b"hset")
    effects.log(ctx, argv)
    return 1


def hdel(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    if h is None:
        return 0
    deleted = 0
    for field in argv[2:]:
        if h.delete(field):
            deleted += 1
            if not h.d:
                ctx.db.delete(key)
                break
    if deleted:
        written(ctx, key, b"hdel", deleted)
    return deleted


def _field_for_update(ctx: Context, key: bytes, field: bytes, effects: Effects
                      ) -> tuple[Hash, bytes | None]:
    """HINCRBY*'s lookup: the hash (created if absent) and the field's live value."""
    h = get_or_create(ctx, key)
    res, value = get_value(ctx, key, h, field, ctx.now_ms(), effects)
    if res == EXPIRED_HASH:
        h = get_or_create(ctx, key)
    return h, value


def hincrby(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key, field = argv[1], argv[2]
    incr = parse_int(argv[3])
    effects = Effects(key)
    h, current = _field_for_update(ctx, key, field, effects)
    if current is None:
        value = 0
    else:
        parsed = string2ll(current)
        if parsed is None:
            raise CommandError(E.HASH_NOT_INTEGER)
        value = parsed
    new = value + incr
    if not LLONG_MIN <= new <= LONG_MAX:
        raise CommandError(E.INCR_OVERFLOW)
    max_entries, max_value = limits(ctx)
    h.set(field, b"%d" % new, max_entries, max_value, keep_ttl=True)
    written(ctx, key, b"hincrby")
    if effects.ops:  # a field expired on the way: its HDEL first
        effects.log(ctx, argv)
    return new


def hincrbyfloat(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key, field = argv[1], argv[2]
    incr = parse_long_double(argv[3])
    if incr is None:
        raise CommandError(E.NOT_FLOAT)
    if incr.inf:
        raise CommandError(E.INCR_NAN_OR_INFINITY)
    effects = Effects(key)
    h, current = _field_for_update(ctx, key, field, effects)
    if current is None:
        value = LongDouble(Fraction(0))
    else:
        parsed = parse_long_double(current)
        if parsed is None:
            raise CommandError(E.HASH_NOT_FLOAT)
        value = parsed
    try:
        total = value + incr
    except ArithmeticError:
        raise CommandError(E.INCR_NAN) from None
    if total.inf:
        raise CommandError(E.INCR_NAN)
    new = total.format_human()
    max_entries, max_value = limits(ctx)
    h.set(field, new, max_entries, max_value, keep_ttl=True)
    written(ctx, key, b"hincrbyfloat")
    # Logged with the value computed here, keeping the field's TTL (as Redis propagates it).
    effects.log(ctx, [b"HSETEX", key, b"KEEPTTL", b"FIELDS", b"1", field, new])
    return new


# -- reads -----------------------------------------------------------------------------------


def hget(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    h = ctx.db.get(argv[1])
    if h is None:
        return None
    if type(h) is not Hash:
        raise WrongTypeError()
    if not h.ttl:
        return h.d.get(argv[2])
    return _checked_value(ctx, argv[1], h, argv[2])[1]


def _checked_value(ctx: Context, key: bytes, h: Hash, field: bytes) -> tuple[int, bytes | None]:
    """A read of one field that may expire it (and log that)."""
    effects = Effects(key)
    found = get_value(ctx, key, h, field, ctx.now_ms(), effects)
    if effects.ops:
        effects.log(ctx)
    return found


def hmget(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    h = get_hash(ctx, key)
    if h is None:
        return [None] * (len(argv) - 2)
    if not h.ttl:
        get = h.d.get
        return [get(f) for f in argv[2:]]
    now = ctx.now_ms()
    out: list[bytes | None] = []
    gone = False
    effects = Effects(key)
    for field in argv[2:]:
        if gone:  # its last field expired: the key is gone
            out.append(None)
            continue
        res, value = get_value(ctx, key, h, field, now, effects, NO_NOTIFICATION)
        gone = res == EXPIRED_HASH
        out.append(value)
    if effects.ops:
        effects.log(ctx)
        ctx.notify(b"hexpired", key)  # one event for the fields that expired (Redis's HMGET)
        if gone:
            ctx.notify(b"del", key)
    return out


def _all(ctx: Context, args: Args, keys: bool, values: bool) -> Reply:
    h = get_hash(ctx, args.argv[1])
    if h is None:
        return Map() if keys and values else []
    if not h.ttl:
        d = h.d
        if keys and values:
            return d.to_dict(Map()) if isinstance(d, PackedFields) else Map(d)
        return list(d) if keys else list(d.values())
    items = list(h.live_items(ctx.now_ms()))
    if keys and values:
        return Map(items)
    return [f for f, _ in items] if keys else [v for _, v in items]


def hgetall(ctx: Context, args: Args) -> Reply:
    return _all(ctx, args, True, True)


def hkeys(ctx: Context, args: Args) -> Reply:
    return _all(ctx, args, True, False)


def hvals(ctx: Context, args: Args) -> Reply:
    return _all(ctx, args, False, True)


def hlen(ctx: Context, args: Args) -> Reply:
    h = get_hash(ctx, args.argv[1])
    return 0 if h is None else len(h.d)  # fields expired but not yet deleted count, as in Redis


def hexists(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    h = get_hash(ctx, argv[1])
    if h is None:
        return 0
    return 1 if _checked_value(ctx, argv[1], h, argv[2])[0] == GET_OK else 0


def hstrlen(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    h = get_hash(ctx, argv[1])
    if h is None:
        return 0
    value = _checked_value(ctx, argv[1], h, argv[2])[1]
    return 0 if value is None else len(value)


# -- HRANDFIELD --------------------------------------------------------------------------------


def hrandfield(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    if len(argv) >= 3:
        count = parse_int(argv[2])
        if count < -LONG_MAX:
            raise CommandError(E.LONG_OUT_OF_RANGE)
        if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != b"withvalues"):
            raise CommandError(SYNTAX)
        withvalues = len(argv) == 4
        if withvalues and not -(LONG_MAX // 2) <= count <= LONG_MAX // 2:
            raise CommandError(E.VALUE_OUT_OF_RANGE)
        return _hrandfield_count(ctx, key, count, withvalues)
    h = get_hash(ctx, key)
    if h is None or _expire_all_due(ctx, key, h):
        return None
    return h.random_fields(1)[0]


def _expire_all_due(ctx: Context, key: bytes, h: Hash) -> bool:
    effects = Effects(key)
    deleted = expire_all_due(ctx, key, h, ctx.now_ms(), effects)
    if effects.ops:
        effects.log(ctx)
    return deleted


def _hrandfield_count(ctx: Context, key: bytes, count: int, withvalues: bool) -> Reply:
    """``hrandfieldWithCountCommand``: negative counts may repeat fields; positive ones give
    distinct fields, all of them when the hash is not larger than the count."""
    h = get_hash(ctx, key)
    if h is None or _expire_all_due(ctx, key, h) or count == 0:
        return []
    if count < 0 or count == 1:
        fields = h.random_fields(capped_repeats(-count, ctx.reply_room()) if count < 0 else 1)
    elif count >= len(h.d):
        fields = list(h.d)
    else:
        fields = h.random_unique_fields(count)
    if not withvalues:
        return fields
    d = h.as_dict()
    if ctx.resp3:
        return [[f, d[f]] for f in fields]
    out: list[bytes] = []
    for f in fields:
        out.append(f)
        out.append(d[f])
    return out


# -- HSCAN -----------------------------------------------------------------------------------


def hscan(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    cursor = parse_cursor(argv[2])
    h = get_hash(ctx, key)
    if h is None:
        return [b"0", []]
    count = 10
    match = None
    novalues = False
    i = 3
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i >= 2
        if opt == b"count" and more:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise CommandError(SYNTAX)
            i += 2
        elif opt == b"match" and more:
            pattern = argv[i + 1]
            match = None if pattern == b"*" else compile_pattern(pattern)
            i += 2
        elif opt == b"novalues":
            novalues = True
            i += 1
        else:
            raise CommandError(SYNTAX)
    d = h.as_dict()
    now = ctx.now_ms()
    if h.enc != HASHTABLE:  # a listpack is returned whole, with cursor 0
        next_cursor = 0
        fields: list[bytes] = list(d)
        if h.enc == LISTPACK_EX and h.ttl:
            fields = [f for f in fields if not h.is_expired(f, now)]
    else:
        next_cursor, fields = h.scan(cursor, count)
        if h.ttl:
            fields = [f for f in fields if not h.is_expired(f, now)]
    if match is not None:
        fields = [f for f in fields if match(f)]
    if novalues:
        out = fields
    else:
        out = []
        for f in fields:
            out.append(f)
            out.append(d[f])
    return [b"%d" % next_cursor, out]


# -- the table -------------------------------------------------------------------------------

_H = A.HASH
_ON = "O(N) where N is the size of the hash."
_ONE_KEY_RO = key_at(1, RO)
_ONE_KEY_RO_ACCESS = key_at(1, RO | ACCESS)

COMMANDS: tuple[Command, ...] = (
    #   name           arity  flags                     acl  keys                                handler
    cmd("hset",           -4, WRITE | DENYOOM | FAST,    _H, key_at(1, RW | UPDATE),             hset,
        "Creates or modifies the value of a field in a hash.", since="2.0.0", group="hash",
        complexity="O(1) for each field/value pair added, so O(N) to add N field/value pairs "
        "when the command is called with multiple field/value pairs.",
        syntax="key field value [field value ...]"),
    cmd("hsetnx",          4, WRITE | DENYOOM | FAST,    _H, key_at(1, RW | INSERT),             hsetnx,
        "Sets the value of a field in a hash only when the field doesn't exist.", since="2.0.0",
        group="hash", complexity="O(1)", syntax="key field value"),
    cmd("hmset",          -4, WRITE | DENYOOM | FAST,    _H, key_at(1, RW | UPDATE),             hmset,
        "Sets the values of multiple fields.", since="2.0.0", group="hash",
        complexity="O(N) where N is the number of fields being set.",
        syntax="key field value [field value ...]", doc_flags=("deprecated",)),
    cmd("hget",            3, READONLY | FAST,           _H, _ONE_KEY_RO_ACCESS,                 hget,
        "Returns the value of a field in a hash.", since="2.0.0", group="hash",
        complexity="O(1)", syntax="key field"),
    cmd("hmget",          -3, READONLY | FAST,           _H, _ONE_KEY_RO_ACCESS,                 hmget,
        "Returns the values of all fields in a hash.", since="2.0.0", group="hash",
        complexity="O(N) where N is the number of fields being requested.",
        syntax="key field [field ...]"),
    cmd("hgetall",         2, READONLY,                  _H, _ONE_KEY_RO_ACCESS,                 hgetall,
        "Returns all fields and values in a hash.", since="2.0.0", group="hash",
        complexity=_ON, syntax="key", tips=("nondeterministic_output_order",)),
    cmd("hkeys",           2, READONLY,                  _H, _ONE_KEY_RO_ACCESS,                 hkeys,
        "Returns all fields in a hash.", since="2.0.0", group="hash", complexity=_ON,
        syntax="key", tips=("nondeterministic_output_order",)),
    cmd("hvals",           2, READONLY,                  _H, _ONE_KEY_RO_ACCESS,                 hvals,
        "Returns all values in a hash.", since="2.0.0", group="hash", complexity=_ON,
        syntax="key", tips=("nondeterministic_output_order",)),
    cmd("hlen",            2, READONLY | FAST,           _H, _ONE_KEY_RO,                        hlen,
        "Returns the number of fields in a hash.", since="2.0.0", group="hash",
        complexity="O(1)", syntax="key"),
    cmd("hexists",         3, READONLY | FAST,           _H, _ONE_KEY_RO,                        hexists,
        "Determines whether a field exists in a hash.", since="2.0.0", group="hash",
        complexity="O(1)", syntax="key field"),
    cmd("hdel",           -3, WRITE | FAST,              _H, key_at(1, RW | DELETE),             hdel,
        "Deletes one or more fields and their values from a hash. Deletes the hash if no "
        "fields remain.", since="2.0.0", group="hash",
        complexity="O(N) where N is the number of fields to be removed.",
        syntax="key field [field ...]"),
    cmd("hincrby",         4, WRITE | DENYOOM | FAST,    _H, key_at(1, RW | ACCESS | UPDATE),    hincrby,
        "Increments the integer value of a field in a hash by a number. Uses 0 as initial "
        "value if the field doesn't exist.", since="2.0.0", group="hash", complexity="O(1)",
        syntax="key field increment"),
    cmd("hincrbyfloat",    4, WRITE | DENYOOM | FAST,    _H, key_at(1, RW | ACCESS | UPDATE),    hincrbyfloat,
        "Increments the floating point value of a field by a number. Uses 0 as initial value "
        "if the field doesn't exist.", since="2.6.0", group="hash", complexity="O(1)",
        syntax="key field increment"),
    cmd("hstrlen",         3, READONLY | FAST,           _H, _ONE_KEY_RO,                        hstrlen,
        "Returns the length of the value of a field.", since="3.2.0", group="hash",
        complexity="O(1)", syntax="key field"),
    cmd("hrandfield",     -2, READONLY,                  _H, _ONE_KEY_RO_ACCESS,                 hrandfield,
        "Returns one or more random fields from a hash.", since="6.2.0", group="hash",
        complexity="O(N) where N is the number of fields returned",
        syntax="key [count [WITHVALUES]]", tips=("nondeterministic_output",)),
    cmd("hscan",          -3, READONLY,                  _H, _ONE_KEY_RO_ACCESS,                 hscan,
        "Iterates over fields and values of a hash.", since="2.8.0", group="hash",
        complexity="O(1) for every call. O(N) for a complete iteration, including enough "
        "command calls for the cursor to return back to 0. N is the number of elements inside "
        "the collection.", syntax="key cursor [MATCH pattern] [COUNT count] [NOVALUES]",
        tips=("nondeterministic_output",)),
)
