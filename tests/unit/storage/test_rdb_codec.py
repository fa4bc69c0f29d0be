"""RDB building blocks (storage/rdb_codec.py): CRC-64, LZF, lengths, strings, listpacks."""

from __future__ import annotations

import os
import struct

import pytest

from sluice.storage.rdb_codec import (
    RdbError,
    Reader,
    canonical_int,
    crc64,
    enc_len,
    enc_string,
    lp_decode,
    lp_encode,
    lzf_compress,
    lzf_decompress,
)


def test_crc64_check_value() -> None:
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64(b"56789", crc64(b"1234")) == crc64(b"123456789")


@pytest.mark.parametrize("data", [b"", b"a", b"ab", b"abc" * 100, b"x" * 70000,
                                  bytes(range(256)) * 40, os.urandom(3000)])
def test_lzf_round_trip(data: bytes) -> None:
    assert lzf_decompress(lzf_compress(data), len(data)) == data


def test_lzf_rejects_garbage() -> None:
    with pytest.raises(RdbError):
        lzf_decompress(b"\xe0\xff\xff", 10)  # back reference before the start
    with pytest.raises(RdbError):
        lzf_decompress(b"\x05ab", 6)  # literal run past the end


@pytest.mark.parametrize("n", [0, 63, 64, 16383, 16384, 2**32 - 1, 2**32, 2**63])
def test_lengths_round_trip(n: int) -> None:
    assert Reader(enc_len(n)).len() == n


def test_minus_one_is_written_as_u64_and_read_back_signed() -> None:
    assert enc_len(-1) == b"\x81" + b"\xff" * 8
    assert Reader(enc_len(-1)).signed_len() == -1


@pytest.mark.parametrize("s,first", [
    (b"0", 0xC0), (b"-128", 0xC0), (b"127", 0xC0), (b"128", 0xC1), (b"-32768", 0xC1),
    (b"32768", 0xC2), (b"2147483647", 0xC2), (b"2147483648", 10), (b"007", 3), (b"-0", 2),
    (b"+1", 2), (b"hello", 5),
])
def test_string_encodings_follow_redis(s: bytes, first: int) -> None:
    enc = enc_string(s)
    assert enc[0] == first
    assert Reader(enc).string() == s


def test_long_repetitive_strings_are_lzf_compressed() -> None:
    s = b"abcdefgh" * 50
    enc = enc_string(s)
    assert enc[0] == 0xC3 and len(enc) < len(s)
    assert Reader(enc).string() == s
    assert enc_string(s, compress=False)[1:] == s[0:0] + enc_string(s, False)[1:]


def test_canonical_int_is_string2ll() -> None:
    assert canonical_int(b"-9223372036854775808") == -(2**63)
    assert canonical_int(b"9223372036854775808") is None
    for bad in (b"", b" 1", b"1 ", b"01", b"-0", b"+5", b"1_0", b"0x10"):
        assert canonical_int(bad) is None


def test_listpack_round_trip_across_every_encoding() -> None:
    items: list[bytes] = [b"0", b"127", b"128", b"-1", b"4095", b"-4096", b"4096", b"32767",
                          b"-32769", b"8388607", b"-8388609", b"2147483648", b"-9223372036854775808",
                          b"", b"a" * 63, b"a" * 64, b"b" * 4095, b"c" * 4096, b"007", b"x" * 16380]
    decoded = lp_decode(lp_encode(items))
    assert [v if isinstance(v, bytes) else b"%d" % v for v in decoded] == items
    blob = lp_encode(items)
    assert struct.unpack_from("<I", blob)[0] == len(blob)


def test_listpack_decoder_refuses_bad_input() -> None:
    blob = lp_encode([b"hello", b"world"])
    for bad in (blob[:-1], blob[:5], blob[:-2] + b"\xff" + blob[-1:]):
        with pytest.raises(RdbError):
            lp_decode(bad)
