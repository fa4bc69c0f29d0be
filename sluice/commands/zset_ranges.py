"""Sorted set range commands: ZRANGE (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZRANGESTORE,
the older ZRANGEBYSCORE / ZREVRANGEBYSCORE / ZRANGEBYLEX / ZREVRANGEBYLEX / ZREVRANGE, and
ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX (Redis's ``zrangeGenericCommand`` and
``zremrangeGenericCommand``).

All the reading forms go through ``_zrange`` with the range type and direction the command
fixes (ZRANGE leaves both to its options), so options are checked in Redis's order: the
options first (an unknown one is a syntax error), then LIMIT with a rank range and
WITHSCORES with BYLEX, then the range itself, then the key. With REV, BYSCORE and BYLEX take
the range as ``max min``. ZRANGESTORE stores the result (built as Redis's STORE results are,
see ``ZSetValue.from_scores``) or deletes the destination when it is empty; it counts one
change either way it writes.
"""

from __future__ import annotations

from sluice.protocol import Raw
from sluice.protocol.encoder import array_header, bulk_string, double_pieces
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.zsets import ZSetValue, member_render

from .args import Args, parse_int
from .context import Context, Reply, command_name
from .errors import SYNTAX, ZRANGE_LIMIT_RANK, ZRANGE_WITHSCORES_BYLEX, CommandError
from .spec import ACCESS, DELETE, DENYOOM, OW, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at
from .zsets import (
    get_zset,
    lex_range,
    limits,
    removed_from,
    score_range,
    store_empty,
    store_zset,
)

RANK, SCORE, LEX = 1, 2, 3  # zrange_type; 0 = decided by the options (ZRANGE)

_BULK = member_render(bulk_string)  # the one render the sorted sets' cached pieces come from
_PAIR = b"*2\r\n"
# The indexes of ZRANGE's fast path looked up instead of parsed: exactly the texts
# string2ll accepts for these values (no sign but '-', no leading zero).
_INDEX = {b"%d" % i: i for i in range(-1000, 1000)}


def members_reply(z: ZSetValue, i: int, j: int, reverse: bool) -> Raw:
    """The members at positions ``[i, j)`` as an array of bulk strings (the same bytes in
    RESP2 and RESP3), joined from the pieces the set keeps for them: no per-member work
    once a member has been read before."""
    return Raw(z.joined(i, j, reverse, _BULK, array_header))


def scores_reply(z: ZSetValue, i: int, j: int, reverse: bool, resp3: bool) -> Raw:
    """``scores_as_text(*z.columns(i, j, reverse), resp3)``, encoded: members from their
    kept pieces, each followed by its score (a bulk string in RESP2, pairs of member and
    double in RESP3)."""
    pieces = z.rendered(i, j, reverse, _BULK)
    scores = double_pieces(z.scores(i, j, reverse), resp3)
    n = len(pieces)
    if resp3:  # [[member, score] ...]: a pair header, a member, a score, and again
        body = [_PAIR] * (3 * n)
        body[1::3] = pieces
        body[2::3] = scores
        return Raw(array_header(n) + b"".join(body))
    body = pieces + scores  # member, score, member ... (the two slice assignments)
    body[::2] = pieces
    body[1::2] = scores
    return Raw(array_header(2 * n) + b"".join(body))


def _zrange(ctx: Context, argv: list[bytes], at: int, store: bool, rangetype: int,
            reverse: bool | None) -> Reply:
    """``zrangeGenericCommand``: ``argv[at]`` is the source key, then min, max, options.
    ``reverse`` None: decided by REV."""
    withscores = False
    offset, limit = 0, -1
    j = at + 3
    n = len(argv)
    while j < n:
        opt = argv[j].upper()
        left = n - j - 1
        if not store and opt == b"WITHSCORES":
            withscores = True
        elif opt == b"LIMIT" and left >= 2:
            offset = parse_int(argv[j + 1])
            limit = parse_int(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"REV":
            reverse = True
        elif not rangetype and opt == b"BYLEX":
            rangetype = LEX
        elif not rangetype and opt == b"BYSCORE":
            rangetype = SCORE
        else:
            raise CommandError(SYNTAX)
        j += 1
    reverse = bool(reverse)
    rangetype = rangetype or RANK
    if limit != -1 and rangetype == RANK:
        raise CommandError(ZRANGE_LIMIT_RANK)
    if withscores and rangetype == LEX:
        raise CommandError(ZRANGE_WITHSCORES_BYLEX)
    lo, hi = argv[at + 1], argv[at + 2]
    if reverse and rangetype != RANK:
        lo, hi = hi, lo  # given as max min
    if rangetype == RANK:
        start, end = parse_int(lo), parse_int(hi)
    elif rangetype == SCORE:
        rng = score_range(lo, hi)
    else:
        rng = lex_range(lo, hi)
    z = get_zset(ctx, argv[at])
    if z is None:
        return _stored(ctx, argv[1], []) if store else []
    if rangetype == RANK:
        i, j = z.rank_bounds(start, end, reverse)
    elif rangetype == SCORE:
        i, j = z.limit_bounds(z.score_bounds(rng), offset, limit, reverse)
    else:
        bounds = z.last_lex_bounds(rng) if reverse else z.lex_bounds(rng)
        i, j = z.limit_bounds(bounds, offset, limit, reverse)
    if store:
        return _stored(ctx, argv[1], z.entries(i, j, reverse))
    if withscores:
        return scores_reply(z, i, j, reverse, ctx.resp3)
    return members_reply(z, i, j, reverse)


def _stored(ctx: Context, dst: bytes, entries: list[tuple[float, bytes]]) -> int:
    """ZRANGESTORE's end: the range replaces ``dst`` (TTL included), or deletes it."""
    if entries:
        store_zset(ctx, dst, ZSetValue.from_scores({m: s for s, m in entries}, limits(ctx)),
                   b"zrangestore")
        return len(entries)
    store_empty(ctx, dst)
    return 0


def zrange(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) == 4:
        # ZRANGE key start stop, no option: _zrange's steps for a rank range (the indexes,
        # then the key), without its option scan and range-type dispatch.
        start, end = _INDEX.get(argv[2]), _INDEX.get(argv[3])
        if start is None:
            start = parse_int(argv[2])
        if end is None:
            end = parse_int(argv[3])
        z = ctx.db.get(argv[1])  # get_zset, inlined
        if type(z) is ZSetValue:
            return Raw(z.rank_joined(start, end, _BULK, array_header))
        if z is None:
            return []
        raise WrongTypeError()
    return _zrange(ctx, argv, 1, False, 0, None)


def zrangestore(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 2, True, 0, None)


def zrevrange(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 1, False, RANK, True)


def zrangebyscore(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 1, False, SCORE, False)


def zrevrangebyscore(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 1, False, SCORE, True)


def zrangebylex(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 1, False, LEX, False)


def zrevrangebylex(ctx: Context, args: Args) -> Reply:
    return _zrange(ctx, args.argv, 1, False, LEX, True)


# -- ZREMRANGEBY* --------------------------------------------------------------------------


def _zremrange(ctx: Context, argv: list[bytes], rangetype: int) -> int:
    """``zremrangeGenericCommand``: parse, look up, remove, delete the key if emptied."""
    key = argv[1]
    if rangetype == RANK:
        start, end = parse_int(argv[2]), parse_int(argv[3])
    elif rangetype == SCORE:
        rng = score_range(argv[2], argv[3])
    else:
        rng = lex_range(argv[2], argv[3])
    z = get_zset(ctx, key)
    if z is None:
        return 0
    if rangetype == RANK:
        i, j = z.rank_bounds(start, end)
    elif rangetype == SCORE:
        i, j = z.score_bounds(rng)
    else:
        i, j = z.lex_bounds(rng)
    deleted = z.remove_positions(i, j)
    if deleted:
        removed_from(ctx, key, z, deleted, command_name(ctx).encode())  # zremrangeby*
    return deleted


def zremrangebyrank(ctx: Context, args: Args) -> Reply:
    return _zremrange(ctx, args.argv, RANK)


def zremrangebyscore(ctx: Context, args: Args) -> Reply:
    return _zremrange(ctx, args.argv, SCORE)


def zremrangebylex(ctx: Context, args: Args) -> Reply:
    return _zremrange(ctx, args.argv, LEX)


# -- the table -----------------------------------------------------------------------------

_Z = A.SORTEDSET
_RD = key_at(1, RO | ACCESS)
_RM = key_at(1, RW | DELETE)
_LOGM = ("O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
         "elements returned.")
_LOGM_LIMIT = ("O(log(N)+M) with N being the number of elements in the sorted set and M the "
               "number of elements being returned. If M is constant (e.g. always asking for the "
               "first 10 elements with LIMIT), you can consider it O(log(N)).")
_LOGM_REM = ("O(log(N)+M) with N being the number of elements in the sorted set and M the number "
             "of elements removed by the operation.")
_DEP = ("deprecated",)

COMMANDS = (
    #   name                arity  flags              acl  keys  handler
    cmd("zrange",             -4,  READONLY,          _Z,  _RD,  zrange,
        "Returns members in a sorted set within a range of indexes.", group="sorted-set",
        since="1.2.0", complexity=_LOGM,
        syntax="key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]"),
    cmd("zrangestore",        -5,  WRITE | DENYOOM,   _Z,  (key_at(1, OW | UPDATE),
                                                             key_at(2, RO | ACCESS)),  zrangestore,
        "Stores a range of members from sorted set in a key.", group="sorted-set",
        since="6.2.0",
        complexity="O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        syntax="dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]", reads=True),
    cmd("zrevrange",          -4,  READONLY,          _Z,  _RD,  zrevrange,
        "Returns members in a sorted set within a range of indexes in reverse order.",
        group="sorted-set", since="1.2.0", complexity=_LOGM, doc_flags=_DEP,
        syntax="key start stop [WITHSCORES]"),
    cmd("zrangebyscore",      -4,  READONLY,          _Z,  _RD,  zrangebyscore,
        "Returns members in a sorted set within a range of scores.", group="sorted-set",
        since="1.0.5", complexity=_LOGM_LIMIT, doc_flags=_DEP,
        syntax="key min max [WITHSCORES] [LIMIT offset count]"),
    cmd("zrevrangebyscore",   -4,  READONLY,          _Z,  _RD,  zrevrangebyscore,
        "Returns members in a sorted set within a range of scores in reverse order.",
        group="sorted-set", since="2.2.0", complexity=_LOGM_LIMIT, doc_flags=_DEP,
        syntax="key max min [WITHSCORES] [LIMIT offset count]"),
    cmd("zrangebylex",        -4,  READONLY,          _Z,  _RD,  zrangebylex,
        "Returns members in a sorted set within a lexicographical range.", group="sorted-set",
        since="2.8.9", complexity=_LOGM_LIMIT, doc_flags=_DEP,
        syntax="key min max [LIMIT offset count]"),
    cmd("zrevrangebylex",     -4,  READONLY,          _Z,  _RD,  zrevrangebylex,
        "Returns members in a sorted set within a lexicographical range in reverse order.",
        group="sorted-set", since="2.8.9", complexity=_LOGM_LIMIT, doc_flags=_DEP,
        syntax="key max min [LIMIT offset count]"),
    cmd("zremrangebyrank",     4,  WRITE,             _Z,  _RM,  zremrangebyrank,
        "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
        group="sorted-set", since="2.0.0", complexity=_LOGM_REM, syntax="key start stop"),
    cmd("zremrangebyscore",    4,  WRITE,             _Z,  _RM,  zremrangebyscore,
        "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
        group="sorted-set", since="1.2.0", complexity=_LOGM_REM, syntax="key min max"),
    cmd("zremrangebylex",      4,  WRITE,             _Z,  _RM,  zremrangebylex,
        "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
        group="sorted-set", since="2.8.9", complexity=_LOGM_REM, syntax="key min max"),
)
