"""Stream ID parsing, formatting and arithmetic.

The accept/reject tables were obtained by sending each string to redis-server
7.0.15 (Debian) as ``XADD s <id> f v``, ``XRANGE s <id> +`` and
``XRANGE s (<id> +``, and recording which ones it accepted and what ID XADD
returned. Redis parses each half with string2ull, whose strtoull fallback
explains the odd accepted forms.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.streamid import (
    MAX_ID,
    MAX_PART,
    InvalidStreamID,
    StreamError,
    _parse,
    decr_id,
    format_id,
    incr_id,
    make_id,
    parse_id,
    parse_range_bound,
    parse_strict_id,
    parse_xadd_id,
    split_id,
)

U64 = MAX_PART

# (argument, the ID redis-server 7.0.15's XADD stored) for accepted XADD IDs.
XADD_ACCEPTED = [
    (b"01-1", (1, 1)),
    (b"1-01", (1, 1)),
    (b"+1", (1, 0)),
    (b"+1-1", (1, 1)),
    (b"1-+1", (1, 1)),
    (b" 1", (1, 0)),
    (b"1- 1", (1, 1)),
    (b"\t1", (1, 0)),
    (b"1-\t2", (1, 2)),
    (b"1", (1, 0)),
    (b"18446744073709551615", (U64, 0)),
    (b"18446744073709551615-18446744073709551615", (U64, U64)),
    (b"1--18446744073709551615", (1, 1)),  # strtoull negates modulo 2**64
    (b"1--9223372036854775809", (1, 9223372036854775807)),
    (b"9223372036854775808", (9223372036854775808, 0)),
    (b"+9223372036854775808", (9223372036854775808, 0)),
    (b" 9223372036854775808", (9223372036854775808, 0)),
    (b"009223372036854775808", (9223372036854775808, 0)),
]

# Rejected with "Invalid stream ID" by XADD and by XRANGE alike.
REJECTED_EVERYWHERE = [
    b"-1",
    b"-0",
    b"1 ",
    b"1--1",
    b"1-",
    b"18446744073709551616",
    b"1-18446744073709551616",
    b"-18446744073709551615",
    b"1--9223372036854775808",  # string2ll succeeds with a negative: rejected
    b"0x10",
    b"1e3",
    b"1.0",
    b"1-**",
    b"*-1",
    b"",
    b"1-2-3",
    b"1_0",
    "١".encode(),
]


@pytest.mark.parametrize(("arg", "expected"), XADD_ACCEPTED)
def test_xadd_accepts_what_redis_accepts(arg: bytes, expected: tuple[int, int]) -> None:
    assert parse_xadd_id(arg) == (make_id(*expected), True)
    assert parse_strict_id(arg) == make_id(*expected)
    assert parse_id(arg) == make_id(*expected) or b"-" not in arg


@pytest.mark.parametrize("arg", REJECTED_EVERYWHERE)
def test_rejects_what_redis_rejects(arg: bytes) -> None:
    for parse in (parse_strict_id, parse_id, parse_xadd_id):
        with pytest.raises(InvalidStreamID) as e:
            parse(arg)
        assert str(e.value) == "ERR Invalid stream ID specified as stream command argument"
        assert isinstance(e.value, StreamError)
    with pytest.raises(InvalidStreamID):
        parse_range_bound(b"(" + arg, 0)


def test_special_ids() -> None:
    # XRANGE accepts - and +, XADD and exclusive bounds do not (redis-server 7.0.15).
    assert parse_id(b"-") == 0
    assert parse_id(b"+") == MAX_ID
    for arg in (b"-", b"+"):
        with pytest.raises(InvalidStreamID):
            parse_strict_id(arg)
        with pytest.raises(InvalidStreamID):
            parse_xadd_id(arg)
        with pytest.raises(InvalidStreamID):
            parse_range_bound(b"(" + arg, 0)
    assert parse_xadd_id(b"*") is None
    assert parse_xadd_id(b"5-*") == (make_id(5, 0), False)
    with pytest.raises(InvalidStreamID):
        parse_strict_id(b"5-*")  # only XADD knows ms-*
    with pytest.raises(InvalidStreamID):
        parse_id(b"*")


def test_zero_ids_parse() -> None:
    # XADD replies "must be greater than 0-0" for these: they parse fine.
    for arg in (b"0", b"00", b"0-0", b"0--0", b"0-00"):
        assert parse_xadd_id(arg) == (0, True)
    assert parse_xadd_id(b"1--0") == (make_id(1, 0), True)


def test_missing_seq_and_exclusive_bounds() -> None:
    assert parse_id(b"7", missing_seq=U64) == make_id(7, U64)
    assert parse_range_bound(b"7", U64) == (make_id(7, U64), False)
    assert parse_range_bound(b"(7-3", 0) == (make_id(7, 3), True)
    assert parse_range_bound(b"(7", 0) == (make_id(7, 0), True)
    with pytest.raises(InvalidStreamID):
        parse_range_bound(b"(", 0)  # a lone "(" is parsed as an ID
    # Longer than Redis's 127-byte buffer.
    with pytest.raises(InvalidStreamID):
        parse_id(b" " * 127 + b"1")
    assert parse_id(b" " * 126 + b"1") == make_id(1, 0)
    # An embedded NUL ends the C string Redis parses.
    assert parse_id(b"5-1\x00junk") == make_id(5, 1)


def test_format_and_order() -> None:
    assert format_id(make_id(1526919030474, 55)) == b"1526919030474-55"
    assert format_id(0) == b"0-0"
    assert format_id(MAX_ID) == b"18446744073709551615-18446744073709551615"
    assert split_id(make_id(3, 4)) == (3, 4)
    assert make_id(1, U64) < make_id(2, 0) < make_id(2, 1)
    for sid in (0, 1, make_id(5, U64), MAX_ID - 1):
        assert parse_strict_id(format_id(sid)) == sid


def test_incr_decr_overflow() -> None:
    assert incr_id(make_id(1, U64)) == make_id(2, 0)
    assert incr_id(MAX_ID) is None
    assert decr_id(make_id(2, 0)) == make_id(1, U64)
    assert decr_id(0) is None


# The fast path for ``<digits>-<digits>`` must agree with the general parser on everything,
# including what is near it: signs, spaces, NULs, leading zeros, overflow, extra dashes.
_ID_ALPHABET = b"0123456789-+ \t\x00*9"


@settings(max_examples=3000, deadline=None)
@given(arg=st.one_of(
    st.binary(max_size=45).map(lambda b: bytes(_ID_ALPHABET[x % len(_ID_ALPHABET)] for x in b)),
    st.tuples(st.integers(0, 2**65), st.integers(0, 2**65),
              st.sampled_from([0, 1, 3, 90, 120])).map(  # zeros: up to past 127 bytes
        lambda t: b"0" * t[2] + b"%d-%d" % (t[0], t[1])),
))
def test_plain_ids_parse_as_the_general_parser_does(arg: bytes) -> None:
    for strict, parse in ((True, parse_strict_id), (False, parse_id)):
        try:
            expected: int | type[Exception] = _parse(arg, 0, strict, False)[0]
        except InvalidStreamID:
            expected = InvalidStreamID
        try:
            got: int | type[Exception] = parse(arg)
        except InvalidStreamID:
            got = InvalidStreamID
        assert got == expected, (arg, strict)
