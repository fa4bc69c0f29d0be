"""SORT and SORT_RO: sort a list, set or sorted set, by its elements or by other keys.

Mirrors Redis's sort.c (``sortCommandGeneric``, ``lookupKeyByPattern``, ``sortCompare``):

* Options parse left to right (the last ASC/DESC, LIMIT, BY, STORE wins; GET accumulates);
  LIMIT's numbers and the ACL rule come first, then the key's type, then the weights.
* ``BY pattern``: ``*`` is replaced by each element and the key read (a string, or with
  ``->field`` a hash field); a missing key weighs 0 (or sorts first with ALPHA). A pattern
  without ``*`` means "don't sort" (``BY nosort``): a list or sorted set keeps its order
  (reversed with DESC, LIMIT read straight from it); a set is sorted ALPHA anyway when the
  result is stored or the command comes from a script (``ctx.is_script``), so that what is
  stored or what a script sees does not depend on the set's layout.
* ``GET pattern`` the same way, ``#`` for the element itself; missing values are nil (or
  empty strings in a stored list).
* Numbers are read as Redis 8's ``fast_float_strtod`` reads them (``storage/scores.py:
  range_strtod``); one that does not parse makes the whole command fail after sorting.
  Equal numbers fall back to comparing the elements; ALPHA compares bytes (Redis's
  ``strcoll`` in the C locale, which stops at a NUL byte; with STORE, the whole strings).
* Redis sorts with glibc's qsort (a stable merge sort), so equal keys keep the order of the
  source; with BY and a LIMIT it sorts partially with pqsort, whose order among equal keys
  is its own: ``storage/geohash.pqsort`` is that algorithm. (The source order of a set or a
  sorted set is its hash table's in Redis, which Sluice does not reproduce: equal ALPHA
  weights over a set may come out in another order.)
* As Redis 7, BY with a pattern and every GET need read access to all keys (``allkeys``
  or ``%R~*``) for the user running the command, since the keys they read are not known
  before it runs: otherwise the command is refused.
* A sorted set is converted to the skiplist encoding first, as Redis does (even SORT_RO).
* STORE writes a list (its encoding chosen as for any new list) replacing the destination,
  or deletes it when the result is empty; it counts one change per element and is logged
  as sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from sluice.storage.geohash import pqsort
from sluice.storage.hashes import Hash
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.lists import ListValue
from sluice.storage.rawstring import string_bytes
from sluice.storage.scores import range_strtod
from sluice.storage.sets import SetValue
from sluice.storage.zsets import LISTPACK, ZSetValue

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    SORT_BY_ACL,
    SORT_GET_ACL,
    SORT_NOT_DOUBLE,
    SYNTAX,
    CommandError,
)
from .hash_common import Effects, get_value
from .spec import ACCESS, DENYOOM, OW, READONLY, RO, UPDATE, WRITE, A, KeySpec, cmd, key_at


def _lookup(ctx: Context, pattern: bytes, element: bytes, effects: Effects) -> bytes | None:
    """``lookupKeyByPattern``: the value ``pattern`` names for ``element``, or None. A hash
    field read past its TTL is deleted on the way (noted in ``effects``), as Redis's
    ``hashTypeGetValueObject`` with ``HFE_LAZY_EXPIRE`` does."""
    if pattern == b"#" or pattern[:2] == b"#\0":
        return element
    star = pattern.find(b"*")
    nul = pattern.find(b"\0")
    if star < 0 or (0 <= nul < star):
        return None
    arrow = pattern.find(b"->", star + 1)
    end = len(pattern) if nul < 0 else nul  # C's strstr stops at a NUL
    field = None
    if 0 <= arrow < end - 2:
        field = pattern[arrow + 2:]
        key = pattern[:star] + element + pattern[star + 1:arrow]
    else:
        key = pattern[:star] + element + pattern[star + 1:]
    value = ctx.db.get(key)
    if value is None:
        return None
    if field is None:
        return string_bytes(value)
    if type(value) is not Hash:
        return None
    gone = Effects(key)
    _, got = get_value(ctx, key, value, field, ctx.now_ms(), gone)
    effects.ops += gone.ops
    return got


def _full_key_access(ctx: Context) -> bool:
    """``ACLUserCheckCmdWithUnrestrictedKeyAccess`` with read access."""
    acl = ctx.server.acl
    if acl is None:
        return True
    user = acl.users.get(ctx.user)
    cmd_row = ctx.cmd
    return user is None or cmd_row is None or user.reads_every_key(cmd_row, ctx.argv)


def _cstr(value: bytes) -> bytes:
    """A string as C's string functions see it: up to the first NUL."""
    nul = value.find(b"\0")
    return value if nul < 0 else value[:nul]


def _sort(ctx: Context, args: Args, readonly: bool) -> Reply:
    effects = Effects(b"")  # HDELs of hash fields found expired while reading BY / GET
    wrote = False
    try:
        reply, wrote = _sort_generic(ctx, args.argv, readonly, effects)
        return reply
    finally:
        if effects.ops:
            # The deletions are logged whatever happens next, then SORT itself if it wrote
            # (``Effects.log`` takes over from dispatch's own logging).
            effects.log(ctx, *([list(args.argv)] if wrote else []))


def _sort_generic(ctx: Context, argv: list[bytes], readonly: bool, effects: Effects
                  ) -> tuple[Reply, bool]:
    """``sortCommandGeneric``: (the reply, whether STORE wrote or deleted its key)."""
    desc = alpha = dontsort = False
    limit_start, limit_count = 0, -1
    sortby: bytes | None = None
    store: bytes | None = None
    gets: list[bytes] = []
    full_access: bool | None = None
    j = 2
    argc = len(argv)
    while j < argc:
        left = argc - j - 1
        opt = argv[j].lower()
        if opt == b"asc":
            desc = False
        elif opt == b"desc":
            desc = True
        elif opt == b"alpha":
            alpha = True
        elif opt == b"limit" and left >= 2:
            limit_start = parse_int(argv[j + 1])
            limit_count = parse_int(argv[j + 2])
            j += 2
        elif opt == b"store" and left >= 1 and not readonly:
            store = argv[j + 1]
            j += 1
        elif opt == b"by" and left >= 1:
            sortby = argv[j + 1]
            if b"*" not in sortby.split(b"\0", 1)[0]:
                dontsort = True
            else:
                if full_access is None:
                    full_access = _full_key_access(ctx)
                if not full_access:
                    raise CommandError(SORT_BY_ACL)
            j += 1
        elif opt == b"get" and left >= 1:
            if full_access is None:
                full_access = _full_key_access(ctx)
            if not full_access:
                raise CommandError(SORT_GET_ACL)
            gets.append(argv[j + 1])
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1

    value = ctx.db.get(argv[1])
    if value is not None and type(value) not in (ListValue, SetValue, ZSetValue):
        raise WrongTypeError()
    if value is None:
        value = ListValue()
    if dontsort and type(value) is SetValue and (store is not None or ctx.is_script):
        # a stored result, or a script's, must not depend on layout
        dontsort, alpha, sortby = False, True, None
    if type(value) is ZSetValue and value.enc == LISTPACK:
        value.to_skiplist()  # as Redis: zsetConvert(sortval, OBJ_ENCODING_SKIPLIST)

    n = len(value)
    start = min(max(limit_start, 0), n)
    count = min(max(limit_count, -1), n)
    end = n - 1 if count < 0 else start + count - 1
    if start >= n:
        start, end = n - 1, n - 2
    if end >= n:
        end = n - 1

    if dontsort and type(value) is not SetValue:
        # Straight from the list or sorted set, in its order, LIMIT applied on the way.
        if end >= start:
            if type(value) is ListValue:
                items = list(reversed(value.items) if desc else value.items)[start:end + 1]
            else:
                zs: ZSetValue = value
                items = (zs.members(n - 1 - end, n - start, reverse=True) if desc
                         else zs.members(start, end + 1))
        else:
            items = []
        start, end = 0, len(items) - 1
        vector = items
    else:
        if type(value) is ListValue:
            vector = list(value.items)
        elif type(value) is SetValue:
            vector = list(value)
        else:
            vector = list(value.d)  # the member dict, as Redis walks zs->dict
        if not dontsort:
            vector, failed = _sorted(ctx, vector, sortby, alpha, desc, store is not None,
                                     start, end, effects)
            if failed:
                raise CommandError(SORT_NOT_DOUBLE)

    chosen = vector[start:end + 1] if end >= start else []
    if store is None:
        if not gets:
            return chosen, False
        out: list[Any] = []
        for element in chosen:
            for pattern in gets:
                out.append(_lookup(ctx, pattern, element, effects))
        return out, False
    stored: list[bytes] = []
    for element in chosen:
        if not gets:
            stored.append(element)
            continue
        for pattern in gets:
            got = _lookup(ctx, pattern, element, effects)
            stored.append(b"" if got is None else got)
    db = ctx.db
    if stored:
        db.set(store, ListValue(stored, ctx.server.config.list_max_listpack_size))
        ctx.modified(store, changes=len(stored))
        ctx.notify(b"sortstore", store)
        return len(stored), True
    if db.delete(store):
        ctx.modified(store)
        ctx.notify(b"del", store)
        return 0, True
    return 0, False


_DIGITS_NL = b"0123456789\n"
# Numbers as fast_float reads them (Redis's build allows a leading +), one per line.
_NUMBERS = re.compile(rb"(?:[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\n)*"
                      rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _sorted(ctx: Context, vector: list[bytes], sortby: bytes | None, alpha: bool, desc: bool,
            storing: bool, start: int, end: int, effects: Effects) -> tuple[list[bytes], bool]:
    """``vector`` in SORT's order; (result, a weight that is not a number)."""
    n = len(vector)
    partial = sortby is not None and (start != 0 or end != n - 1)
    if sortby is None and n > 1:
        # Fast paths without Python work per element: every element a plain number (checked
        # on the joined text in one regular expression pass), or ALPHA without NUL bytes.
        joined = b"\n".join(vector)
        if not alpha and joined.count(b"\n") == n - 1 and (
                (not joined.translate(None, _DIGITS_NL) and b"\n\n" not in joined
                 and joined[:1] != b"\n" and joined[-1:] != b"\n")  # plain integers
                or _NUMBERS.fullmatch(joined)):
            scores = list(map(float, vector))
            if len(set(scores)) == n:  # no tie to break by the elements: sort floats alone
                order = sorted(range(n), key=scores.__getitem__, reverse=desc)
                return list(itemgetter(*order)(vector)), False
            pairs = sorted(zip(scores, vector, strict=True), reverse=desc)
            return [e for _, e in pairs], False
        if alpha and (storing or b"\0" not in joined):
            return sorted(vector, reverse=desc), False
    if alpha and sortby is None:
        keys: list[Any] = vector if storing else [_cstr(e) for e in vector]
    elif alpha:
        assert sortby is not None
        keys = []
        for element in vector:
            w = _lookup(ctx, sortby, element, effects)
            keys.append((0, b"") if w is None else (1, w if storing else _cstr(w)))
    else:
        keys = []
        failed = False
        for element in vector:
            w = element if sortby is None else _lookup(ctx, sortby, element, effects)
            if w is None:
                score = 0.0
            else:
                parsed = range_strtod(w)
                if parsed is None:
                    failed = True
                    parsed = 0.0
                score = parsed
            keys.append((score, element))
        if failed:
            return vector, True
    order = sorted(range(n), key=keys.__getitem__, reverse=desc)
    if partial and len(set(keys)) != n:
        # Equal keys: pqsort's own order, which a full sort does not give.
        idx = list(range(n))

        def cmp(a: int, b: int) -> int:
            ka, kb = keys[a], keys[b]
            r = 1 if ka > kb else 0 if ka == kb else -1
            return -r if desc else r

        _partial_sort(idx, cmp, start, end)
        order = idx
    return [vector[i] for i in order], False


def _partial_sort(idx: list[int], cmp: Callable[[int, int], int], start: int, end: int) -> None:
    if idx:
        pqsort(idx, cmp, start, end)


def sort(ctx: Context, args: Args) -> Reply:
    return _sort(ctx, args, False)


def sort_ro(ctx: Context, args: Args) -> Reply:
    return _sort(ctx, args, True)


_SORT_COMPLEXITY = ("O(N+M*log(M)) where N is the number of elements in the list or set to "
                    "sort, and M the number of returned elements. When the elements are not "
                    "sorted, complexity is O(N).")
_PATTERN_KEYS = KeySpec(RO | ACCESS)  # BY / GET: keys named by the data (begin: unknown)
_STORE_KEY = KeySpec(OW | UPDATE)  # STORE: anywhere among the options (begin: unknown)

COMMANDS: tuple[Command, ...] = (
    #   name      arity  flags              acl                                     keys  handler
    cmd("sort",     -2,  WRITE | DENYOOM,   A.SET | A.SORTEDSET | A.LIST | A.DANGEROUS,
        (key_at(1, RO | ACCESS), _PATTERN_KEYS, _STORE_KEY),                           sort,
        "Sorts the elements in a list, a set, or a sorted set, optionally storing the "
        "result.", group="generic", complexity=_SORT_COMPLEXITY,
        syntax="key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] "
        "[ASC | DESC] [ALPHA] [STORE destination]", reads=True),
    cmd("sort_ro",  -2,  READONLY,          A.SET | A.SORTEDSET | A.LIST | A.DANGEROUS,
        (key_at(1, RO | ACCESS), _PATTERN_KEYS),                                       sort_ro,
        "Returns the sorted elements of a list, a set, or a sorted set.", group="generic",
        since="7.0.0", complexity=_SORT_COMPLEXITY,
        syntax="key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] "
        "[ASC | DESC] [ALPHA]"),
)

