"""Keyspace commands: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX, COPY,
MOVE, SWAPDB, TOUCH and OBJECT (the TTL family lives in ``expire.py``).

Mirrors Redis's db.c (``delGenericCommand``, ``existsCommand``, ``keysCommand``,
``scanGenericCommand``, ``renameGenericCommand``, ``moveCommand``, ``copyCommand``,
``swapdbCommand``), ``touchCommand`` (expire.c) and ``objectCommand`` (object.c).

Invariants: every key a command writes is reported with ``ctx.modified`` (WATCH, blocked
clients, dirty counter), on the database it was written in. Lookups that Redis makes with
``LOOKUP_NOTOUCH`` (TYPE, EXISTS, OBJECT) use ``Database.peek`` so they leave the key's access
time alone. UNLINK is DEL: values are freed by Python's reference counting either way.

Deviations: SCAN cursors are Sluice's own (insertion sequence numbers, see
``storage/keyspace.py``), so cursor values and batch boundaries differ from Redis's; the
guarantees (every key present for the whole scan is returned, exactly once) are Redis's. SCAN
follows the newest Redis for an unknown TYPE (an error; 7.0 returned nothing) and for cursor
parsing (``string2ull``: negative cursors are refused).
"""

from __future__ import annotations

import re

from sluice.protocol import OK, SimpleString, string2ll
from sluice.storage.glob import compile_pattern
from sluice.storage.keyspace import Database, type_name
from sluice.storage.lazyfree import freed_lazily

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    DB_INDEX_OUT_OF_RANGE,
    INT_OUT_OF_RANGE,
    INVALID_CURSOR,
    INVALID_FIRST_DB,
    INVALID_SECOND_DB,
    LFU_NOT_SELECTED,
    LRU_NOT_SELECTED,
    NO_SUCH_KEY,
    NOVALUES_ONLY_HSCAN,
    SAME_OBJECT,
    SYNTAX,
    CommandError,
)
from .spec import (
    ACCESS,
    DELETE,
    DENYOOM,
    FAST,
    INSERT,
    LOADING,
    NONE,
    OW,
    READONLY,
    RM,
    RO,
    RW,
    STALE,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
)

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
ULLONG_MAX = (1 << 64) - 1
_STRTOULL = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)")


def parse_db_index(ctx: Context, raw: bytes) -> Database:
    """The database named by ``raw`` (Redis's ``getIntFromObjectOrReply`` + ``selectDb``)."""
    n = parse_int(raw)
    if not INT_MIN <= n <= INT_MAX:
        raise CommandError(INT_OUT_OF_RANGE)
    keyspace = ctx.server.keyspace
    if not 0 <= n < len(keyspace):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    return keyspace[n]


def parse_cursor(raw: bytes) -> int:
    """A SCAN cursor as Redis's ``string2ull`` reads it: a strict long long that must not be
    negative, else whatever ``strtoull`` accepts in full (spaces, ``+``, wrapping ``-``)."""
    n = string2ll(raw)
    if n is not None:
        if n < 0:
            raise CommandError(INVALID_CURSOR)
        return n
    m = _STRTOULL.fullmatch(raw)
    if m is None or int(m.group(2)) > ULLONG_MAX:
        raise CommandError(INVALID_CURSOR)
    value = int(m.group(2))
    return (-value) & ULLONG_MAX if m.group(1) == b"-" else value


# -- DEL / UNLINK / EXISTS / TYPE / TOUCH ---------------------------------------------------


def del_(ctx: Context, args: Args) -> Reply:
    if ctx.server.config.lazyfree_lazy_user_del:
        return unlink(ctx, args)
    db = ctx.db
    removed = 0
    for key in args.rest():
        if db.delete(key):
            ctx.modified(key)
            ctx.notify(b"del", key)
            removed += 1
    return removed


def unlink(ctx: Context, args: Args) -> Reply:
    """DEL, counting in INFO lazyfreed_objects each value Redis would free in the
    background (Sluice frees it at once either way)."""
    db = ctx.db
    removed = 0
    for key in args.rest():
        value = db.find(key)
        if value is not None and db.delete(key):
            if freed_lazily(value):
                ctx.server.stats["lazyfreed_objects"] += 1
            ctx.modified(key)
            ctx.notify(b"del", key)
            removed += 1
    return removed


def exists(ctx: Context, args: Args) -> Reply:
    peek = ctx.db.peek
    return sum(1 for key in args.rest() if peek(key) is not None)


def type_(ctx: Context, args: Args) -> Reply:
    return SimpleString(ctx.db.type_of(args.next_key()))


def touch(ctx: Context, args: Args) -> Reply:
    touch_key = ctx.db.touch
    return sum(1 for key in args.rest() if touch_key(key))


# -- KEYS / SCAN / RANDOMKEY ------------------------------------------------------------------


def keys(ctx: Context, args: Args) -> Reply:
    pattern = args.next()
    live = ctx.db.keys()
    if pattern == b"*":  # Redis skips matching for "*" (which would not match the empty key)
        return list(live)
    match = compile_pattern(pattern)
    return [key for key in live if match(key)]


def scan(ctx: Context, args: Args) -> Reply:
    cursor = parse_cursor(args.next())
    count = 10
    match = None
    wanted = None
    while args:
        opt = args.next().lower()
        if opt == b"count" and args:
            count = args.next_int()
            if count < 1:
                raise CommandError(SYNTAX)
        elif opt == b"match" and args:
            pattern = args.next()
            match = None if pattern == b"*" else compile_pattern(pattern)
        elif opt == b"type" and args:
            # An unknown type matches no key: redis-server 8.6.3 does not refuse it (its
            # "unknown type name" error is still commented out), nor does any documentation.
            wanted = args.next().lower()
        elif opt == b"novalues":
            raise CommandError(NOVALUES_ONLY_HSCAN)
        else:
            raise CommandError(SYNTAX)
    db = ctx.db
    cursor, batch = db.scan(cursor, count)
    out = []
    for key in batch:
        # Redis's order: the pattern first, so a key it filters out is not looked up (nor
        # deleted if expired); then the lookup, which deletes an expired key; then the type.
        if match is not None and not match(key):
            continue
        value = db.find(key)
        if value is None:
            continue
        if wanted is not None and type_name(value) != wanted:
            continue
        out.append(key)
    return [b"%d" % cursor, out]


def randomkey(ctx: Context, args: Args) -> Reply:
    return ctx.db.random_key()


# -- RENAME / RENAMENX / MOVE / COPY / SWAPDB --------------------------------------------------


def _rename(ctx: Context, args: Args, nx: bool) -> Reply:
    src, dst = args.next_key(), args.next_key()
    db = ctx.db
    if db.get(src) is None:
        raise CommandError(NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    old = db.get(dst)
    if old is not None and nx:
        return 0
    old_type = None if old is None else type_name(old)
    db.rename(src, dst)
    ctx.modified(src)
    ctx.modified(dst, changes=0)  # one change, as Redis counts
    ctx.notify(b"rename_from", src)
    ctx.notify(b"rename_to", dst)
    if old_type is not None:
        ctx.notify(b"overwritten", dst)
        if old_type != type_name(db.data[dst]):
            ctx.notify(b"type_changed", dst)
    return 1 if nx else OK


def rename(ctx: Context, args: Args) -> Reply:
    return _rename(ctx, args, False)


def renamenx(ctx: Context, args: Args) -> Reply:
    return _rename(ctx, args, True)


def move(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    src = ctx.db
    dst = parse_db_index(ctx, args.next())
    if dst is src:
        raise CommandError(SAME_OBJECT)
    if src.get(key) is None or dst.get(key) is not None:
        return 0
    src.move_to(key, dst)
    ctx.modified(key)
    ctx.server.key_modified(dst, key, changes=0)  # one change, as Redis counts
    ctx.notify(b"move_from", key)
    ctx.notify(b"move_to", key, dst)
    return 1


def copy(ctx: Context, args: Args) -> Reply:
    key, new_key = args.next_key(), args.next_key()
    src = dst = ctx.db
    replace = False
    while args:
        opt = args.next().lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and args:
            dst = parse_db_index(ctx, args.next())
        else:
            raise CommandError(SYNTAX)
    if src is dst and key == new_key:
        raise CommandError(SAME_OBJECT)
    value = src.get(key)
    src.note_read(key, value is not None)  # COPY reads its source as a read command does
    if value is None:
        return 0
    old = dst.get(new_key)
    if old is not None:
        if not replace:
            return 0
        dst.delete(new_key)
    src.copy_to(key, dst, new_key)
    ctx.server.key_modified(dst, new_key)
    ctx.notify(b"copy_to", new_key, dst)
    if old is not None:
        ctx.notify(b"overwritten", new_key, dst)
        if type_name(old) != type_name(value):
            ctx.notify(b"type_changed", new_key, dst)
    return 1


def swapdb(ctx: Context, args: Args) -> Reply:
    server = ctx.server
    keyspace = server.keyspace
    first = parse_int(args.next(), INVALID_FIRST_DB)
    if not INT_MIN <= first <= INT_MAX:
        raise CommandError(INVALID_FIRST_DB)
    second = parse_int(args.next(), INVALID_SECOND_DB)
    if not INT_MIN <= second <= INT_MAX:
        raise CommandError(INVALID_SECOND_DB)
    if not (0 <= first < len(keyspace) and 0 <= second < len(keyspace)):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    if first != second:
        server.swap_db(keyspace[first], keyspace[second])
    server.dirty += 1
    return OK


# -- OBJECT -----------------------------------------------------------------------------------

_OBJECT_HELP = [SimpleString(line) for line in (
    b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"ENCODING <key>",
    b"    Return the kind of internal representation used in order to store the value",
    b"    associated with a <key>.",
    b"FREQ <key>",
    b"    Return the access frequency index of the <key>. The returned integer is",
    b"    proportional to the logarithm of the recent access frequency of the key.",
    b"IDLETIME <key>",
    b"    Return the idle time of the <key>, that is the approximated number of",
    b"    seconds elapsed since the last access to the key.",
    b"REFCOUNT <key>",
    b"    Return the number of references of the value associated with the specified",
    b"    <key>.",
    b"HELP",
    b"    Print this help.",
)]


def object_encoding(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    value = ctx.db.peek(key, notify=False)  # Redis: LOOKUP_NOTOUCH | LOOKUP_NONOTIFY
    return None if value is None else ctx.db.encoding(key, value)


def object_refcount(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    value = ctx.db.peek(key, notify=False)
    return None if value is None else ctx.db.refcount(key, value)


def object_idletime(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    db = ctx.db
    if db.peek(key, notify=False) is None:
        return None
    if db.access.lfu:  # the word holds an LFU counter, not a clock
        raise CommandError(LRU_NOT_SELECTED)
    return db.idle_seconds(key)


def object_freq(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    db = ctx.db
    if db.peek(key, notify=False) is None:
        return None
    if not db.access.lfu:
        raise CommandError(LFU_NOT_SELECTED)
    return db.access.lfu_decr(db.word(key))  # decayed, not touched (LFUDecrAndReturn)


def object_help(ctx: Context, args: Args) -> Reply:
    return _OBJECT_HELP


_MULTI_SHARD_SUM = ("request_policy:multi_shard", "response_policy:agg_sum")
_O1 = "O(1)"

COMMANDS: tuple[Command, ...] = (
    #   name        arity  flags                    acl         keys                         handler
    cmd("del",        -2,  WRITE,                   A.KEYSPACE, key_at(1, RM | DELETE, last=-1), del_,
        "Deletes one or more keys.", since="1.0.0", tips=_MULTI_SHARD_SUM,
        complexity="O(N) where N is the number of keys that will be removed. When a key to "
        "remove holds a value other than a string, the individual complexity for this key is "
        "O(M) where M is the number of elements in the list, set, sorted set or hash. Removing "
        "a single key that holds a string value is O(1).", syntax="key [key ...]"),
    cmd("unlink",     -2,  WRITE | FAST,            A.KEYSPACE, key_at(1, RM | DELETE, last=-1), unlink,
        "Deletes one or more keys; memory is reclaimed without blocking the server.",
        since="4.0.0", tips=_MULTI_SHARD_SUM,
        complexity="O(1) for each key removed regardless of its size. Then the command does "
        "O(N) work in a different thread in order to reclaim memory, where N is the number of "
        "allocations the deleted objects where composed of.", syntax="key [key ...]"),
    cmd("exists",     -2,  READONLY | FAST,         A.KEYSPACE, key_at(1, RO, last=-1),      exists,
        "Counts how many of the given keys exist.", tips=_MULTI_SHARD_SUM,
        complexity="O(N) where N is the number of keys to check.", syntax="key [key ...]"),
    cmd("type",        2,  READONLY | FAST,         A.KEYSPACE, key_at(1, RO),               type_,
        "Returns the type of the value stored at a key.", complexity=_O1, syntax="key"),
    cmd("touch",      -2,  READONLY | FAST,         A.KEYSPACE, key_at(1, RO, last=-1),      touch,
        "Updates the last access time of keys; returns how many exist.", since="3.2.1",
        tips=_MULTI_SHARD_SUM,
        complexity="O(N) where N is the number of keys that will be touched.",
        syntax="key [key ...]"),
    cmd("keys",        2,  READONLY,                A.KEYSPACE | A.DANGEROUS, None,          keys,
        "Returns all key names that match a pattern.",
        tips=("request_policy:all_shards", "nondeterministic_output_order"),
        complexity="O(N) with N being the number of keys in the database, under the "
        "assumption that the key names in the database and the given pattern have limited "
        "length.", syntax="pattern"),
    cmd("scan",       -2,  READONLY,                A.KEYSPACE, None,                        scan,
        "Iterates over the key names in the database.", since="2.8.0",
        tips=("nondeterministic_output", "request_policy:special"),
        complexity="O(1) for every call. O(N) for a complete iteration, including enough "
        "command calls for the cursor to return back to 0. N is the number of elements inside "
        "the collection.", syntax="cursor [MATCH pattern] [COUNT count] [TYPE type]"),
    cmd("randomkey",   1,  READONLY,                A.KEYSPACE, None,                        randomkey,
        "Returns a random key name from the database.",
        tips=("request_policy:all_shards", "nondeterministic_output"), complexity=_O1),
    cmd("rename",      3,  WRITE,                   A.KEYSPACE,
        (key_at(1, RW | ACCESS | DELETE), key_at(2, OW | UPDATE)),                           rename,
        "Renames a key and overwrites the destination.", complexity=_O1, syntax="key newkey"),
    cmd("renamenx",    3,  WRITE | FAST,            A.KEYSPACE,
        (key_at(1, RW | ACCESS | DELETE), key_at(2, OW | INSERT)),                           renamenx,
        "Renames a key only when the target key name doesn't exist.", complexity=_O1,
        syntax="key newkey"),
    cmd("copy",       -3,  WRITE | DENYOOM,         A.KEYSPACE,
        (key_at(1, RO | ACCESS), key_at(2, OW | UPDATE)),                                    copy,
        "Copies the value of a key to a new key.", since="6.2.0",
        complexity="O(N) worst case for collections, where N is the number of nested items. "
        "O(1) for string values.", syntax="source destination [DB destination-db] [REPLACE]"),
    cmd("move",        3,  WRITE | FAST,            A.KEYSPACE, key_at(1, RW | ACCESS | UPDATE), move,
        "Moves a key to another database.", complexity=_O1, syntax="key db"),
    cmd("swapdb",      3,  WRITE | FAST,            A.KEYSPACE | A.DANGEROUS, None,          swapdb,
        "Swaps two databases.", since="4.0.0", group="server",
        complexity="O(N) where N is the count of clients watching or blocking on keys from "
        "both databases.", syntax="index1 index2"),
    cmd("object",     -2,  NONE,                    A.NONE,     None,                        None,
        "A container for object introspection commands.", since="2.2.3",
        complexity="Depends on subcommand.", syntax="<subcommand> [<arg> ...]"),
    cmd("object|encoding", 3, READONLY,             A.KEYSPACE, key_at(2, RO),               object_encoding,
        "Returns the internal encoding of a Redis object.", since="2.2.3",
        tips=("nondeterministic_output",), complexity=_O1, syntax="key"),
    cmd("object|freq",      3, READONLY,            A.KEYSPACE, key_at(2, RO),               object_freq,
        "Returns the logarithmic access frequency counter of a Redis object.", since="4.0.0",
        tips=("nondeterministic_output",), complexity=_O1, syntax="key"),
    cmd("object|idletime",  3, READONLY,            A.KEYSPACE, key_at(2, RO),               object_idletime,
        "Returns the time since the last access to a Redis object.", since="2.2.3",
        tips=("nondeterministic_output",), complexity=_O1, syntax="key"),
    cmd("object|refcount",  3, READONLY,            A.KEYSPACE, key_at(2, RO),               object_refcount,
        "Returns the reference count of a value of a key.", since="2.2.3",
        tips=("nondeterministic_output",), complexity=_O1, syntax="key"),
    cmd("object|help",      2, LOADING | STALE,     A.KEYSPACE, None,                        object_help,
        "Returns helpful text about the different subcommands.", since="6.2.0",
        complexity=_O1),
)
