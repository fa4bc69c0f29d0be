"""Whole RDB files and DUMP payloads (storage/rdb.py) for strings and lists."""

from __future__ import annotations

import random
import struct

import pytest

from sluice.storage import rdb
from sluice.storage.keyspace import FakeClock, Keyspace
from sluice.storage.rdb_codec import RdbError, crc64, enc_len

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
    assert data.startswith(b"REDIS0013")  # Redis 8.6's version: 8.6 loads our files
    back = Keyspace(16, FakeClock(1_700_000_000_000))
    end = rdb.load_into(data, back, 1_700_000_000_000)
    assert end == len(data)
    assert back[0].data[b"s"] == b"hello" and back[0].data[b"big"] == b"z" * 5000
    assert list(back[0].data[b"l"]) == list(ks[0].data[b"l"])
    assert back[3].expires == {b"ttl": 1_700_000_100_000}


def test_key_delays_wait_for_each_key_loaded_or_saved(monkeypatch: pytest.MonkeyPatch) -> None:
    """key-load-delay and rdb-key-save-delay: Redis's debugDelay once per key, as sleeps."""
    ks = Keyspace(16)
    for i in range(10):
        ks[0].set(b"k%d" % i, b"v")
    data = b"".join(rdb.dump_keyspace(ks))
    slept: list[float] = []
    monkeypatch.setattr(rdb.time, "sleep", slept.append)
    rdb.load_into(data, Keyspace(16), 0, key_delay_us=30_000)
    assert slept == [0.03] * 10
    slept.clear()
    delayed = b"".join(rdb.dump_keyspace(ks, key_delay_us=2_000))
    assert len(delayed) == len(data)  # the same file (its ctime field may be a second on)
    assert slept == [0.002] * 10
    # negative: one microsecond, once in that many keys on average (Redis's short waits)
    slept.clear()
    monkeypatch.setattr(rdb.random, "randrange", lambda n: 0 if n == 3 else 1)
    rdb.debug_delay(-3)
    rdb.debug_delay(-7)
    assert slept == [1e-6]


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
    assert payload[-10:-8] == struct.pack("<H", 13)  # as Redis 8.6 writes (and accepts)
    with pytest.raises(RdbError, match="bad checksum"):
        rdb.load_payload(payload[:-1] + bytes([payload[-1] ^ 1]))


def test_unsupported_types_are_refused_by_name() -> None:
    # A module value (Sluice has no modules): the error names the module type.
    body = b"\x07" + enc_len(12345 << 10) + struct.pack("<H", 10)
    payload = body + struct.pack("<Q", crc64(body))
    with pytest.raises(RdbError, match="module type '"):
        rdb.load_payload(payload)


def test_stream_round_trip_keeps_groups_pels_and_tombstones() -> None:
    from sluice.storage.stream import Stream

    s = Stream()
    for i in range(300):
        fields = [b"a", b"%d" % i] if i % 3 else [b"other", b"x" * i, b"n", b"%d" % i]
        s.append(None, fields, 1_700_000_000_000 + i // 7)
    ids = [sid for sid, _ in s.range(0, (1 << 128) - 1)]
    s.delete([ids[5], ids[150]])
    g = s.create_group(b"g", 0, -1)
    alice, _ = g.get_or_create_consumer(b"alice", 1_700_000_000_500)
    g.deliver_new(alice, 20, 1_700_000_000_600, False)
    g.ack([ids[0], ids[1]])
    g.create_consumer(b"idle", 1_700_000_000_700)
    s.create_group(b"late", s.last_id, 10)
    s.idmp.configure(duration=700, maxsize=20)
    for k, pid in enumerate((b"zz", b"a", b"m")):
        for j in range(3):
            s.idmp.record(pid, b"iid-%d" % j, ids[10 * k + j], 1_700_000_000_000)
    s.idmp.iids_duplicates = 4
    payload = rdb.dump_payload(s)
    assert payload[0] == 26  # RDB_TYPE_STREAM_LISTPACKS_4: Redis 8.6's, with the IDMP state
    back = rdb.load_payload(payload)
    assert back.range(0, (1 << 128) - 1) == s.range(0, (1 << 128) - 1)
    for attr in ("length", "last_id", "first_id", "max_deleted_entry_id", "entries_added"):
        assert getattr(back, attr) == getattr(s, attr), attr
    assert [n.master_id for n in back.iter_nodes()] == [n.master_id for n in s.iter_nodes()]
    assert [(n.live, n.deleted) for n in back.iter_nodes()] == \
        [(n.live, n.deleted) for n in s.iter_nodes()]
    for name, group in s.groups.items():
        other = back.groups[name]
        assert (other.last_id, other.entries_read) == (group.last_id, group.entries_read)
        assert {k: (p.consumer.name, p.delivery_time, p.delivery_count)
                for k, p in other.pel.items()} == \
            {k: (p.consumer.name, p.delivery_time, p.delivery_count)
             for k, p in group.pel.items()}
        assert {c.name: (c.seen_time, c.active_time, list(c.pel))
                for c in other.consumers.values()} == \
            {c.name: (c.seen_time, c.active_time, list(c.pel))
             for c in group.consumers.values()}
    assert back.groups[b"g"].consumers[b"idle"].active_time == -1
    mine, theirs = s.idmp, back.idmp
    assert (theirs.duration, theirs.maxsize, theirs.iids_added, theirs.iids_duplicates) == \
        (700, 20, 9, 4)
    # Producers come back in bytewise order (Redis's rax order), iids oldest first, each
    # taken as recorded at its entry ID's time (Redis stores no recording time).
    assert list(theirs.producers) == [b"a", b"m", b"zz"]
    for pid, hist in mine.producers.items():
        assert list(theirs.producers[pid].items()) == \
            [(iid, (sid, sid >> 64)) for iid, (sid, _) in hist.items()]
