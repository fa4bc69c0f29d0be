"""String commands that edit a value in place or count with it: APPEND, STRLEN, SETRANGE,
GETRANGE, SUBSTR, INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT and LCS.

Mirrors Redis's t_string.c (``appendCommand``, ``setrangeCommand``, ``getrangeCommand``,
``incrDecrCommand``, ``incrbyfloatCommand``, ``lcsCommand``); the arithmetic and encodings are
in ``storage/strings.py``. INCRBYFLOAT is logged as ``SET key value KEEPTTL``, as Redis
propagates it, so an AOF replays to the same value whatever the float formatting.

Strings are immutable ``bytes``, so APPEND and SETRANGE copy the value: O(N) in the value's
length where Redis is amortised O(1). GETRANGE/SUBSTR follow Redis 8 (a range that ends
before the first byte is empty; 7.0 returned the first byte).
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import Map
from sluice.storage.rawstring import RawString
from sluice.storage.strings import (
    embstr_or_raw,
    getrange,
    incr_by,
    incr_by_float,
    lcs_length,
    lcs_rows,
    lcs_walk,
)
from sluice.storage.strings import setrange as patch_string

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    DECR_OVERFLOW,
    INCR_NAN,
    INCR_OVERFLOW,
    LCS_LEN_AND_IDX,
    LCS_NOT_STRINGS,
    LCS_TOO_BIG,
    NOT_FLOAT,
    NOT_INTEGER,
    OFFSET_OUT_OF_RANGE,
    STRING_TOO_LONG,
    SYNTAX,
    CommandError,
)
from .spec import ACCESS, DENYOOM, FAST, INSERT, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at
from .strings import LLONG_MIN, string_value

# -- in-place edits -----------------------------------------------------------------------------


def _check_length(ctx: Context, size: int) -> None:
    if size > ctx.server.config.proto_max_bulk_len:
        raise CommandError(STRING_TOO_LONG)


def append(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key, tail = argv[1], argv[2]
    db = ctx.db
    value = string_value(db.get(key))
    if value is None:
        db.add(key, tail)
        new = tail
    else:
        _check_length(ctx, len(value) + len(tail))
        new = value + tail
        db.replace(key, new)
        db.set_encoding(key, new, b"raw")  # Redis grows the string in place: always raw
    ctx.modified(key)
    ctx.notify(b"append", key)
    return len(new)


def strlen(ctx: Context, args: Args) -> Reply:
    value = string_value(ctx.db.get(args.argv[1]))
    return 0 if value is None else len(value)


def setrange(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key, patch = argv[1], argv[3]
    offset = parse_int(argv[2])
    if offset < 0:
        raise CommandError(OFFSET_OUT_OF_RANGE)
    db = ctx.db
    value = string_value(db.get(key))
    if value is None:
        if not patch:
            return 0
        _check_length(ctx, offset + len(patch))
        new = bytes(offset) + patch
        db.add(key, new)
    else:
        if not patch:
            return len(value)
        _check_length(ctx, offset + len(patch))
        new = patch_string(value, offset, patch)
        db.replace(key, new)
    db.set_encoding(key, new, b"raw")
    ctx.modified(key)
    ctx.notify(b"setrange", key)
    return len(new)


def getrange_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    value = string_value(ctx.db.get(argv[1]))
    if value is None:
        return b""
    return getrange(value, start, end)


# -- counters -----------------------------------------------------------------------------------


def _incr(ctx: Context, key: bytes, delta: int) -> int:
    db = ctx.db
    value = string_value(db.get(key))
    try:
        result = incr_by(value, delta)
    except ValueError:
        raise CommandError(NOT_INTEGER) from None
    except OverflowError:
        raise CommandError(INCR_OVERFLOW) from None
    db.replace(key, b"%d" % result)
    ctx.modified(key)
    ctx.notify(b"incrby", key)
    return result


def incr(ctx: Context, args: Args) -> Reply:
    return _incr(ctx, args.argv[1], 1)


def decr(ctx: Context, args: Args) -> Reply:
    return _incr(ctx, args.argv[1], -1)


def incrby(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return _incr(ctx, argv[1], parse_int(argv[2]))


def decrby(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    delta = parse_int(argv[2])
    if delta == LLONG_MIN:
        raise CommandError(DECR_OVERFLOW)
    return _incr(ctx, argv[1], -delta)


def incrbyfloat(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    db = ctx.db
    value = string_value(db.get(key))
    try:
        new = incr_by_float(value, argv[2])
    except ValueError:
        raise CommandError(NOT_FLOAT) from None
    except ArithmeticError:
        raise CommandError(INCR_NAN) from None
    db.replace(key, new)
    # Redis stores the formatted result as a string object: never an int encoding, even for
    # "3"; embedded or not by the same rule as any string (the key's length counts).
    db.set_encoding(key, new, embstr_or_raw(len(key), len(new)))
    ctx.modified(key)
    ctx.notify(b"incrbyfloat", key)
    ctx.rewrite_argv([b"SET", key, new, b"KEEPTTL"])
    return new


# -- LCS -------------------------------------------------------------------------------------------


def lcs(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    db = ctx.db
    a, b = db.get(argv[1]), db.get(argv[2])
    a = bytes(a.buf) if type(a) is RawString else a
    b = bytes(b.buf) if type(b) is RawString else b
    if (a is not None and type(a) is not bytes) or (b is not None and type(b) is not bytes):
        raise CommandError(LCS_NOT_STRINGS)
    a = a or b""
    b = b or b""
    get_len = get_idx = with_match_len = False
    min_match_len = 0
    j = 3
    while j < len(argv):
        opt = argv[j].upper()
        if opt == b"IDX":
            get_idx = True
        elif opt == b"LEN":
            get_len = True
        elif opt == b"WITHMATCHLEN":
            with_match_len = True
        elif opt == b"MINMATCHLEN" and j < len(argv) - 1:
            j += 1
            min_match_len = max(parse_int(argv[j]), 0)
        else:
            raise CommandError(SYNTAX)
        j += 1
    if get_len and get_idx:
        raise CommandError(LCS_LEN_AND_IDX)
    # Redis refuses when its uint32 table would exceed proto-max-bulk-len; ours is 32x
    # smaller, but the same inputs are refused so the two servers agree.
    if (len(a) + 1) * (len(b) + 1) * 4 > ctx.server.config.proto_max_bulk_len:
        raise CommandError(LCS_TOO_BIG)
    rows = lcs_rows(a, b)
    length = lcs_length(rows, len(a), len(b))
    if get_len:
        return length
    text, ranges = lcs_walk(a, b, rows, min_match_len)
    if not get_idx:
        return text
    matches: list[Any] = []
    for a_start, a_end, b_start, b_end in ranges:
        item: list[Any] = [[a_start, a_end], [b_start, b_end]]
        if with_match_len:
            item.append(a_end - a_start + 1)
        matches.append(item)
    return Map({b"matches": matches, b"len": length})


_O1 = "O(1)"
_GETRANGE_COMPLEXITY = (
    "O(N) where N is the length of the returned string. The complexity is ultimately "
    "determined by the returned length, but because creating a substring from an existing "
    "string is very cheap, it can be considered O(1) for small strings."
)
_INCR_KEYS = key_at(1, RW | ACCESS | UPDATE)

COMMANDS: tuple[Command, ...] = (
    #   name          arity  flags                    acl       keys                     handler
    cmd("append",        3,  WRITE | DENYOOM | FAST,  A.STRING, key_at(1, RW | INSERT),  append,
        "Appends a string to the value of a key; the key is created if missing.",
        group="string", since="2.0.0",
        complexity="O(N) in Sluice, N being the resulting length (strings are immutable); "
        "Redis documents amortized O(1).", syntax="key value"),
    cmd("strlen",        2,  READONLY | FAST,         A.STRING, key_at(1, RO),           strlen,
        "Returns the length of a string value.", group="string", since="2.2.0",
        complexity=_O1, syntax="key"),
    cmd("incr",          2,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              incr,
        "Increments the integer value of a key by one; a missing key counts as 0.",
        group="string", complexity=_O1, syntax="key"),
    cmd("decr",          2,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              decr,
        "Decrements the integer value of a key by one; a missing key counts as 0.",
        group="string", complexity=_O1, syntax="key"),
    cmd("incrby",        3,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              incrby,
        "Increments the integer value of a key by a number; a missing key counts as 0.",
        group="string", complexity=_O1, syntax="key increment"),
    cmd("decrby",        3,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              decrby,
        "Decrements the integer value of a key by a number; a missing key counts as 0.",
        group="string", complexity=_O1, syntax="key decrement"),
    cmd("incrbyfloat",   3,  WRITE | DENYOOM | FAST,  A.STRING, _INCR_KEYS,              incrbyfloat,
        "Increments the floating point value of a key by a number; a missing key counts as 0.",
        group="string", since="2.6.0", complexity=_O1, syntax="key increment"),
    cmd("getrange",      4,  READONLY,                A.STRING, key_at(1, RO | ACCESS),  getrange_,
        "Returns a substring of the string stored at a key.", group="string", since="2.4.0",
        complexity=_GETRANGE_COMPLEXITY, syntax="key start end"),
    cmd("substr",        4,  READONLY,                A.STRING, key_at(1, RO | ACCESS),  getrange_,
        "Returns a substring of the string stored at a key (the old name of GETRANGE).",
        group="string", complexity=_GETRANGE_COMPLEXITY, syntax="key start end",
        doc_flags=("deprecated",)),
    cmd("setrange",      4,  WRITE | DENYOOM,         A.STRING, key_at(1, RW | UPDATE),  setrange,
        "Overwrites part of a string value from an offset; the key is created if missing.",
        group="string", since="2.2.0",
        complexity="O(1), not counting the time taken to copy the new string in place. "
        "Usually, this string is very small so the amortized complexity is O(1). Otherwise, "
        "complexity is O(M) with M being the length of the value argument.",
        syntax="key offset value"),
    cmd("lcs",          -3,  READONLY,                A.STRING, key_at(1, RO | ACCESS, last=1), lcs,
        "Finds the longest common subsequence of two strings.", group="string",
        since="7.0.0",
        complexity="O(N*M) where N and M are the lengths of s1 and s2, respectively",
        syntax="key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]"),
)
