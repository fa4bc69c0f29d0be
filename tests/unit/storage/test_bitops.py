"""storage/bitops.py against slow, obviously right models: a bitmap as a list of bits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage import bitops
from sluice.storage.bitops import (
    FAIL,
    SAT,
    WRAP,
    bitcount,
    bitop,
    bitpos,
    check_overflow,
    find_bit,
    get_signed,
    get_unsigned,
    set_field,
)
from sluice.storage.rawstring import RawString


def bits_of(data: bytes) -> list[int]:
    return [(byte >> (7 - i)) & 1 for byte in data for i in range(8)]


def model_range(total: int, start: int, end: int) -> tuple[int, int]:
    start = start + total if start < 0 else start
    end = end + total if end < 0 else end
    return max(start, 0), min(max(end, 0), total - 1)


def model_bitcount(data: bytes, start: int, end: int, bit_mode: bool) -> int:
    if start < 0 and end < 0 and start > end:
        return 0
    bits = bits_of(data)
    total = len(bits) if bit_mode else len(data)
    start, end = model_range(total, start, end)
    if start > end:
        return 0
    if not bit_mode:
        start, end = start * 8, end * 8 + 7
    return sum(bits[start:end + 1])


def model_bitpos(data: bytes, bit: int, start: int, end: int | None, bit_mode: bool) -> int:
    bits = bits_of(data)
    total = len(bits) if bit_mode else len(data)
    start, last = model_range(total, start, total - 1 if end is None else end)
    if start > last:
        return -1
    if not bit_mode:
        start, last = start * 8, last * 8 + 7
    for i in range(start, last + 1):
        if bits[i] == bit:
            return i
    if bit == 0 and end is None:
        return last + 1
    return -1


DATA = st.binary(max_size=40) | st.sampled_from([b"\xff" * 33, b"\x00" * 33, b"\x00" * 20 + b"\x01"])
INDEX = st.integers(-400, 400)


@given(DATA, INDEX, INDEX, st.booleans())
def test_bitcount_matches_model(data: bytes, start: int, end: int, bit_mode: bool) -> None:
    assert bitcount(data, start, end, bit_mode) == model_bitcount(data, start, end, bit_mode)


@given(DATA, st.integers(0, 1), INDEX, st.none() | INDEX, st.booleans())
def test_bitpos_matches_model(data: bytes, bit: int, start: int, end: int | None,
                              bit_mode: bool) -> None:
    if bit_mode and end is None:
        end = -1  # BIT needs an end in the command's syntax
    if not data:
        return  # an existing key is never an empty bitmap here: the command checks first
    assert bitpos(data, bit, start, end, bit_mode) == model_bitpos(data, bit, start, end, bit_mode)


def test_find_bit_skips_long_runs() -> None:
    data = b"\x00" * 100_000 + b"\x10" + b"\xff" * 10
    assert find_bit(data, 1, 0, len(data) * 8 - 1) == 800_003
    assert find_bit(bytearray(b"\xff" * 5000 + b"\xfe"), 0, 3, 40_007) == 40_007
    assert find_bit(data, 1, 0, 800_002) == -1


def _model_op(op: bytes, sources: list[bytes]) -> bytes:
    n = max(len(s) for s in sources)
    cols = [bits_of(s + bytes(n - len(s))) for s in sources]
    out = []
    for i in range(n * 8):
        col = [c[i] for c in cols]
        if op == b"AND":
            v = int(all(col))
        elif op == b"OR":
            v = int(any(col))
        elif op == b"XOR":
            v = sum(col) & 1
        elif op == b"NOT":
            v = 1 - col[0]
        elif op == b"ONE":
            v = int(sum(col) == 1)
        else:
            rest = int(any(col[1:]))
            v = {b"DIFF": col[0] & (1 - rest), b"DIFF1": (1 - col[0]) & rest,
                 b"ANDOR": col[0] & rest}[op]
        out.append(v)
    return bytes(int("".join(map(str, out[i:i + 8])), 2) for i in range(0, len(out), 8))


@given(st.sampled_from(sorted(bitops.BITOPS)), st.lists(st.binary(max_size=12), min_size=2,
                                                         max_size=5))
def test_bitop_matches_model(op: bytes, sources: list[bytes]) -> None:
    if op == b"NOT":
        sources = sources[:1]
    expected = _model_op(op, sources) if max(map(len, sources)) else b""
    assert bitop(op, sources) == expected


def test_bitop_reads_bytearrays() -> None:
    assert bitop(b"NOT", [bytearray(b"\x0f")]) == b"\xf0"
    assert bitop(b"AND", [bytearray(b"\xff\x0f"), b"\x3c"]) == b"\x3c\x00"


@settings(max_examples=300)
@given(st.binary(max_size=12), st.integers(0, 40), st.integers(1, 64), st.integers(-2**70, 2**70))
def test_fields_round_trip(data: bytes, offset: int, bits: int, value: int) -> None:
    # set_field needs the buffer to reach the field's last bit: 40 + 64 bits = 13 bytes.
    buf = bytearray(data) + bytes(13)
    before = bits_of(bytes(buf))
    set_field(buf, offset, bits, value)
    after = bits_of(bytes(buf))
    # Only the field's bits changed, and they hold the value's low bits, MSB first.
    assert after[:offset] == before[:offset]
    assert after[offset + bits:] == before[offset + bits:]
    low = value & ((1 << bits) - 1)
    assert get_unsigned(buf, offset, bits) == low
    assert get_signed(buf, offset, bits) == (low - (1 << bits) if low >> (bits - 1) else low)


def test_fields_beyond_the_string_read_zero() -> None:
    assert get_unsigned(b"\xff", 4, 8) == 0xF0
    assert get_signed(b"", 100, 64) == 0


@pytest.mark.parametrize(("value", "incr", "bits", "signed", "mode", "want"), [
    (100, 100, 8, True, WRAP, (1, -56)),
    (100, 100, 8, True, SAT, (1, 127)),
    (-100, -100, 8, True, SAT, (-1, -128)),
    (-100, -100, 8, True, WRAP, (-1, 56)),
    (250, 10, 8, False, WRAP, (1, 4)),
    (5, -10, 8, False, WRAP, (-1, 251)),
    (5, -10, 8, False, SAT, (-1, 0)),
    (5, -10, 8, False, FAIL, (-1, -5)),
    (2**63 - 1, 1, 64, True, WRAP, (1, -(2**63))),
    (-(2**63), -1, 64, True, SAT, (-1, -(2**63))),
    (2**64 - 1, 0, 8, False, WRAP, (1, 255)),  # SET u8 -1: the uint64 cast, then wrapped
    (3, 4, 63, False, WRAP, (0, 7)),
    # C's max - value wraps negative: an overflow to Redis, so SAT gives the maximum.
    (-(2**63), 0, 1, True, SAT, (1, 0)),
    (-(2**63), 0, 8, True, SAT, (1, 127)),
    (-(2**62), 0, 8, True, SAT, (-1, -128)),
])
def test_check_overflow(value: int, incr: int, bits: int, signed: bool, mode: int,
                        want: tuple[int, int]) -> None:
    assert check_overflow(value, incr, bits, signed, mode) == want


def test_rawstring_is_a_string_value() -> None:
    rs = RawString(b"ab")
    assert bytes(rs) == b"ab" and len(rs) == 2
    rs.hll = object()
    assert rs.grow(4) == 2 and rs.hll is None
    assert bytes(rs) == b"ab\x00\x00"
    dup = rs.copy()
    dup.edit()[0] = 0
    assert bytes(rs) == b"ab\x00\x00" and bytes(dup) == b"\x00b\x00\x00"
    assert rs.encoding() == b"raw"
