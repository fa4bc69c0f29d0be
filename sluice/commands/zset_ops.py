"""Sorted set operations: ZUNION, ZINTER, ZDIFF, their STORE forms, and ZINTERCARD
(Redis's ``zunionInterDiffGenericCommand``).

Inputs may be sorted sets or plain sets (whose members score 1). Checks in Redis's order:
numkeys (at least one key, no more keys than arguments), each key's type, then the options
(WEIGHTS with one weight per key, AGGREGATE SUM|MIN|MAX, WITHSCORES without a destination,
LIMIT for ZINTERCARD; each only where it applies, anything else a syntax error).

Arithmetic as Redis: a weighted score that is NaN (``inf * 0``) counts as 0, and so does a SUM
that is NaN (``inf + -inf``). Union and intersection visit the inputs from the smallest; the
difference picks the cheaper of Redis's two algorithms, which only changes the work done. A
result is sorted by score then member; a STORE result is a skiplist turned into a listpack
when it is small enough, replaces the destination (one change counted), or deletes it when
empty.
"""

from __future__ import annotations

from collections.abc import Iterator

from sluice.storage.keyspace import WrongTypeError
from sluice.storage.scores import string2d
from sluice.storage.sets import SetValue
from sluice.storage.zsets import ZSetValue

from .args import LONG_MAX, Args, parse_int, parse_range_long
from .context import Context, Reply, command_name
from .errors import (
    LIMIT_NEGATIVE,
    SYNTAX,
    WEIGHT_NOT_FLOAT,
    ZSETOP_NO_KEYS,
    CommandError,
)
from .spec import ACCESS, DENYOOM, OW, READONLY, RO, UPDATE, WRITE, A, cmd, key_at, keys_counted
from .zsets import limits, members_of, store_empty, store_zset, with_scores

UNION, INTER, DIFF = 0, 1, 2
SUM, MIN, MAX = 0, 1, 2

Source = ZSetValue | SetValue | None


def _entries(src: Source) -> Iterator[tuple[float, bytes]]:
    """An input's (score, member) pairs in its order (a set's members score 1)."""
    if src is None:
        return iter(())
    if type(src) is ZSetValue:
        return iter(src)
    assert type(src) is SetValue
    return ((1.0, m) for m in src)


def _score(src: Source, member: bytes) -> float | None:
    if src is None:
        return None
    if type(src) is ZSetValue:
        return src.score(member)
    return 1.0 if member in src else None


def _aggregate(target: float, value: float, how: int) -> float:
    """``zunionInterAggregate``."""
    if how == SUM:
        total = target + value
        return 0.0 if total != total else total
    if how == MIN:
        return value if value < target else target
    return value if value > target else target


def _generic(ctx: Context, argv: list[bytes], numkeys_at: int, dst: bytes | None, op: int,
             card_only: bool = False) -> Reply:
    setnum = parse_int(argv[numkeys_at])
    if setnum < 1:
        raise CommandError(ZSETOP_NO_KEYS % command_name(ctx))
    if setnum > len(argv) - (numkeys_at + 1):
        raise CommandError(SYNTAX)
    keys = argv[numkeys_at + 1:numkeys_at + 1 + setnum]
    db = ctx.db
    srcs: list[Source] = []
    for key in keys:
        value = db.get(key)
        if value is not None and type(value) is not ZSetValue and type(value) is not SetValue:
            raise WrongTypeError()
        srcs.append(value)
    weights = [1.0] * setnum
    how = SUM
    withscores = False
    limit = 0
    j = numkeys_at + 1 + setnum
    n = len(argv)
    while j < n:
        opt = argv[j].upper()
        left = n - j
        if op != DIFF and not card_only and left >= setnum + 1 and opt == b"WEIGHTS":
            for i in range(setnum):
                w = string2d(argv[j + 1 + i])
                if w is None:
                    raise CommandError(WEIGHT_NOT_FLOAT)
                weights[i] = w
            j += 1 + setnum
        elif op != DIFF and not card_only and left >= 2 and opt == b"AGGREGATE":
            agg = argv[j + 1].upper()
            if agg == b"SUM":
                how = SUM
            elif agg == b"MIN":
                how = MIN
            elif agg == b"MAX":
                how = MAX
            else:
                raise CommandError(SYNTAX)
            j += 2
        elif dst is None and not card_only and opt == b"WITHSCORES":
            withscores = True
            j += 1
        elif card_only and left >= 2 and opt == b"LIMIT":
            limit = parse_range_long(argv[j + 1], 0, LONG_MAX, LIMIT_NEGATIVE)
            j += 2
        else:
            raise CommandError(SYNTAX)
    pairs = list(zip(srcs, weights, strict=True))
    if op != DIFF:
        pairs.sort(key=lambda p: 0 if p[0] is None else len(p[0]))  # stable, as qsort here
    result: dict[bytes, float] = {}
    if op == INTER:
        first, w0 = pairs[0]
        if first is not None and len(first):
            count = 0
            for base, member in _entries(first):
                score = base * w0
                if score != score:
                    score = 0.0
                for src, w in pairs[1:]:
                    other = base if src is first else _score(src, member)
                    if other is None:
                        break
                    score = _aggregate(score, other * w, how)
                else:
                    if card_only:
                        count += 1
                        if limit and count >= limit:
                            break
                    else:
                        result[member] = score
            if card_only:
                return count
        elif card_only:
            return 0
    elif op == UNION:
        for src, w in pairs:
            for score, member in _entries(src):
                score *= w
                if score != score:
                    score = 0.0
                old = result.get(member)
                result[member] = score if old is None else _aggregate(old, score, how)
    else:
        first = srcs[0]
        if first is not None and len(first) and not any(s is first for s in srcs[1:]):
            others = [s for s in srcs[1:] if s is not None]
            for score, member in _entries(first):
                if not any(_score(s, member) is not None for s in others):
                    result[member] = score
    if dst is not None:
        if result:
            store_zset(ctx, dst, ZSetValue.from_scores(result, limits(ctx)),
                       command_name(ctx).encode())  # zunionstore, zinterstore, zdiffstore
            return len(result)
        store_empty(ctx, dst)
        return 0
    entries = sorted((s, m) for m, s in result.items())
    return with_scores(entries, ctx.resp3) if withscores else members_of(entries)


def zunion(ctx: Context, args: Args) -> Reply:
    return _generic(ctx, args.argv, 1, None, UNION)


def zinter(ctx: Context, args: Args) -> Reply:
    return _generic(ctx, args.argv, 1, None, INTER)


def zdiff(ctx: Context, args: Args) -> Reply:
    return _generic(ctx, args.argv, 1, None, DIFF)


def zintercard(ctx: Context, args: Args) -> Reply:
    return _generic(ctx, args.argv, 1, None, INTER, card_only=True)


def zunionstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _generic(ctx, argv, 2, argv[1], UNION)


def zinterstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _generic(ctx, argv, 2, argv[1], INTER)


def zdiffstore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _generic(ctx, argv, 2, argv[1], DIFF)


# -- the table -----------------------------------------------------------------------------

_Z = A.SORTEDSET
_KEYS = keys_counted(1, RO | ACCESS)
_STORE = (key_at(1, OW | UPDATE), keys_counted(2, RO | ACCESS))
_UNION = ("O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M "
          "being the number of elements in the resulting sorted set.")
_INTER = ("O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the "
          "number of input sorted sets and M being the number of elements in the resulting "
          "sorted set.")
_DIFF = ("O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, "
         "N is the size of the first set, and K is the size of the result set.")
_OPTS = "[WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]"

COMMANDS = (
    #   name           arity  flags             acl  keys    handler
    cmd("zunion",        -3,  READONLY,         _Z,  _KEYS,  zunion,
        "Returns the union of multiple sorted sets.", group="sorted-set", since="6.2.0",
        complexity=_UNION, syntax=f"numkeys key [key ...] {_OPTS} [WITHSCORES]"),
    cmd("zinter",        -3,  READONLY,         _Z,  _KEYS,  zinter,
        "Returns the intersect of multiple sorted sets.", group="sorted-set", since="6.2.0",
        complexity=_INTER, syntax=f"numkeys key [key ...] {_OPTS} [WITHSCORES]"),
    cmd("zdiff",         -3,  READONLY,         _Z,  _KEYS,  zdiff,
        "Returns the difference between multiple sorted sets.", group="sorted-set",
        since="6.2.0", complexity=_DIFF, syntax="numkeys key [key ...] [WITHSCORES]"),
    cmd("zintercard",    -3,  READONLY,         _Z,  _KEYS,  zintercard,
        "Returns the number of members of the intersect of multiple sorted sets.",
        group="sorted-set", since="7.0.0",
        complexity="O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        syntax="numkeys key [key ...] [LIMIT limit]"),
    cmd("zunionstore",   -4,  WRITE | DENYOOM,  _Z,  _STORE, zunionstore,
        "Stores the union of multiple sorted sets in a key.", group="sorted-set",
        since="2.0.0",
        complexity="O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        syntax=f"destination numkeys key [key ...] {_OPTS}", reads=True),
    cmd("zinterstore",   -4,  WRITE | DENYOOM,  _Z,  _STORE, zinterstore,
        "Stores the intersect of multiple sorted sets in a key.", group="sorted-set",
        since="2.0.0", complexity=_INTER, syntax=f"destination numkeys key [key ...] {_OPTS}", reads=True),
    cmd("zdiffstore",    -4,  WRITE | DENYOOM,  _Z,  _STORE, zdiffstore,
        "Stores the difference of multiple sorted sets in a key.", group="sorted-set",
        since="6.2.0", complexity=_DIFF, syntax="destination numkeys key [key ...]", reads=True),
)
