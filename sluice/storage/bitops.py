"""Bit operations on string values: what Redis's bitops.c computes, over bytes.

Bit 0 is the most significant bit of the first byte (SETBIT, BITPOS and BITFIELD agree on
this); a string is a bitmap padded with zero bits on the right. Functions take ``bytes`` or
a ``bytearray`` (a ``RawString``'s buffer) and never loop over bits or bytes in Python:

* counting uses ``int.from_bytes(...).bit_count()`` over the whole range at once (Redis's
  ``redisPopcount``), with the partial first and last bytes of a BIT range masked;
* searching (``redisBitpos``) skips whole runs of 0x00 / 0xff bytes with a compiled regular
  expression, then looks at one byte;
* BITOP (``bitopCommand``) reads every source as one big integer, zero-padded on the right to
  the longest, and combines them with integer operators;
* BITFIELD reads and writes the (at most 9) bytes a field spans as one big-endian integer
  (``getUnsignedBitfield`` / ``setUnsignedBitfield``), and ``check_overflow`` is
  ``checkUnsignedBitfieldOverflow`` / ``checkSignedBitfieldOverflow``: C's 64-bit wrap-around
  arithmetic turns out to compute the mathematical sum's over/underflow, which is what it
  says here.

Imports nothing of Sluice's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# BITOP operations (bitops.c's BITOP_*), named as the command spells them.
AND, OR, XOR, NOT, DIFF, DIFF1, ANDOR, ONE = (b"AND", b"OR", b"XOR", b"NOT", b"DIFF",
                                              b"DIFF1", b"ANDOR", b"ONE")
BITOPS = frozenset((AND, OR, XOR, NOT, DIFF, DIFF1, ANDOR, ONE))

# BITFIELD OVERFLOW behaviours (BFOVERFLOW_*).
WRAP, SAT, FAIL = 0, 1, 2

_I64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1

_NONZERO = re.compile(rb"[^\x00]")
_NONFF = re.compile(rb"[^\xff]")
_INVERT = bytes(255 - i for i in range(256))

Bits = bytes | bytearray


def getbit(data: Bits, offset: int) -> int:
    """The bit at ``offset`` (0 beyond the end)."""
    byte = offset >> 3
    if byte >= len(data):
        return 0
    return (data[byte] >> (7 - (offset & 7))) & 1


def setbit(buf: bytearray, offset: int, on: int) -> int:
    """Set the bit at ``offset`` (the buffer must reach it); return its old value."""
    byte = offset >> 3
    shift = 7 - (offset & 7)
    old = buf[byte]
    if on:
        buf[byte] = old | (1 << shift)
    else:
        buf[byte] = old & ~(1 << shift)
    return (old >> shift) & 1


def popcount(data: Bits, start: int = 0, end: int | None = None) -> int:
    """Bits set in ``data[start:end]``."""
    if start == 0 and (end is None or end >= len(data)):
        return int.from_bytes(data, "little").bit_count()
    return int.from_bytes(data[start:end], "little").bit_count()


def count_bits(data: Bits, first: int, last: int) -> int:
    """Bits set between bit ``first`` and bit ``last`` included (both within the string)."""
    b0, b1 = first >> 3, last >> 3
    n = popcount(data, b0, b1 + 1)
    head = first & 7
    if head:
        n -= (data[b0] >> (8 - head)).bit_count()
    tail = 7 - (last & 7)
    if tail:
        n -= (data[b1] & ((1 << tail) - 1)).bit_count()
    return n


def _scan_byte(value: int, bit: int, lo: int, hi: int) -> int:
    """Index (0 = MSB) of the first ``bit`` among bits ``lo``..``hi`` of a byte, or -1."""
    v = value if bit else value ^ 0xFF
    v &= (0xFF >> lo) & (0xFF << (7 - hi))
    return 8 - v.bit_length() if v else -1


def find_bit(data: Bits, bit: int, first: int, last: int) -> int:
    """Position of the first bit equal to ``bit`` between bits ``first`` and ``last``
    included (both within the string), or -1."""
    if first > last:
        return -1
    b0, b1 = first >> 3, last >> 3
    if b0 == b1:
        r = _scan_byte(data[b0], bit, first & 7, last & 7)
        return -1 if r < 0 else (b0 << 3) + r
    r = _scan_byte(data[b0], bit, first & 7, 7)
    if r >= 0:
        return (b0 << 3) + r
    m = (_NONZERO if bit else _NONFF).search(data, b0 + 1, b1)
    if m is not None:
        i = m.start()
        return (i << 3) + _scan_byte(data[i], bit, 0, 7)
    r = _scan_byte(data[b1], bit, 0, last & 7)
    return -1 if r < 0 else (b1 << 3) + r


def normalize_range(start: int, end: int, total: int) -> tuple[int, int]:
    """BITCOUNT / BITPOS's index rules: negative indexes count from the end, then both are
    clamped to the string (``end`` may come out below ``start``: an empty range)."""
    if start < 0:
        start += total
    if end < 0:
        end += total
    if start < 0:
        start = 0
    if end < 0:
        end = 0
    if end >= total:
        end = total - 1
    return start, end


def bitcount(data: Bits, start: int, end: int, bit_mode: bool) -> int:
    """BITCOUNT key start end [BYTE | BIT] (``bitcountCommand``)."""
    if start < 0 and end < 0 and start > end:
        return 0
    total = len(data) << 3 if bit_mode else len(data)
    start, end = normalize_range(start, end, total)
    if start > end:
        return 0
    if bit_mode:
        return count_bits(data, start, end)
    return popcount(data, start, end + 1)


def bitpos(data: Bits, bit: int, start: int, end: int | None, bit_mode: bool) -> int:
    """BITPOS key bit [start [end [BYTE | BIT]]] on an existing key (``bitposCommand``).

    Without ``end`` the string is taken as padded with zeros on the right, so looking for a
    clear bit in an all-ones string finds the first bit after it; with ``end`` it does not.
    """
    total = len(data) << 3 if bit_mode else len(data)
    end_given = end is not None
    if end is None:
        end = total - 1
    start, end = normalize_range(start, end, total)
    if start > end:
        return -1
    if bit_mode:
        return find_bit(data, bit, start, end)
    pos = find_bit(data, bit, start << 3, (end << 3) + 7)
    if pos < 0 and bit == 0 and not end_given:
        return (end + 1) << 3
    return pos


def bitop(op: bytes, sources: Sequence[Bits]) -> bytes:
    """The result of BITOP ``op`` over ``sources`` (missing keys as b""), as long as the
    longest source; b"" when all are empty."""
    maxlen = max((len(s) for s in sources), default=0)
    if maxlen == 0:
        return b""
    if op == NOT:
        src = sources[0]
        return src.translate(_INVERT) if type(src) is bytes else bytes(src).translate(_INVERT)
    nbits = maxlen << 3
    ints = [int.from_bytes(s, "big") << ((maxlen - len(s)) << 3) for s in sources]
    first = ints[0]
    if op == AND:
        out = first
        for x in ints[1:]:
            out &= x
    elif op == OR:
        out = first
        for x in ints[1:]:
            out |= x
    elif op == XOR:
        out = first
        for x in ints[1:]:
            out ^= x
    elif op == ONE:
        # Bits set in exactly one source: the XOR, less every bit seen in two of them.
        out, common = first, 0
        for x in ints[1:]:
            common |= out & x
            out ^= x
        out &= ~common
    else:
        rest = 0
        for x in ints[1:]:
            rest |= x
        if op == DIFF:
            out = first & ~rest
        elif op == DIFF1:
            out = ~first & rest & ((1 << nbits) - 1)
        else:  # ANDOR
            out = first & rest
    return out.to_bytes(maxlen, "big")


# -- BITFIELD ------------------------------------------------------------------------------


def get_unsigned(data: Bits, offset: int, bits: int) -> int:
    """The ``bits``-wide unsigned field at bit ``offset`` (zeros beyond the string)."""
    byte = offset >> 3
    end = (offset + bits + 7) >> 3
    n = end - byte
    chunk = data[byte:end]
    v = int.from_bytes(chunk, "big") << ((n - len(chunk)) << 3)
    return (v >> ((n << 3) - (offset & 7) - bits)) & ((1 << bits) - 1)


def get_signed(data: Bits, offset: int, bits: int) -> int:
    """The ``bits``-wide two's complement field at bit ``offset``."""
    v = get_unsigned(data, offset, bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def set_field(buf: bytearray, offset: int, bits: int, value: int) -> None:
    """Store the low ``bits`` bits of ``value`` (any int: two's complement) at ``offset``;
    the buffer must reach the field's last bit."""
    byte = offset >> 3
    end = (offset + bits + 7) >> 3
    n = end - byte
    shift = (n << 3) - (offset & 7) - bits
    mask = ((1 << bits) - 1) << shift
    v = int.from_bytes(buf[byte:end], "big")
    v = (v & ~mask) | ((value << shift) & mask)
    buf[byte:end] = v.to_bytes(n, "big")


def _i64(v: int) -> int:
    """``v`` wrapped to a C int64_t."""
    v &= _U64
    return v - (1 << 64) if v >> 63 else v


def check_overflow(value: int, incr: int, bits: int, signed: bool, mode: int
                   ) -> tuple[int, int]:
    """``checkSignedBitfieldOverflow`` / ``checkUnsignedBitfieldOverflow``: (overflow,
    result) of storing ``value + incr`` in a ``bits``-wide field. Overflow is 1 above the
    type's range, -1 below, 0 when it fits; the result is the sum, or what WRAP (two's
    complement wrap-around) or SAT (the limit) makes of it; with FAIL the caller writes
    nothing. ``value`` is what C holds: an int64 (signed) or a uint64 (unsigned).

    C's 64-bit wrap-around is kept: a SET of a very negative value into a narrow signed
    field (say ``SET i1 0 -9223372036854775808``) counts as an *over*flow there, because
    ``max - value`` wraps negative, so SAT stores the maximum."""
    if signed:
        hi = _I64_MAX if bits == 64 else (1 << (bits - 1)) - 1
        lo = -hi - 1
        maxincr = _i64(hi - value)
        minincr = _i64(lo - value)
        if value > hi or (bits != 64 and incr > maxincr) or (value >= 0 and incr > 0
                                                             and incr > maxincr):
            overflow = 1
        elif value < lo or (bits != 64 and incr < minincr) or (value < 0 and incr < 0
                                                               and incr < minincr):
            overflow = -1
        else:
            return 0, value + incr
    else:
        hi = (1 << bits) - 1
        lo = 0
        if value > hi or (incr > 0 and incr > _i64(hi - value)):
            overflow = 1
        elif incr < 0 and incr < _i64(-value):
            overflow = -1
        else:
            return 0, value + incr
    if mode == WRAP:
        wrapped = (value + incr) & ((1 << bits) - 1)
        if signed and wrapped > hi:
            wrapped -= 1 << bits
        return overflow, wrapped
    if mode == SAT:
        return overflow, hi if overflow > 0 else lo
    return overflow, value + incr
