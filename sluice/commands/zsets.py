"""Sorted set commands, one member at a time, pops and blocking pops (Redis's ``t_zset.c``).

The range commands are in ``zset_ranges.py``, the set operations in ``zset_ops.py``; the
helpers they share (lookup, the score-pair replies) are here. Handlers parse, call
``storage.zsets.ZSetValue``, and build replies; scores are parsed by
``storage.scores.string2d`` and printed by the reply encoder (``Double``).

Checks run in Redis's order (ZADD parses every score before it looks the key up; the pops
parse their count first; BZMPOP parses numkeys, MIN|MAX and COUNT before the timeout).
What is counted and logged, as Redis: ZADD counts each member added or updated, ZREM each
removed, a pop each popped; ZPOPMIN/ZPOPMAX are logged as they are (deterministic), ZMPOP and
the blocking pops as ZPOPMIN/ZPOPMAX with the count they popped. Reads log nothing. A sorted
set emptied by a command is deleted. Each write fires the keyspace events Redis fires, in its
order (``removed_from``, ``store_zset``).

Reply shapes follow Redis 7+: member/score pairs are a flat array in RESP2 and an array of
pairs in RESP3 (ZRANGE WITHSCORES, ZPOPMIN with a count, ZRANDMEMBER WITHSCORES), but
ZPOPMIN without a count and the BZPOP* replies are flat in both; ZMPOP/BZMPOP give
``[key, [[member, score], ...]]`` in both. Scores are doubles (``,`` in RESP3), except in
ZSCAN, whose scores are strings as Redis prints them there.

Blocking (BZPOPMIN, BZPOPMAX, BZMPOP): a handler that finds nothing to pop returns
``ctx.block(keys, timeout, NULL_ARRAY)``; a write that creates a sorted set under a key
makes the key ready, and the blocking manager runs the handler again (FIFO per key). As in
Redis, only creating a key makes it ready (``dbAdd``): a sorted set stored over an existing
key (a STORE command's ``setKey``), and later writes to it, wake no one, and clients waiting
there keep waiting until the key is deleted and created again. Inside MULTI a blocking pop
answers the timeout reply at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sluice.protocol import NULL_ARRAY, Double, format_double
from sluice.protocol.dtoa import d2string
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.scores import parse_lex_range, parse_score_range, string2d, zscan_score
from sluice.storage.zsets import (
    IN_GT,
    IN_INCR,
    IN_LT,
    IN_NX,
    IN_XX,
    LISTPACK,
    OUT_ADDED,
    OUT_NAN,
    OUT_NOP,
    OUT_UPDATED,
    Entry,
    ZSetValue,
)

from .args import LONG_MAX, Args, capped_repeats, parse_range_long
from .context import Context, Reply, Settings, command_name
from .errors import (
    COUNT_POSITIVE,
    LIST_COUNT_NOT_POSITIVE,
    MIN_MAX_NOT_FLOAT,
    MIN_MAX_NOT_LEX,
    NOT_FLOAT,
    NUMKEYS_POSITIVE,
    SYNTAX,
    VALUE_OUT_OF_RANGE,
    ZADD_GT_LT_NX,
    ZADD_INCR_PAIRS,
    ZADD_NX_XX,
    ZSCORE_NAN,
    CommandError,
    wrong_arity,
)
from .keyspace import parse_cursor
from .lists import parse_timeout
from .scan_options import parse_scan_options
from .spec import (
    ACCESS,
    BLOCKING,
    DELETE,
    DENYOOM,
    FAST,
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

# -- helpers shared by the sorted-set modules ------------------------------------------------


def get_zset(ctx: Context, key: bytes) -> ZSetValue | None:
    """The sorted set at ``key`` or None; WRONGTYPE for another type."""
    value = ctx.db.get(key)
    if value is None or type(value) is ZSetValue:
        return value
    raise WrongTypeError()


def limits(ctx: Context) -> Settings:
    """The server config: zset-max-listpack-entries/-value are read at each command."""
    return ctx.server.config



def with_scores(entries: Iterable[Entry], resp3: bool) -> list[Any]:
    """Member/score pairs: flat in RESP2, an array of pairs in RESP3."""
    if resp3:
        return [[m, Double(s)] for s, m in entries]
    out: list[Any] = []
    for s, m in entries:
        out.append(m)
        out.append(Double(s))
    return out


def scores_as_text(members: list[bytes], scores: list[float], resp3: bool) -> list[Any]:
    """A reply with scores from ``ZSetValue.columns``, as ``with_scores`` gives it for a
    connection speaking ``resp3``. In RESP2 a double is the bulk string of its text, so the
    text goes in as ``bytes``: no ``Double`` per score, and the encoder's bulk fast path."""
    if resp3:
        return [[m, Double(s)] for m, s in zip(members, scores, strict=True)]
    out: list[Any] = members + members  # the size; filled by the two slice assignments
    out[::2] = members
    out[1::2] = map(d2string, scores)
    return out


def members_of(entries: Iterable[Entry]) -> list[bytes]:
    return [m for _, m in entries]


def removed_from(ctx: Context, key: bytes, z: ZSetValue, changes: int, event: bytes,
                 notify_first: bool = False) -> None:
    """After members left ``key``: delete it if empty; signal the write, counting
    ``changes``; the keyspace ``event`` then "del" if the key went (a pop notifies before
    the write is signalled, as Redis's genericZpopCommand). Only a deletion may wake
    blocked clients (those waiting to hear of one): Redis makes a key ready when it is
    created, not when an existing set changes."""
    deleted = not len(z)
    if notify_first:
        ctx.notify(event, key)
    if deleted:
        ctx.db.delete(key)
        if notify_first:
            ctx.notify(b"del", key)
    ctx.modified(key, ready=deleted, changes=changes)
    if not notify_first:
        ctx.notify(event, key)
        if deleted:
            ctx.notify(b"del", key)


def store_zset(ctx: Context, dst: bytes, value: ZSetValue, event: bytes) -> None:
    """A STORE command's result replaces ``dst`` (its TTL too), as Redis's ``setKey``: a new
    key is ready for blocked pops; an existing one is overwritten in place, which wakes only
    the clients waiting to hear of a deleted key (so a BZPOPMIN waiting on a string that a
    ZUNIONSTORE replaces keeps waiting, as on Redis)."""
    db = ctx.db
    existed = db.find(dst) is not None
    db.set(dst, value)
    if existed:
        ctx.modified(dst, ready=False)
        ctx.server.blocking.signal_deleted_key_as_ready(db, dst)
    else:
        ctx.modified(dst)
    ctx.notify(event, dst)


def store_empty(ctx: Context, dst: bytes) -> None:
    """A STORE command with an empty result: ``dst`` is deleted ("del")."""
    if ctx.db.delete(dst):
        ctx.modified(dst)
        ctx.notify(b"del", dst)


def score_range(lo: bytes, hi: bytes) -> Any:
    rng = parse_score_range(lo, hi)
    if rng is None:
        raise CommandError(MIN_MAX_NOT_FLOAT)
    return rng


def lex_range(lo: bytes, hi: bytes) -> Any:
    rng = parse_lex_range(lo, hi)
    if rng is None:
        raise CommandError(MIN_MAX_NOT_LEX)
    return rng


# -- adding and removing -------------------------------------------------------------------

_ZADD_FLAGS = {b"NX": IN_NX, b"XX": IN_XX, b"INCR": IN_INCR, b"GT": IN_GT, b"LT": IN_LT}


def _zadd_one(ctx: Context, key: bytes, score: float, member: bytes) -> Reply:
    """``ZADD key score member``, no options: the general path below without its option
    scan, score list and counters (what most ZADDs are)."""
    z = get_zset(ctx, key)
    cfg = ctx.server.config
    created = z is None
    if z is None:
        z = ZSetValue.create(1, len(member), cfg)
        ctx.db.add(key, z)
    else:
        z.maybe_convert(1, cfg)
    out = z.add(score, member, 0, cfg)[0]
    if out & (OUT_ADDED | OUT_UPDATED):
        ctx.modified(key, ready=created)
        ctx.notify(b"zadd", key)
        return 1 if out & OUT_ADDED else 0
    return 0


def _zadd(ctx: Context, argv: list[bytes], flags: int) -> Reply:
    key = argv[1]
    if len(argv) == 4 and not flags:
        # A score that reads as a number cannot be an option (none does): ZADD key score
        # member, the common case.
        score = string2d(argv[2])
        if score is not None:
            return _zadd_one(ctx, key, score, argv[3])
    ch = False
    i = 2
    n = len(argv)
    while i < n:
        opt = argv[i].upper()
        bit = _ZADD_FLAGS.get(opt)
        if bit is not None:
            flags |= bit
        elif opt == b"CH":
            ch = True
        else:
            break
        i += 1
    pairs = n - i
    if pairs % 2 or not pairs:
        raise CommandError(SYNTAX)
    pairs //= 2
    if flags & IN_NX and flags & IN_XX:
        raise CommandError(ZADD_NX_XX)
    if (flags & IN_NX and flags & (IN_GT | IN_LT)) or (flags & IN_GT and flags & IN_LT):
        raise CommandError(ZADD_GT_LT_NX)
    incr = bool(flags & IN_INCR)
    if incr and pairs > 1:
        raise CommandError(ZADD_INCR_PAIRS)
    scores = []
    for j in range(i, n, 2):
        score = string2d(argv[j])
        if score is None:
            raise CommandError(NOT_FLOAT)
        scores.append(score)
    z = get_zset(ctx, key)
    added = updated = processed = 0
    score = 0.0
    if z is not None or not flags & IN_XX:
        cfg = limits(ctx)
        created = z is None
        if z is None:
            z = ZSetValue.create(pairs, len(argv[i + 1]), cfg)
            ctx.db.add(key, z)
        else:
            z.maybe_convert(pairs, cfg)
        add = z.add
        for k, score in enumerate(scores):
            out, score = add(score, argv[i + 1 + 2 * k], flags, cfg)
            if out & OUT_NAN:  # only with INCR, which takes one pair: nothing changed
                raise CommandError(ZSCORE_NAN)
            if out & OUT_ADDED:
                added += 1
            elif out & OUT_UPDATED:
                updated += 1
            if not out & OUT_NOP:
                processed += 1
        if added or updated:
            # A key created here is ready for blocked pops; an existing one is not made ready
            # again (Redis signals readiness in dbAdd only).
            ctx.modified(key, ready=created, changes=added + updated)
            ctx.notify(b"zincr" if incr else b"zadd", key)
    if incr:
        return Double(score) if processed else None
    return added + updated if ch else added


def zadd(ctx: Context, args: Args) -> Reply:
    return _zadd(ctx, args.argv, 0)


def zincrby(ctx: Context, args: Args) -> Reply:
    return _zadd(ctx, args.argv, IN_INCR)


def zrem(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    z = get_zset(ctx, key)
    if z is None:
        return 0
    deleted = 0
    for member in argv[2:]:
        if z.delete(member):
            deleted += 1
        if not len(z):
            break
    if deleted:
        removed_from(ctx, key, z, deleted, b"zrem")
    return deleted


# -- one member, counts --------------------------------------------------------------------


def zcard(ctx: Context, args: Args) -> Reply:
    z = get_zset(ctx, args.argv[1])
    return 0 if z is None else len(z)


def zscore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    z = get_zset(ctx, argv[1])
    if z is None:
        return None
    score = z.score(argv[2])
    return None if score is None else Double(score)


def zmscore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    z = get_zset(ctx, argv[1])
    if z is None:
        return [None] * (len(argv) - 2)
    out: list[Any] = []
    for member in argv[2:]:
        score = z.score(member)
        out.append(None if score is None else Double(score))
    return out


def _rank(ctx: Context, args: Args, reverse: bool) -> Reply:
    argv = args.argv
    if len(argv) > 4:
        raise wrong_arity(command_name(ctx))
    withscore = False
    if len(argv) == 4:
        if argv[3].upper() != b"WITHSCORE":
            raise CommandError(SYNTAX)
        withscore = True
    z = get_zset(ctx, argv[1])
    found = None if z is None else z.rank(argv[2], reverse)
    if found is None:
        return NULL_ARRAY if withscore else None
    if withscore:
        return [found[0], Double(found[1])]
    return found[0]


def zrank(ctx: Context, args: Args) -> Reply:
    return _rank(ctx, args, False)


def zrevrank(ctx: Context, args: Args) -> Reply:
    return _rank(ctx, args, True)


def zcount(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    rng = score_range(argv[2], argv[3])
    z = get_zset(ctx, argv[1])
    if z is None:
        return 0
    i, j = z.score_bounds(rng)
    return j - i


def zlexcount(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    rng = lex_range(argv[2], argv[3])
    z = get_zset(ctx, argv[1])
    if z is None:
        return 0
    i, j = z.lex_bounds(rng)
    return j - i


# -- pops ----------------------------------------------------------------------------------


def _pop(ctx: Context, key: bytes, z: ZSetValue, count: int, highest: bool) -> list[Entry]:
    """Pop up to ``count`` from ``key``'s set (deleting an emptied key); counts each."""
    popped = z.pop(count, highest)
    removed_from(ctx, key, z, len(popped), b"zpopmax" if highest else b"zpopmin",
                 notify_first=True)
    return popped


def _zpop(ctx: Context, args: Args, highest: bool) -> Reply:
    argv = args.argv
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    count = -1
    if len(argv) == 3:
        count = parse_range_long(argv[2], 0, LONG_MAX, LIST_COUNT_NOT_POSITIVE)
    key = argv[1]
    z = get_zset(ctx, key)
    if z is None or count == 0:
        return []
    popped = _pop(ctx, key, z, 1 if count == -1 else count, highest)
    if count == -1 or not ctx.resp3:
        return with_scores(popped, False)
    return with_scores(popped, True)


def zpopmin(ctx: Context, args: Args) -> Reply:
    return _zpop(ctx, args, False)


def zpopmax(ctx: Context, args: Args) -> Reply:
    return _zpop(ctx, args, True)


def _parse_mpop(argv: list[bytes], numkeys_at: int) -> tuple[list[bytes], bool, int]:
    """ZMPOP/BZMPOP's ``numkeys key [key ...] MIN|MAX [COUNT count]`` (``zmpopGenericCommand``)."""
    numkeys = parse_range_long(argv[numkeys_at], 1, LONG_MAX, NUMKEYS_POSITIVE)
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise CommandError(SYNTAX)
    where = argv[where_at].upper()
    if where not in (b"MIN", b"MAX"):
        raise CommandError(SYNTAX)
    count = -1
    j = where_at + 1
    while j < len(argv):
        if count == -1 and argv[j].upper() == b"COUNT" and j + 1 < len(argv):
            count = parse_range_long(argv[j + 1], 1, LONG_MAX, COUNT_POSITIVE)
            j += 2
        else:
            raise CommandError(SYNTAX)
    return argv[numkeys_at + 1:where_at], where == b"MAX", 1 if count == -1 else count


def _mpop_from(ctx: Context, keys: list[bytes], highest: bool, count: int) -> Reply:
    """The first non-empty set of ``keys`` popped: ``[key, [[member, score], ...]]``, logged
    as ZPOPMIN/ZPOPMAX key count; None when every key is missing."""
    for key in keys:
        z = get_zset(ctx, key)
        if z is None:
            continue
        n = min(count, len(z))
        popped = _pop(ctx, key, z, count, highest)
        ctx.rewrite_argv([b"ZPOPMAX" if highest else b"ZPOPMIN", key, b"%d" % n])
        return [key, with_scores(popped, True)]
    return None


def zmpop(ctx: Context, args: Args) -> Reply:
    keys, highest, count = _parse_mpop(args.argv, 1)
    reply = _mpop_from(ctx, keys, highest, count)
    return NULL_ARRAY if reply is None else reply


def _bzpop(ctx: Context, args: Args, highest: bool) -> Reply:
    argv = args.argv
    keys = argv[1:-1]
    timeout = parse_timeout(argv[-1], ctx.now_ms())
    for key in keys:
        z = get_zset(ctx, key)
        if z is None:
            continue
        (score, member), = _pop(ctx, key, z, 1, highest)
        ctx.rewrite_argv([b"ZPOPMAX" if highest else b"ZPOPMIN", key])
        return [key, member, Double(score)]
    return ctx.block(keys, timeout, NULL_ARRAY)


def bzpopmin(ctx: Context, args: Args) -> Reply:
    return _bzpop(ctx, args, False)


def bzpopmax(ctx: Context, args: Args) -> Reply:
    return _bzpop(ctx, args, True)


def bzmpop(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    keys, highest, count = _parse_mpop(argv, 2)
    timeout = parse_timeout(argv[1], ctx.now_ms())
    reply = _mpop_from(ctx, keys, highest, count)
    if reply is None:
        return ctx.block(keys, timeout, NULL_ARRAY)
    return reply


# -- random members and ZSCAN --------------------------------------------------------------


def zrandmember(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) >= 3:
        n = parse_range_long(argv[2], -LONG_MAX, LONG_MAX)
        withscores = False
        if len(argv) > 4 or (len(argv) == 4 and argv[3].upper() != b"WITHSCORES"):
            raise CommandError(SYNTAX)
        if len(argv) == 4:
            withscores = True
            if not -LONG_MAX // 2 <= n <= LONG_MAX // 2:
                raise CommandError(VALUE_OUT_OF_RANGE)
        z = get_zset(ctx, argv[1])
        if z is None or n == 0:
            return []
        entries = z.random_entries(n if n > 0 else capped_repeats(-n, ctx.reply_room()), n > 0)
        return with_scores(entries, ctx.resp3) if withscores else members_of(entries)
    z = get_zset(ctx, argv[1])
    return None if z is None else z.random_entry()[1]


def zscan(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    cursor = parse_cursor(args.next())
    z = get_zset(ctx, key)
    if z is None:
        return [b"0", []]
    count, match, _ = parse_scan_options(args)
    nxt, entries = z.scan(cursor, count, match)
    # A listpack's scores are the text it stores (d2string); a skiplist's are printed with
    # %.17g (Redis's ld2string(LD_STR_AUTO) in its scan callback).
    fmt = format_double if z.enc == LISTPACK else zscan_score
    out: list[bytes] = []
    for s, m in entries:
        out.append(m)
        out.append(fmt(s))
    return [b"%d" % nxt, out]


# -- the table -----------------------------------------------------------------------------

_Z = A.SORTEDSET
_ND = ("nondeterministic_output",)
_LOG = "O(log(N)) with N being the number of elements in the sorted set."
_POP = ("O(log(N)*M) with N being the number of elements in the sorted set, and M being the "
        "number of elements popped.")
_MPOP = ("O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of "
         "elements in the sorted set, and M being the number of elements popped.")
_SCAN = ("O(1) for every call. O(N) for a complete iteration, including enough command calls for "
         "the cursor to return back to 0. N is the number of elements inside the collection.")
_POPKEY = key_at(1, RW | ACCESS | DELETE)

COMMANDS = (
    #   name           arity  flags                       acl  keys                                handler
    cmd("zadd",          -4,  WRITE | DENYOOM | FAST,     _Z,  key_at(1, RW | UPDATE),             zadd,
        "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
        group="sorted-set", since="1.2.0",
        complexity="O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        syntax="key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]"),
    cmd("zincrby",        4,  WRITE | DENYOOM | FAST,     _Z,  key_at(1, RW | ACCESS | UPDATE),    zincrby,
        "Increments the score of a member in a sorted set.", group="sorted-set", since="1.2.0",
        complexity="O(log(N)) where N is the number of elements in the sorted set.",
        syntax="key increment member"),
    cmd("zrem",          -3,  WRITE | FAST,               _Z,  key_at(1, RW | DELETE),             zrem,
        "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
        group="sorted-set", since="1.2.0",
        complexity="O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        syntax="key member [member ...]"),
    cmd("zcard",          2,  READONLY | FAST,            _Z,  key_at(1, RO),                      zcard,
        "Returns the number of members in a sorted set.", group="sorted-set", since="1.2.0",
        complexity="O(1)", syntax="key"),
    cmd("zscore",         3,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zscore,
        "Returns the score of a member in a sorted set.", group="sorted-set", since="1.2.0",
        complexity="O(1)", syntax="key member"),
    cmd("zmscore",       -3,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zmscore,
        "Returns the score of one or more members in a sorted set.", group="sorted-set",
        since="6.2.0", complexity="O(N) where N is the number of members being requested.",
        syntax="key member [member ...]"),
    cmd("zrank",         -3,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zrank,
        "Returns the index of a member in a sorted set ordered by ascending scores.",
        group="sorted-set", since="2.0.0", complexity="O(log(N))",
        syntax="key member [WITHSCORE]"),
    cmd("zrevrank",      -3,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zrevrank,
        "Returns the index of a member in a sorted set ordered by descending scores.",
        group="sorted-set", since="2.0.0", complexity="O(log(N))",
        syntax="key member [WITHSCORE]"),
    cmd("zcount",         4,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zcount,
        "Returns the count of members in a sorted set that have scores within a range.",
        group="sorted-set", since="2.0.0", complexity=_LOG, syntax="key min max"),
    cmd("zlexcount",      4,  READONLY | FAST,            _Z,  key_at(1, RO | ACCESS),             zlexcount,
        "Returns the number of members in a sorted set within a lexicographical range.",
        group="sorted-set", since="2.8.9", complexity=_LOG, syntax="key min max"),
    cmd("zpopmin",       -2,  WRITE | FAST,               _Z,  _POPKEY,                            zpopmin,
        "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        group="sorted-set", since="5.0.0", complexity=_POP, syntax="key [count]"),
    cmd("zpopmax",       -2,  WRITE | FAST,               _Z,  _POPKEY,                            zpopmax,
        "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        group="sorted-set", since="5.0.0", complexity=_POP, syntax="key [count]"),
    cmd("zmpop",         -4,  WRITE,                      _Z,  keys_counted(1, RW | ACCESS | DELETE), zmpop,
        "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
        group="sorted-set", since="7.0.0", complexity=_MPOP,
        syntax="numkeys key [key ...] <MIN | MAX> [COUNT count]"),
    cmd("bzpopmin",      -3,  WRITE | BLOCKING | FAST,    _Z,  key_at(1, RW | ACCESS | DELETE, last=-2), bzpopmin,
        "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        group="sorted-set", since="5.0.0", complexity=_LOG, syntax="key [key ...] timeout"),
    cmd("bzpopmax",      -3,  WRITE | BLOCKING | FAST,    _Z,  key_at(1, RW | ACCESS | DELETE, last=-2), bzpopmax,
        "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.",
        group="sorted-set", since="5.0.0", complexity=_LOG, syntax="key [key ...] timeout"),
    cmd("bzmpop",        -5,  WRITE | BLOCKING,           _Z,  keys_counted(2, RW | ACCESS | DELETE), bzmpop,
        "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        group="sorted-set", since="7.0.0", complexity=_MPOP,
        syntax="timeout numkeys key [key ...] <MIN | MAX> [COUNT count]"),
    cmd("zrandmember",   -2,  READONLY,                   _Z,  key_at(1, RO | ACCESS),             zrandmember,
        "Returns one or more random members from a sorted set.", group="sorted-set",
        since="6.2.0", complexity="O(N) where N is the number of members returned",
        syntax="key [count [WITHSCORES]]", tips=_ND),
    cmd("zscan",         -3,  READONLY,                   _Z,  key_at(1, RO | ACCESS),             zscan,
        "Iterates over members and scores of a sorted set.", group="sorted-set", since="2.8.0",
        complexity=_SCAN, syntax="key cursor [MATCH pattern] [COUNT count]", tips=_ND),
)
