"""Set commands (Redis's ``t_set.c``).

Handlers parse, call ``storage.sets.SetValue`` and build replies; encodings are decided with
the server's ``set-max-intset-entries`` / ``set-max-listpack-entries`` / ``-value``, read at
each command as Redis reads them. Argument and type checks come in Redis's order, which
decides which error wins (SPOP parses its count before looking the key up; SINTER reports a
WRONGTYPE key even after a missing one).

What the commands count and log, as Redis: SADD/SREM count each member added or removed in
the dirty counter; SMOVE one for the removal and one for the addition; a STORE command one
(or one for deleting the destination when the result is empty). SPOP is logged as the SREMs
of what it popped (in batches of 1024), or as DEL when it emptied the set; SRANDMEMBER and
the reads log nothing. A set emptied by a command is deleted. Each write fires Redis's
keyspace events in its order (``sadd``, ``srem``, ``spop``, ``s*store``, then ``del``).

Replies: SMEMBERS, SINTER, SUNION, SDIFF and SPOP with a count are sets (``~`` in RESP3);
SRANDMEMBER with a count and SMISMEMBER are arrays. Their order is the encoding's (ascending
for an intset, insertion order for a listpack, slot order for a hash table; Redis's is its
hash order there, which no client may rely on).
"""

from __future__ import annotations

from sluice.protocol import Set
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.sets import HASHTABLE, INTSET, LISTPACK, SetValue
from sluice.storage.strings import string2ll

from .args import LONG_MAX, Args, capped_repeats, parse_range_long
from .context import Context, Reply, Settings, command_name
from .errors import (
    LIMIT_NEGATIVE,
    LIST_COUNT_NOT_POSITIVE,
    NUMKEYS_POSITIVE,
    NUMKEYS_TOO_MANY,
    SYNTAX,
    CommandError,
)
from .keyspace import parse_cursor
from .scan_options import parse_scan_options
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
    cmd,
    key_at,
    keys_counted,
)

SPOP_BATCH = 1024  # SREMs logged per command for a SPOP with a count


def _get(ctx: Context, key: bytes) -> SetValue | None:
    """The set at ``key`` or None; WRONGTYPE for another type."""
    value = ctx.db.get(key)
    if value is None or type(value) is SetValue:
        return value
    raise WrongTypeError()


def _cfg(ctx: Context) -> Settings:
    """The server config: the set encodings' limits are read from it at each command."""
    return ctx.server.config



_STORE_EVENTS = {"sinterstore": b"sinterstore", "sunionstore": b"sunionstore",
                 "sdiffstore": b"sdiffstore"}


def _store(ctx: Context, dst: bytes, result: SetValue) -> int:
    """A STORE command's end: the result replaces ``dst`` (its TTL too: setKey, so
    "overwritten" when it existed), or an empty result deletes it; returns the reply."""
    db = ctx.db
    if len(result):
        db.set(dst, result)
        ctx.modified(dst)
        ctx.notify(_STORE_EVENTS[command_name(ctx)], dst)
        return len(result)
    if db.delete(dst):
        ctx.modified(dst)
        ctx.notify(b"del", dst)
    return 0


# -- one set -------------------------------------------------------------------------------


def sadd(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    s = _get(ctx, key)
    if s is not None and s.enc == HASHTABLE and len(argv) == 3:
        # One member into a hash table (no conversion possible): SetValue.add, inlined.
        if s.ht.put(argv[2], True):  # type: ignore[union-attr]
            ctx.modified(key)
            ctx.notify(b"sadd", key)
            return 1
        return 0
    cfg = _cfg(ctx)
    if s is None:
        s = SetValue.create(argv[2], len(argv) - 2, cfg)
        ctx.db.add(key, s)
    else:
        s.maybe_convert(len(argv) - 2, cfg)
    add = s.add
    added = 0
    for member in argv[2:]:
        if add(member, cfg):
            added += 1
    if added:
        ctx.modified(key, changes=added)
        ctx.notify(b"sadd", key)
    return added


def srem(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    s = _get(ctx, key)
    if s is None:
        return 0
    deleted = 0
    for member in argv[2:]:
        if s.remove(member):
            deleted += 1
            if not len(s):
                ctx.db.delete(key)
                break
    if deleted:
        ctx.modified(key, changes=deleted)
        ctx.notify(b"srem", key)
        if not len(s):
            ctx.notify(b"del", key)
    return deleted


def smove(ctx: Context, args: Args) -> Reply:
    src_key, dst_key, member = args.argv[1:4]
    db = ctx.db
    src, dst = db.get(src_key), db.get(dst_key)  # both looked up (and expired) first
    if src is None:
        return 0
    if type(src) is not SetValue or (dst is not None and type(dst) is not SetValue):
        raise WrongTypeError()
    if src is dst:
        return 1 if member in src else 0
    if not src.remove(member):
        return 0
    ctx.notify(b"srem", src_key)
    if not len(src):
        db.delete(src_key)
        ctx.notify(b"del", src_key)
    cfg = _cfg(ctx)
    if dst is None:
        dst = SetValue.create(member, 1, cfg)
        db.add(dst_key, dst)
    ctx.modified(src_key)
    if dst.add(member, cfg):
        ctx.modified(dst_key)
        ctx.notify(b"sadd", dst_key)
    return 1


def sismember(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    s = ctx.db.get(argv[1])
    if s is None:
        return 0
    if type(s) is not SetValue:
        raise WrongTypeError()
    if s.enc == HASHTABLE:  # a big set's membership test, inlined (SetValue.__contains__)
        return 0 if s.ht.d.get(argv[2]) is None else 1  # type: ignore[union-attr]
    return 1 if argv[2] in s else 0


def smismember(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    s = _get(ctx, argv[1])
    if s is None:
        return [0] * (len(argv) - 2)
    return [1 if m in s else 0 for m in argv[2:]]


def scard(ctx: Context, args: Args) -> Reply:
    s = _get(ctx, args.argv[1])
    return 0 if s is None else len(s)


def smembers(ctx: Context, args: Args) -> Reply:
    s = _get(ctx, args.argv[1])
    return Set() if s is None else Set(s)


def spop(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) == 3:
        return _spop_count(ctx, argv[1], argv[2])
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    key = argv[1]
    s = _get(ctx, key)
    if s is None:
        return None
    member = s.pop_random()
    ctx.rewrite_argv([b"SREM", key, member])
    ctx.notify(b"spop", key)
    if not len(s):
        ctx.db.delete(key)
        ctx.notify(b"del", key)
    ctx.modified(key)
    return member


def _spop_count(ctx: Context, key: bytes, raw_count: bytes) -> Reply:
    count = parse_range_long(raw_count, 0, LONG_MAX, LIST_COUNT_NOT_POSITIVE)
    s = _get(ctx, key)
    if s is None or count == 0:
        return Set()
    size = len(s)
    ctx.notify(b"spop", key)
    if count >= size:  # the whole set: the key goes, and is logged as DEL
        members = Set(s)
        ctx.db.delete(key)
        ctx.notify(b"del", key)
        ctx.rewrite_argv([b"DEL", key])
        ctx.modified(key, changes=size)
        return members
    popped, rebuilt = s.pop_many(count, _cfg(ctx))
    if rebuilt is not None:
        ctx.db.replace(key, rebuilt)  # dbReplaceValue: the TTL stays, no event
    ctx.rewrite_argv(*([b"SREM", key, *popped[i:i + SPOP_BATCH]]
                       for i in range(0, len(popped), SPOP_BATCH)))
    ctx.modified(key, changes=count)
    return Set(popped)


def srandmember(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) == 3:
        n = parse_range_long(argv[2], -LONG_MAX, LONG_MAX)
        s = _get(ctx, argv[1])
        if s is None or n == 0:
            return []
        return s.random_members(n if n > 0 else capped_repeats(-n, ctx.reply_room()), n > 0)
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    s = _get(ctx, argv[1])
    return None if s is None else s.random_member()


def sscan(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    cursor = parse_cursor(args.next())
    s = _get(ctx, key)
    if s is None:
        return [b"0", []]
    count, match, _ = parse_scan_options(args)
    nxt, members = s.scan(cursor, count, match)
    return [b"%d" % nxt, members]


# -- several sets --------------------------------------------------------------------------


def _lookup(ctx: Context, keys: list[bytes]) -> list[SetValue | None]:
    """Every key's set (None for a missing key); WRONGTYPE for the first of another type."""
    return [_get(ctx, key) for key in keys]


def _inter(ctx: Context, keys: list[bytes], dst: bytes | None, card_only: bool,
           limit: int = 0) -> Reply:
    """``sinterGenericCommand``: SINTER, SINTERSTORE and SINTERCARD."""
    sets = _lookup(ctx, keys)
    if any(s is None for s in sets):
        if dst is not None:
            return _store(ctx, dst, SetValue(INTSET))
        return 0 if card_only else Set()
    ordered: list[SetValue] = sorted(sets, key=len)  # type: ignore[arg-type]
    first = ordered[0]
    rest = [s for s in ordered[1:] if s is not first]
    if card_only:
        n = 0
        for m in first:
            if all(m in s for s in rest):
                n += 1
                if limit and n >= limit:
                    break
        return n
    found = [m for m in first if all(m in s for s in rest)]
    if dst is None:
        return Set(found)
    cfg = _cfg(ctx)
    # The result starts in the first set's encoding (a hash table's as a listpack), takes
    # the usual conversions, and becomes an intset at the end if it holds only integers.
    result = SetValue(INTSET if first.enc == INTSET else LISTPACK)
    only_integers = True
    for m in found:
        if only_integers and string2ll(m) is None:
            only_integers = False
        result.add(m, cfg)
    if found and only_integers:
        result.to_intset_if_possible(cfg)
    return _store(ctx, dst, result)


def sinter(ctx: Context, args: Args) -> Reply:
    return _inter(ctx, args.argv[1:], None, False)


def sinterstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _inter(ctx, argv[2:], argv[1], False)


def sintercard(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    numkeys = parse_range_long(argv[1], 1, LONG_MAX, NUMKEYS_POSITIVE)
    if numkeys > len(argv) - 2:
        raise CommandError(NUMKEYS_TOO_MANY)
    limit = 0
    i = 2 + numkeys
    while i < len(argv):
        if argv[i].upper() == b"LIMIT" and i + 1 < len(argv):
            limit = parse_range_long(argv[i + 1], 0, LONG_MAX, LIMIT_NEGATIVE)
            i += 2
        else:
            raise CommandError(SYNTAX)
    return _inter(ctx, argv[2:2 + numkeys], None, True, limit)


def _union_diff(ctx: Context, keys: list[bytes], dst: bytes | None, union: bool) -> Reply:
    """``sunionDiffGenericCommand``: SUNION(STORE) and SDIFF(STORE)."""
    sets = _lookup(ctx, keys)
    cfg = _cfg(ctx)
    # Without a destination the result is a hash table unless every input is an intset.
    result = SetValue(HASHTABLE if dst is None and any(
        s is not None and s.enc != INTSET for s in sets) else INTSET)
    first = sets[0]
    if union:
        for s in sets:
            if s is not None:
                for m in s:
                    result.add(m, cfg)
    elif first is not None and not any(s is first for s in sets[1:]):
        others = [s for s in sets[1:] if s is not None]
        one = (len(first) * (1 + len(others))) // 2
        two = len(first) + sum(map(len, others))
        if one <= two:
            # Algorithm 1: each member of the first set not in any other (largest first).
            others.sort(key=len, reverse=True)
            for m in first:
                if not any(m in s for s in others):
                    result.add(m, cfg)
        else:
            # Algorithm 2: everything of the first set, then remove the others' members.
            for m in first:
                result.add(m, cfg)
            for s in others:
                for m in s:
                    result.remove(m)
                if not len(result):
                    break
    if dst is None:
        return Set(result)
    return _store(ctx, dst, result)


def sunion(ctx: Context, args: Args) -> Reply:
    return _union_diff(ctx, args.argv[1:], None, True)


def sunionstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _union_diff(ctx, argv[2:], argv[1], True)


def sdiff(ctx: Context, args: Args) -> Reply:
    return _union_diff(ctx, args.argv[1:], None, False)


def sdiffstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _union_diff(ctx, argv[2:], argv[1], False)


# -- the table -----------------------------------------------------------------------------

_S = A.SET
_NDO = ("nondeterministic_output_order",)
_ND = ("nondeterministic_output",)
_ADD = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."
_ALL = "O(N) where N is the total number of elements in all given sets."
_INTER = "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."
_SCAN = ("O(1) for every call. O(N) for a complete iteration, including enough command calls for "
         "the cursor to return back to 0. N is the number of elements inside the collection.")
_STORE_KEYS = (key_at(1, OW | UPDATE), key_at(2, RO | ACCESS, last=-1))

COMMANDS = (
    #   name           arity  flags                    acl  keys                                 handler
    cmd("sadd",          -3,  WRITE | DENYOOM | FAST,  _S,  key_at(1, RW | INSERT),              sadd,
        "Adds one or more members to a set. Creates the key if it doesn't exist.",
        group="set", complexity=_ADD, syntax="key member [member ...]"),
    cmd("srem",          -3,  WRITE | FAST,            _S,  key_at(1, RW | DELETE),              srem,
        "Removes one or more members from a set. Deletes the set if the last member was removed.",
        group="set", complexity="O(N) where N is the number of members to be removed.",
        syntax="key member [member ...]"),
    cmd("smove",          4,  WRITE | FAST,            _S,  (key_at(1, RW | ACCESS | DELETE),
                                                             key_at(2, RW | INSERT)),            smove,
        "Moves a member from one set to another.",
        group="set", complexity="O(1)", syntax="source destination member"),
    cmd("sismember",      3,  READONLY | FAST,         _S,  key_at(1, RO),                       sismember,
        "Determines whether a member belongs to a set.",
        group="set", complexity="O(1)", syntax="key member"),
    cmd("smismember",    -3,  READONLY | FAST,         _S,  key_at(1, RO | ACCESS),              smismember,
        "Determines whether multiple members belong to a set.", since="6.2.0",
        group="set", complexity="O(N) where N is the number of elements being checked for membership",
        syntax="key member [member ...]"),
    cmd("scard",          2,  READONLY | FAST,         _S,  key_at(1, RO),                       scard,
        "Returns the number of members in a set.",
        group="set", complexity="O(1)", syntax="key"),
    cmd("smembers",       2,  READONLY,                _S,  key_at(1, RO | ACCESS),              smembers,
        "Returns all members of a set.",
        group="set", complexity="O(N) where N is the set cardinality.", syntax="key", tips=_NDO),
    cmd("spop",          -2,  WRITE | FAST,            _S,  key_at(1, RW | ACCESS | DELETE),     spop,
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        group="set", complexity="Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        syntax="key [count]", tips=_ND),
    cmd("srandmember",   -2,  READONLY,                _S,  key_at(1, RO | ACCESS),              srandmember,
        "Get one or multiple random members from a set",
        group="set", complexity="Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        syntax="key [count]", tips=_ND),
    cmd("sinter",        -2,  READONLY,                _S,  key_at(1, RO | ACCESS, last=-1),     sinter,
        "Returns the intersect of multiple sets.",
        group="set", complexity=_INTER, syntax="key [key ...]", tips=_NDO),
    cmd("sintercard",    -3,  READONLY,                _S,  keys_counted(1, RO | ACCESS),        sintercard,
        "Returns the number of members of the intersect of multiple sets.", since="7.0.0",
        group="set", complexity=_INTER, syntax="numkeys key [key ...] [LIMIT limit]"),
    cmd("sinterstore",   -3,  WRITE | DENYOOM,         _S,  _STORE_KEYS,                         sinterstore,
        "Stores the intersect of multiple sets in a key.",
        group="set", complexity=_INTER, syntax="destination key [key ...]", reads=True),
    cmd("sunion",        -2,  READONLY,                _S,  key_at(1, RO | ACCESS, last=-1),     sunion,
        "Returns the union of multiple sets.",
        group="set", complexity=_ALL, syntax="key [key ...]", tips=_NDO),
    cmd("sunionstore",   -3,  WRITE | DENYOOM,         _S,  _STORE_KEYS,                         sunionstore,
        "Stores the union of multiple sets in a key.",
        group="set", complexity=_ALL, syntax="destination key [key ...]", reads=True),
    cmd("sdiff",         -2,  READONLY,                _S,  key_at(1, RO | ACCESS, last=-1),     sdiff,
        "Returns the difference of multiple sets.",
        group="set", complexity=_ALL, syntax="key [key ...]", tips=_NDO),
    cmd("sdiffstore",    -3,  WRITE | DENYOOM,         _S,  _STORE_KEYS,                         sdiffstore,
        "Stores the difference of multiple sets in a key.",
        group="set", complexity=_ALL, syntax="destination key [key ...]", reads=True),
    cmd("sscan",         -3,  READONLY,                _S,  key_at(1, RO | ACCESS),              sscan,
        "Iterates over members of a set.", since="2.8.0",
        group="set", complexity=_SCAN, syntax="key cursor [MATCH pattern] [COUNT count]", tips=_ND),
)
