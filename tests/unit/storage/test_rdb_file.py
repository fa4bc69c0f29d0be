"""Whole RDB files and DUMP payloads (storage/rdb.py) for strings and lists."""

from __future__ import annotations

import random
import struct

import pytest

from sluice.storage import rdb
from sluice.storage.keyspace import FakeClock, Keyspace
from sluice.storage.rdb_codec import RdbError, crc64, enc_len, enc_string

ListValue = pytest.importorskip("sluice.storage.lists").ListValue


def _keyspace() -> Keyspace:
    ks = Keyspace(16, FakeClock(1_700_000_000_000))
    ks[0].set(b"s", b"hello")
    ks[0].set(b"n", b"12345")
    ks[0].set(b"big", b"z" * 5000)
    ks[0].set(b"l", ListValue([b"%d" % i for i in range(3000)] + [b"v" * 9000]))
    ks[3].set(b"ttl", b"x")
    ks[3].set_expire(b"ttl", 1_700_000_100_000)
    ks[3].set(b"gone", b"y")
    ks[3].set_expire(b"gone", 1_600_000_000_000)
    return ks


def test_keyspace_round_trip_skips_expired_keys() -> None:
    ks = _keyspace()
    data = b"".join(rdb.dump_keyspace(ks))
    assert data.startswith(b"REDIS0010")
    back = Keyspace(16, FakeClock(1_700_000_000_000))
    end = rdb.load_into(data, back, 1_700_000_000_000)
    assert end == len(data)
    assert back[0].data[b"s"] == b"hello" and back[0].data[b"big"] == b"z" * 5000
    assert list(back[0].data[b"l"]) == list(ks[0].data[b"l"])
    assert back[3].expires == {b"ttl": 1_700_000_100_000}


def test_checksum_is_verified_and_can_be_disabled() -> None:
    data = bytearray(b"".join(rdb.dump_keyspace(_keyspace())))
    data[40] ^= 1
    with pytest.raises(RdbError):
        rdb.load_into(bytes(data), Keyspace(16), 0)
    plain = b"".join(rdb.dump_keyspace(_keyspace(), checksum=False))
    assert plain.endswith(b"\x00" * 8)
    rdb.load_into(plain, Keyspace(16), 0)


def test_truncated_files_raise_rdb_errors_at_every_cut() -> None:
    data = b"".join(rdb.dump_keyspace(_keyspace(), compress=True))
    rng = random.Random(4)
    for cut in sorted(rng.sample(range(len(data)), 200)):
        with pytest.raises(RdbError):
            rdb.load_into(data[:cut], Keyspace(16), 0)


def test_payload_round_trip_and_checksum() -> None:
    payload = rdb.dump_payload(ListValue([b"a", b"b"]))
    assert list(rdb.load_payload(payload)) == [b"a", b"b"]
    assert payload[-10:-8] == struct.pack("<H", 10)
    with pytest.raises(RdbError, match="bad checksum"):
        rdb.load_payload(payload[:-1] + bytes([payload[-1] ^ 1]))


def test_unsupported_types_are_refused_by_name() -> None:
    body = b"\x02" + enc_len(1) + enc_string(b"member") + struct.pack("<H", 10)
    payload = body + struct.pack("<Q", crc64(body))
    with pytest.raises(RdbError, match="no set type"):
        rdb.load_payload(payload)
