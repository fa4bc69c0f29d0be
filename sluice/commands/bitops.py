"""Bitmap commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
BITFIELD_RO.

Mirrors Redis's bitops.c (``setbitCommand``, ``getbitCommand``, ``bitcountCommand``,
``bitposCommand``, ``bitopCommand``, ``bitfieldGeneric``): the same order of argument checks
(so the same error wins), the same size limit (a bit offset must stay below
``proto-max-bulk-len`` bytes, except for the AOF client, as ``mustObeyClient``), the same
dirty counting (SETBIT and BITFIELD count a write only when a bit changed or the string
grew). The bit arithmetic is in ``storage/bitops.py``.

Writes edit the value in place: the first SETBIT / BITFIELD write on a key turns its value
into a ``RawString`` (``storage/rawstring.py``), as Redis unshares it into a raw sds, and
later ones change single bytes of its buffer. BITOP stores a new string, ``raw`` encoded as
Redis creates it. Each write calls ``ctx.modified`` once, then fires Redis's keyspace event:
``setbit`` for SETBIT and BITFIELD, ``set`` / ``del`` for BITOP's destination.
Everything is propagated as the client sent it, as Redis does.
"""

from __future__ import annotations

from sluice.protocol import string2ll
from sluice.storage.bitops import (
    ANDOR,
    BITOPS,
    DIFF,
    DIFF1,
    FAIL,
    NOT,
    SAT,
    WRAP,
    Bits,
    bitcount,
    bitop,
    bitpos,
    check_overflow,
    get_signed,
    get_unsigned,
    getbit,
    set_field,
    setbit,
)
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.rawstring import RawString

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    BIT_OFFSET,
    BIT_VALUE,
    BITFIELD_OVERFLOW_TYPE,
    BITFIELD_RO_GET_ONLY,
    BITFIELD_TYPE,
    BITOP_NOT_ONE_KEY,
    BITOP_TWO_KEYS,
    BITPOS_BIT,
    SYNTAX,
    CommandError,
)
from .spec import (
    ACCESS,
    DENYOOM,
    FAST,
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
)

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U64 = (1 << 64) - 1


def read_bits(ctx: Context, key: bytes) -> Bits | None:
    """The string at ``key`` as bytes (a RawString's live buffer), None if missing."""
    value = ctx.db.get(key)
    if value is None or type(value) is bytes:
        return value
    if type(value) is RawString:
        return value.buf
    raise WrongTypeError()


def string_for_write(ctx: Context, key: bytes, size: int) -> tuple[RawString, int]:
    """Redis's ``lookupStringForBitCommand``: the key's string as a RawString of at least
    ``size`` bytes (created zero-filled if missing); (value, bytes added)."""
    db = ctx.db
    value = db.get(key)
    if value is None:
        rs = RawString(bytes(size))
        db.add(key, rs)  # dbAdd: "new"
        return rs, size
    if type(value) is RawString:
        value.hll = None  # as value.edit(): the HyperLogLog state no longer holds
        buf = value.buf
        if len(buf) >= size:
            return value, 0
        return value, value.grow(size)
    if type(value) is not bytes:
        raise WrongTypeError()
    rs = RawString(value)
    db.replace(key, rs)  # unshared, as dbUnshareStringValue: the TTL stays, no event
    return rs, rs.grow(size)


def _bit_offset(ctx: Context, raw: bytes, bits: int = 0) -> int:
    """``getBitOffsetFromArgument``: a bit offset; with ``bits`` (BITFIELD) ``#n`` means
    ``n * bits``. Refused when negative or at or beyond proto-max-bulk-len bytes."""
    if 0 < len(raw) < 19 and raw.isdigit() and (raw[0] != 48 or len(raw) == 1):
        # The common case, without string2ll's regular expression: plain digits.
        plain = int(raw)
        if (plain >> 3) < ctx.server.config.proto_max_bulk_len or ctx.kind == "aof":
            return plain
        raise CommandError(BIT_OFFSET)
    use_hash = bits > 0 and raw[:1] == b"#"
    n = string2ll(raw[1:] if use_hash else raw)
    if n is None:
        raise CommandError(BIT_OFFSET)
    if use_hash:
        n = (n * bits) & _U64  # C's long long multiplication wraps around
        if n > _I64_MAX:
            n -= 1 << 64
    if n < 0 or ((n >> 3) >= ctx.server.config.proto_max_bulk_len and ctx.kind != "aof"):
        raise CommandError(BIT_OFFSET)
    return n


# -- SETBIT / GETBIT ----------------------------------------------------------------------------


def setbit_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    offset = _bit_offset(ctx, argv[2])
    raw = argv[3]
    on = 1 if raw == b"1" else 0 if raw == b"0" else string2ll(raw)
    if on is None or on & ~1:
        raise CommandError(BIT_VALUE)
    rs, grown = string_for_write(ctx, key, (offset >> 3) + 1)
    old = setbit(rs.buf, offset, on)
    if grown or old != on:
        ctx.modified(key)
        ctx.notify(b"setbit", key)
    return old


def getbit_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    offset = _bit_offset(ctx, argv[2])
    data = read_bits(ctx, argv[1])
    return 0 if data is None else getbit(data, offset)


# -- BITCOUNT / BITPOS ---------------------------------------------------------------------------


def _bit_mode(raw: bytes) -> bool:
    mode = raw.upper()
    if mode == b"BIT":
        return True
    if mode == b"BYTE":
        return False
    raise CommandError(SYNTAX)


def bitcount_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    argc = len(argv)
    if argc == 4 or argc == 5:
        start = parse_int(argv[2])
        end = parse_int(argv[3])
        bit_mode = argc == 5 and _bit_mode(argv[4])
        data = read_bits(ctx, argv[1])
        if data is None:
            return 0
        return bitcount(data, start, end, bit_mode)
    if argc != 2:
        raise CommandError(SYNTAX)
    data = read_bits(ctx, argv[1])
    return 0 if data is None else bitcount(data, 0, -1, False)


def bitpos_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    argc = len(argv)
    bit = parse_int(argv[2])
    if bit != 0 and bit != 1:
        raise CommandError(BITPOS_BIT)
    start, end, bit_mode = 0, None, False
    if 4 <= argc <= 6:
        start = parse_int(argv[3])
        if argc == 6:
            bit_mode = _bit_mode(argv[5])
        if argc >= 5:
            end = parse_int(argv[4])
    elif argc != 3:
        raise CommandError(SYNTAX)
    data = read_bits(ctx, argv[1])
    if data is None:
        # A missing key is an endless run of clear bits.
        return -1 if bit else 0
    return bitpos(data, bit, start, end, bit_mode)


# -- BITOP ------------------------------------------------------------------------------------------


def bitop_(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    op = argv[1].upper()
    if op not in BITOPS:
        raise CommandError(SYNTAX)
    if op == NOT and len(argv) != 4:
        raise CommandError(BITOP_NOT_ONE_KEY)
    if op in (DIFF, DIFF1, ANDOR) and len(argv) < 5:
        raise CommandError(BITOP_TWO_KEYS % op.decode())
    dest = argv[2]
    sources = [read_bits(ctx, key) or b"" for key in argv[3:]]
    result = bitop(op, sources)
    db = ctx.db
    if result:
        db.set(dest, result)
        db.set_encoding(dest, result, b"raw")  # a new sds, never int / embstr encoded
        ctx.modified(dest)
        ctx.notify(b"set", dest)
    elif db.delete(dest):
        ctx.modified(dest)
        ctx.notify(b"del", dest)
    return len(result)


# -- BITFIELD -----------------------------------------------------------------------------------------

_GET, _SET, _INCRBY = 0, 1, 2
_OVERFLOWS = {b"WRAP": WRAP, b"SAT": SAT, b"FAIL": FAIL}


def _bitfield_type(raw: bytes) -> tuple[bool, int]:
    """``getBitfieldTypeFromArgument``: (signed, bits) from ``i1``..``i64`` / ``u1``..``u63``."""
    sign = raw[:1]
    if sign != b"i" and sign != b"u":
        raise CommandError(BITFIELD_TYPE)
    bits = string2ll(raw[1:].split(b"\x00", 1)[0])  # C reads up to a NUL (strlen)
    signed = sign == b"i"
    if bits is None or bits < 1 or bits > (64 if signed else 63):
        raise CommandError(BITFIELD_TYPE)
    return signed, bits


def _bitfield(ctx: Context, args: Args, ro_command: bool) -> Reply:
    argv = args.argv
    n = len(argv)
    # (opcode, signed, bits, offset, value, overflow) per operation, checked before any runs.
    ops: list[tuple[int, bool, int, int, int, int]] = []
    overflow = WRAP
    readonly = True
    highest = 0
    j = 2
    while j < n:
        remaining = n - j - 1
        sub = argv[j].upper()
        if sub == b"GET" and remaining >= 2:
            opcode = _GET
        elif sub == b"SET" and remaining >= 3:
            opcode = _SET
        elif sub == b"INCRBY" and remaining >= 3:
            opcode = _INCRBY
        elif sub == b"OVERFLOW" and remaining >= 1:
            mode = _OVERFLOWS.get(argv[j + 1].upper())
            if mode is None:
                raise CommandError(BITFIELD_OVERFLOW_TYPE)
            overflow = mode
            j += 2
            continue
        else:
            raise CommandError(SYNTAX)
        signed, bits = _bitfield_type(argv[j + 1])
        offset = _bit_offset(ctx, argv[j + 2], bits)
        value = 0
        if opcode != _GET:
            readonly = False
            highest = max(highest, offset + bits - 1)
            value = parse_int(argv[j + 3])
            j += 4
        else:
            j += 3
        ops.append((opcode, signed, bits, offset, value, overflow))

    key = argv[1]
    if readonly:
        data = read_bits(ctx, key)
        out: list[int | None] = []
        for _, signed, bits, offset, _, _ in ops:
            if data is None:
                out.append(0)
            elif signed:
                out.append(get_signed(data, offset, bits))
            else:
                out.append(get_unsigned(data, offset, bits))
        return out
    if ro_command:
        raise CommandError(BITFIELD_RO_GET_ONLY)
    rs, grown = string_for_write(ctx, key, (highest >> 3) + 1)
    buf = rs.buf
    out = []
    changes = 0
    for opcode, signed, bits, offset, value, mode in ops:
        if opcode == _GET:
            out.append(get_signed(buf, offset, bits) if signed else get_unsigned(buf, offset, bits))
            continue
        old = get_signed(buf, offset, bits) if signed else get_unsigned(buf, offset, bits)
        if opcode == _INCRBY:
            over, new = check_overflow(old, value, bits, signed, mode)
            ret = new
        else:
            # SET: an unsigned field takes the value as C's uint64_t cast sees it.
            over, new = check_overflow(value if signed else value & _U64, 0, bits, signed, mode)
            ret = old
        if over and mode == FAIL:
            out.append(None)
            continue
        out.append(ret)
        set_field(buf, offset, bits, new)
        if grown or old != new:
            changes += 1
    if changes:
        ctx.modified(key, changes=changes)
        ctx.notify(b"setbit", key)
    return out


def bitfield(ctx: Context, args: Args) -> Reply:
    return _bitfield(ctx, args, False)


def bitfield_ro(ctx: Context, args: Args) -> Reply:
    return _bitfield(ctx, args, True)


_BITFIELD_OPS = ("GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] "
                 "<SET encoding offset value | INCRBY encoding offset increment>")
_O_N = "O(N)"

COMMANDS: tuple[Command, ...] = (
    #   name          arity  flags              acl       keys                        handler
    cmd("setbit",        4,  WRITE | DENYOOM,   A.BITMAP, key_at(1, RW | ACCESS | UPDATE), setbit_,
        "Sets or clears the bit at offset of the string value. Creates the key if it doesn't "
        "exist.", group="bitmap", since="2.2.0",
        complexity="O(1) (amortized: the string is edited in place once unshared)",
        syntax="key offset value"),
    cmd("getbit",        3,  READONLY | FAST,   A.BITMAP, key_at(1, RO | ACCESS),     getbit_,
        "Returns a bit value by offset.", group="bitmap", since="2.2.0",
        syntax="key offset"),
    cmd("bitcount",     -2,  READONLY,          A.BITMAP, key_at(1, RO | ACCESS),     bitcount_,
        "Counts the number of set bits (population counting) in a string.", group="bitmap",
        since="2.6.0", complexity=_O_N, syntax="key [start end [BYTE | BIT]]"),
    cmd("bitpos",       -3,  READONLY,          A.BITMAP, key_at(1, RO | ACCESS),     bitpos_,
        "Finds the first set (1) or clear (0) bit in a string.", group="bitmap",
        since="2.8.7", complexity=_O_N, syntax="key bit [start [end [BYTE | BIT]]]"),
    cmd("bitop",        -4,  WRITE | DENYOOM,   A.BITMAP,
        (key_at(2, OW | UPDATE), key_at(3, RO | ACCESS, last=-1)),                    bitop_,
        "Performs bitwise operations on multiple strings, and stores the result.",
        group="bitmap", since="2.6.0", complexity=_O_N,
        syntax="<AND | OR | XOR | NOT | DIFF | DIFF1 | ANDOR | ONE> destkey key [key ...]", reads=True),
    cmd("bitfield",     -2,  WRITE | DENYOOM,   A.BITMAP,
        key_at(1, RW | UPDATE | ACCESS | K.VARIABLE_FLAGS),                           bitfield,
        "Performs arbitrary bitfield integer operations on strings.", group="bitmap",
        since="3.2.0", complexity="O(1) for each subcommand specified",
        syntax=f"key [{_BITFIELD_OPS} [{_BITFIELD_OPS} ...]]"),
    cmd("bitfield_ro",  -2,  READONLY | FAST,   A.BITMAP, key_at(1, RO | ACCESS),     bitfield_ro,
        "Performs arbitrary read-only bitfield integer operations on strings.",
        group="bitmap", since="6.0.0", complexity="O(1) for each subcommand specified",
        syntax="key [GET encoding offset [GET encoding offset ...]]"),
)
