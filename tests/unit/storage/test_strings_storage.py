"""String value helpers (storage/strings.py): encodings, integer and long-double arithmetic,
ranges, LCS; and the keyspace metadata built on them (storage/keyspace.py). Expected values
were taken from redis-server 7.0.15 on x86-64 (80-bit long double); encodings from 8.6.3."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.keyspace import Database, FakeClock, Keyspace
from sluice.storage.strings import (
    embstr_or_raw,
    getrange,
    incr_by,
    incr_by_float,
    lcs_length,
    lcs_rows,
    lcs_walk,
    parse_long_double,
    rekeyed_encoding,
    round_long_double,
    setrange,
    string_encoding,
)


@pytest.mark.parametrize("value,encoding", [
    (b"0", b"int"), (b"-1", b"int"), (b"9223372036854775807", b"int"),
    (b"-9223372036854775808", b"int"), (b"9223372036854775808", b"embstr"), (b"01", b"embstr"),
    (b"+1", b"embstr"), (b" 1", b"embstr"), (b"", b"embstr"), (b"x" * 40, b"embstr"),
    (b"x" * 41, b"raw"), (b"x" * 44, b"raw"), (b"x" * 45, b"raw"), (b"1" * 45, b"raw"),
])
def test_string_encoding_under_a_one_byte_key(value: bytes, encoding: bytes) -> None:
    assert string_encoding(value, 1) == encoding


@pytest.mark.parametrize("key_len,value_len,encoding", [
    # measured on redis-server 8.6.3: 16 + (key + 3) + 4 + value must fit in 64 bytes
    (1, 40, b"embstr"), (1, 41, b"raw"), (0, 41, b"embstr"), (0, 42, b"raw"),
    (10, 30, b"embstr"), (11, 30, b"embstr"), (12, 30, b"raw"), (20, 30, b"raw"), (200, 1, b"raw"),
])
def test_embstr_depends_on_the_key_length(key_len: int, value_len: int, encoding: bytes) -> None:
    assert embstr_or_raw(key_len, value_len) == encoding
    assert string_encoding(b"x" * value_len, key_len) == encoding


def test_int_encoding_ignores_the_key_length() -> None:
    assert string_encoding(b"12", 200) == b"int"


def test_rekeyed_encoding() -> None:
    assert rekeyed_encoding(b"embstr", 12, 30) == b"raw"  # a longer key: no longer fits
    assert rekeyed_encoding(b"embstr", 11, 30) == b"embstr"
    assert rekeyed_encoding(b"raw", 0, 1) == b"raw"  # raw stays raw under a shorter key
    assert rekeyed_encoding(b"int", 300, 2) == b"int"


def test_incr_by() -> None:
    assert incr_by(None, 5) == 5
    assert incr_by(b"-3", 1) == -2
    with pytest.raises(OverflowError):
        incr_by(b"9223372036854775807", 1)
    with pytest.raises(OverflowError):
        incr_by(b"-9223372036854775808", -1)
    for bad in (b"", b"1.0", b" 1", b"01", b"abc", b"9223372036854775808"):
        with pytest.raises(ValueError):
            incr_by(bad, 1)


@pytest.mark.parametrize("value,incr,expected", [
    (None, b"10.5", b"10.5"), (b"10.5", b"0.1", b"10.6"), (b"0.1", b"0.2", b"0.3"),
    (b"5.0e3", b"2.0e2", b"5200"), (b"3", b"1.5e-3", b"3.0015"), (b"-0", b"-0", b"0"),
    (b"1", b"-1.00000000000000001", b"-0.00000000000000001"), (b"1", b"-1e-20", b"1"),
    (None, b"1e-20", b"0"), (None, b"-1e-20", b"0"), (None, b"0x1p-2", b"0.25"),
    (None, b"1.5", b"1.5"), (b"123456789012345678", b"1.5", b"123456789012345679.5"),
    (None, b"1e25", b"10000000000000000000000000"),
])
def test_incr_by_float_matches_redis(value: bytes | None, incr: bytes, expected: bytes) -> None:
    assert incr_by_float(value, incr) == expected


def test_incr_by_float_errors() -> None:
    for bad in (b"", b" 1", b"1 ", b"nan", b"1e", b"0x", b"1_0", b"abc", b"1e-5000", b"1e5000",
                b"x" * 5200):
        with pytest.raises(ValueError):
            incr_by_float(b"1", bad)
    for bad in (b"inf", b"-infinity"):
        with pytest.raises(ArithmeticError):
            incr_by_float(b"1", bad)
    with pytest.raises(ArithmeticError):
        incr_by_float(b"1.1e4932", b"1.1e4932")  # beyond the largest long double


def test_long_double_rounding_is_to_64_bits() -> None:
    third = round_long_double(Fraction(1, 3)).value
    assert third.denominator == 2**65  # 1/3 in [1/4, 1/2): 64 significant bits
    assert abs(third - Fraction(1, 3)) < Fraction(1, 2**66)
    assert round_long_double(Fraction(2**64 + 1)).value == 2**64  # tie: to even
    assert round_long_double(Fraction(2**64 + 3)).value == 2**64 + 4
    huge = parse_long_double(b"1.18973149535723176502e4932")
    assert huge is not None and not huge.inf


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**15), 10**15), st.integers(-(10**15), 10**15))
def test_integer_sums_are_exact(a: int, b: int) -> None:
    assert incr_by_float(b"%d" % a, b"%d" % b) == b"%d" % (a + b)


def test_ranges() -> None:
    assert getrange(b"Hello", 0, -1) == b"Hello"
    assert getrange(b"Hello", -3, -2) == b"ll"
    assert getrange(b"Hello", 3, 100) == b"lo"
    assert getrange(b"Hello", -100, 1) == b"He"
    assert getrange(b"Hello", 0, -100) == b"H"  # 8.6.3: the end is clamped to the first byte
    assert getrange(b"Hello", -100, -101) == b""  # two negative indexes in the wrong order
    assert getrange(b"Hello", 1, -100) == b""
    assert getrange(b"Hello", 4, 2) == b""
    assert getrange(b"", 0, -1) == b""
    assert setrange(b"Hello", 1, b"EY") == b"HEYlo"
    assert setrange(b"Hi", 4, b"!") == b"Hi\x00\x00!"
    assert setrange(b"Hello", 3, b"p me") == b"Help me"


def _lcs_dp(a: bytes, b: bytes) -> list[list[int]]:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    return t


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=12).map(lambda s: bytes(c % 3 + 97 for c in s)),
       st.binary(max_size=12).map(lambda s: bytes(c % 3 + 97 for c in s)))
def test_bit_parallel_lcs_equals_the_dp_table(a: bytes, b: bytes) -> None:
    rows = lcs_rows(a, b)
    table = _lcs_dp(a, b)
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            assert lcs_length(rows, i, j) == table[i][j]
    text, _ = lcs_walk(a, b, rows, 0)
    assert len(text) == table[len(a)][len(b)]


def test_lcs_walk_matches_redis_example() -> None:
    a, b = b"ohmytext", b"mynewtext"
    text, ranges = lcs_walk(a, b, lcs_rows(a, b), 0)
    assert text == b"mytext"
    assert ranges == [(4, 7, 5, 8), (2, 3, 0, 1)]
    assert lcs_walk(a, b, lcs_rows(a, b), 4)[1] == [(4, 7, 5, 8)]


def test_keyspace_string_metadata() -> None:
    db = Database(0, FakeClock())
    db.set(b"k", b"12")
    assert db.encoding(b"k", db.peek(b"k")) == b"int"
    value = b"12" + b"3"
    db.set(b"k", value, keep_ttl=True)
    db.set_encoding(b"k", value, b"raw")
    assert db.encoding(b"k", value) == b"raw"
    db.set(b"k", b"123")  # a new value: the override is gone
    assert db.encoding(b"k", db.peek(b"k")) == b"int"


def test_rename_move_copy_keep_ttl_and_metadata() -> None:
    ks = Keyspace(2, FakeClock(1000))
    db0, db1 = ks[0], ks[1]
    v = b"ab"
    db0.set(b"a", v)
    db0.set_encoding(b"a", v, b"raw")
    db0.set_expire(b"a", 5000)
    db0.rename(b"a", b"b")
    assert db0.peek(b"a") is None and db0.get_expire(b"b") == 5000
    assert db0.encoding(b"b", db0.peek(b"b")) == b"raw"
    db0.move_to(b"b", db1)
    assert db1.get_expire(b"b") == 5000 and db1.encoding(b"b", db1.peek(b"b")) == b"raw"
    db1.copy_to(b"b", db0, b"c")
    assert db0.get_expire(b"c") == 5000 and db0.encoding(b"c", db0.peek(b"c")) == b"raw"
    db1.set(b"n", b"7")
    db1.copy_to(b"n", db1, b"n2")
    assert db1.refcount(b"n", b"7") == 1 and db1.refcount(b"n2", db1.peek(b"n2")) == 1


def test_moves_recheck_embstr_against_the_new_key() -> None:
    ks = Keyspace(2, FakeClock(1000))
    db0, db1 = ks[0], ks[1]
    db0.set(b"m", b"x" * 40)
    assert db0.encoding(b"m", db0.peek(b"m")) == b"embstr"
    db0.rename(b"m", b"mm")  # 2 + 40 bytes no longer fit
    assert db0.encoding(b"mm", db0.peek(b"mm")) == b"raw"
    db0.rename(b"mm", b"m")  # raw stays raw under the shorter key again
    assert db0.encoding(b"m", db0.peek(b"m")) == b"raw"
    db0.set(b"n", b"x" * 30)
    db0.copy_to(b"n", db0, b"n" * 12)
    db0.copy_to(b"n", db0, b"o" * 11)
    assert db0.encoding(b"n" * 12, db0.peek(b"n" * 12)) == b"raw"
    assert db0.encoding(b"o" * 11, db0.peek(b"o" * 11)) == b"embstr"
    db0.move_to(b"n", db1)  # the same key in another database: unchanged
    assert db1.encoding(b"n", db1.peek(b"n")) == b"embstr"


def test_swap_contents_and_scan_after_swap() -> None:
    ks = Keyspace(2, FakeClock(1000))
    ks[0].set(b"x", b"0")
    ks[1].set(b"y", b"1")
    ks[1].set_expire(b"y", 9000)
    ks[0].swap_contents(ks[1])
    assert ks[0].peek(b"y") == b"1" and ks[0].get_expire(b"y") == 9000
    assert ks[1].peek(b"x") == b"0" and ks[0].id == 0
    assert ks[0].scan(0, 10) == (0, [b"y"])


def test_idle_time_follows_the_lru_clock() -> None:
    clock = FakeClock(10_000)
    ks = Keyspace(1, clock)
    db = ks[0]
    db.set(b"k", b"v")
    clock.advance(5000)
    ks.update_lru_clock()
    assert db.idle_seconds(b"k") == 5
    db.peek(b"k")
    assert db.idle_seconds(b"k") == 5
    db.get(b"k")
    assert db.idle_seconds(b"k") == 0
