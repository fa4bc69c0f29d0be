"""Unit tests of ``storage/hashes.py`` and ``storage/rdb_hash.py``: encodings and conversions,
the listpackex order, field deadlines and their conditions, the active cycle's bounds, HSCAN
positions under churn, and RDB round trips of every encoding."""

from __future__ import annotations

import random
import struct

import pytest

from sluice.storage import rdb
from sluice.storage.hashes import (
    COND_GT,
    COND_LT,
    COND_NX,
    COND_XX,
    HASHTABLE,
    LISTPACK,
    LISTPACK_EX,
    PACK_MAX_FIELDS,
    SETEX_DELETED,
    SETEX_NO_CONDITION_MET,
    SETEX_NO_FIELD,
    SETEX_OK,
    SHARED_FIELD_MAX_LEN,
    FieldOrder,
    Hash,
    PackedFields,
    active_expire_fields,
    count_subexpiry,
    shared_field,
)
from sluice.storage.keyspace import Database, FakeClock
from sluice.storage.rdb_codec import RdbError, Reader, enc_len, enc_string, lp_encode
from sluice.storage.rdb_hash import load_hash, save_hash, zipmap_decode

NOW = 1_000_000


def make(*pairs: str, entries: int = 512, value: int = 64) -> Hash:
    h = Hash()
    for i in range(0, len(pairs), 2):
        h.set(pairs[i].encode(), pairs[i + 1].encode(), entries, value)
    return h


def keys(h: Hash) -> list[str]:
    return [f.decode() for f in h.d]


# -- encodings -------------------------------------------------------------------------------


def test_listpack_keeps_insertion_order_and_updates_in_place() -> None:
    h = make("c", "1", "a", "2", "b", "3")
    assert h.encoding() == b"listpack"
    assert not h.set(b"a", b"22", 512, 64)  # an update: not new
    h.delete(b"c")
    h.set(b"c", b"1", 512, 64)
    assert keys(h) == ["a", "b", "c"] and h.d[b"a"] == b"22"


def test_conversions_follow_the_limits() -> None:
    h = make("a", "1", "b", "2", entries=2)
    assert h.enc == LISTPACK
    h.set(b"c", b"3", 2, 64)
    assert h.enc == HASHTABLE
    h.delete(b"c")
    h.delete(b"b")
    assert h.enc == HASHTABLE  # never back while the key lives
    v = make("a", "12345", value=5)
    assert v.enc == LISTPACK
    v.set(b"a", b"123456", 512, 5)  # a value over the limit (HINCRBY's path)
    assert v.enc == HASHTABLE
    t = Hash()
    t.try_conversion([b"HSET", b"k", b"a", b"1", b"a", b"2", b"a", b"3"], 2, 2, 64)
    assert t.enc == HASHTABLE  # pairs given, duplicates counted, as Redis guesses
    u = Hash()
    u.try_conversion([b"HSET", b"k", b"f", b"x" * 65], 2, 512, 64)
    assert u.enc == HASHTABLE


# -- field deadlines ----------------------------------------------------------------------------


def test_listpack_ex_orders_by_deadline_later_ties_first() -> None:
    h = make("a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
    h.to_listpack_ex()
    assert h.encoding() == b"listpackex"
    assert h.set_expiry(b"c", NOW + 50, 0, NOW) == SETEX_OK
    assert h.set_expiry(b"a", NOW + 10, 0, NOW) == SETEX_OK
    assert keys(h) == ["a", "c", "b", "d", "e"]
    assert h.set_expiry(b"e", NOW + 50, 0, NOW) == SETEX_OK  # ties c: goes before it
    assert keys(h) == ["a", "e", "c", "b", "d"]
    assert h.set_expiry(b"c", NOW + 50, 0, NOW) == SETEX_OK  # re-inserted: before e now
    assert keys(h) == ["a", "c", "e", "b", "d"]
    assert h.persist(b"a", NOW) == 1  # a field losing its deadline goes to the end
    assert keys(h) == ["c", "e", "b", "d", "a"]
    h.set(b"e", b"new", 512, 64)  # an update without KEEPTTL drops the deadline: the end
    assert keys(h) == ["c", "b", "d", "a", "e"] and h.expire_time(b"e") is None
    h.set(b"c", b"new", 512, 64, keep_ttl=True)
    assert keys(h)[0] == "c" and h.expire_time(b"c") == NOW + 50


def test_hashtable_same_deadline_is_left_alone_even_in_the_past() -> None:
    h = make("a", "1", entries=0)
    h.to_listpack_ex()
    assert h.enc == HASHTABLE
    assert h.set_expiry(b"a", NOW + 5, 0, NOW) == SETEX_OK
    assert h.set_expiry(b"a", NOW + 5, 0, NOW + 10) == SETEX_OK  # same time: untouched
    assert b"a" in h.d
    assert h.set_expiry(b"a", NOW + 6, 0, NOW + 10) == SETEX_DELETED


@pytest.mark.parametrize("cond, prev, new, expected", [
    (COND_NX, None, 10, SETEX_OK), (COND_NX, 5, 10, SETEX_NO_CONDITION_MET),
    (COND_XX, None, 10, SETEX_NO_CONDITION_MET), (COND_XX, 5, 10, SETEX_OK),
    (COND_GT, None, 10, SETEX_NO_CONDITION_MET), (COND_GT, 5, 10, SETEX_OK),
    (COND_GT, 10, 10, SETEX_NO_CONDITION_MET), (COND_LT, None, 10, SETEX_OK),
    (COND_LT, 5, 10, SETEX_NO_CONDITION_MET), (COND_LT, 15, 10, SETEX_OK),
])
def test_conditions(cond: int, prev: int | None, new: int, expected: int) -> None:
    h = make("f", "v")
    h.to_listpack_ex()
    if prev is not None:
        h.set_expiry(b"f", NOW + prev, 0, NOW)
    assert h.set_expiry(b"f", NOW + new, cond, NOW) == expected
    assert h.set_expiry(b"nope", NOW + new, cond, NOW) == SETEX_NO_FIELD


def test_expiry_boundaries_and_replies() -> None:
    lpex = make("a", "1", "b", "2")
    lpex.to_listpack_ex()
    ht = make("a", "1", "b", "2", entries=1)
    ht.to_listpack_ex()
    for h in (lpex, ht):
        h.set_expiry(b"a", NOW + 10, 0, NOW)
        assert not h.is_expired(b"a", NOW + 10)  # expired only once the deadline is past
        assert h.is_expired(b"a", NOW + 11)
        assert h.ttl_reply(b"b", NOW) is None and h.ttl_reply(b"x", NOW) == -2
        assert h.live_length(NOW + 11) == 1 and len(h) == 2
        assert list(h.live_items(NOW + 11)) == [(b"b", b"2")]
    assert lpex.ttl_reply(b"a", NOW + 10) == -2  # listpackex: gone at the deadline...
    assert ht.ttl_reply(b"a", NOW + 10) == NOW + 10  # ...a hashtable: only after it
    assert lpex.persist(b"a", NOW + 11) == -2 and lpex.persist(b"b", NOW) == -1
    assert lpex.set_expiry(b"b", NOW, 0, NOW) == SETEX_DELETED  # a deadline of now deletes
    assert b"b" not in lpex.d and lpex.expire_time(b"b") is None


def test_min_expire_skips_stale_heap_entries() -> None:
    h = make("a", "1", "b", "2", "c", "3")
    h.to_listpack_ex()
    h.set_expiry(b"a", NOW + 5, 0, NOW)
    h.set_expiry(b"b", NOW + 7, 0, NOW)
    h.set_expiry(b"a", NOW + 9, 0, NOW)
    assert h.min_expire() == NOW + 7
    h.persist(b"b", NOW)
    assert h.min_expire() == NOW + 9
    h.delete(b"a")
    assert h.min_expire() is None and not h.has_field_ttls()


def test_expire_fields_is_bounded_and_soonest_first() -> None:
    h = make(*[x for i in range(10) for x in (f"f{i}", str(i))], entries=4)
    h.to_listpack_ex()
    for i in range(10):
        h.set_expiry(f"f{i}".encode(), NOW + 10 - i, 0, NOW)
    assert h.expire_fields(NOW + 5, 3) == [b"f9", b"f8", b"f7"]
    assert h.expire_fields(NOW + 5, 100) == [b"f6", b"f5"]
    assert len(h) == 5


def test_active_cycle_over_a_database() -> None:
    clock = FakeClock(NOW)
    db = Database(0, clock)
    for n in range(3):
        h = make(*[x for i in range(4) for x in (f"f{i}", "v")])
        db.add(f"k{n}".encode(), h)
        h.to_listpack_ex()
        for i in range(4 if n == 0 else 2):
            h.set_expiry(f"f{i}".encode(), NOW + 10 * (n + 1), 0, NOW)
        db.track_subexpire(f"k{n}".encode(), h.min_expire())  # type: ignore[arg-type]
    assert count_subexpiry(db) == 3
    assert active_expire_fields(db, NOW + 15, 100) == [(b"k0", [b"f0", b"f1", b"f2", b"f3"], True)]
    assert b"k0" not in db.data
    done = active_expire_fields(db, NOW + 30, 3)  # a quota of fields across hashes
    assert sum(len(f) for _, f, _ in done) == 3
    done = active_expire_fields(db, NOW + 30, 3)
    assert sum(len(f) for _, f, _ in done) == 1
    assert [len(db.data[k]) for k in (b"k1", b"k2")] == [2, 2]
    assert count_subexpiry(db) == 0


def test_database_registers_hashes_with_deadlines_wherever_they_land() -> None:
    clock = FakeClock(NOW)
    a, b = Database(0, clock), Database(1, clock)
    h = make("f", "v", "g", "w")
    h.to_listpack_ex()
    h.set_expiry(b"f", NOW + 5, 0, NOW)
    a.add(b"h", h)  # a stored value with deadlines is registered (RESTORE, loads)
    assert a.subexpires == [(NOW + 5, b"h")]
    a.rename(b"h", b"h2")
    a.copy_to(b"h2", b, b"c")
    a.move_to(b"h2", b)
    assert sorted(k for _, k in b.subexpires) == [b"c", b"h2"]
    a.swap_contents(b)
    assert count_subexpiry(a) == 2 and count_subexpiry(b) == 0
    a.flush()
    assert a.subexpires == []


# -- HSCAN positions and HRANDFIELD ------------------------------------------------------------


def test_scan_returns_every_field_present_throughout_despite_churn() -> None:
    rng = random.Random(7)
    h = make(*[x for i in range(500) for x in (f"f{i}", "v")], entries=1)
    stable = {f"f{i}".encode() for i in range(0, 500, 2)}
    seen: list[bytes] = []
    cursor, n = 0, 0
    while True:
        cursor, batch = h.scan(cursor, 7)
        seen += batch
        for _ in range(20):  # churn the other fields: deleted, re-added, new ones
            f = f"f{rng.randrange(1, 500, 2)}".encode()
            if f in h.d:
                h.delete(f)
            else:
                h.set(f, b"v", 1, 64)
            h.set(b"new%d" % n, b"x", 1, 64)
            h.delete(b"new%d" % (n - 3))
            n += 1
        if cursor == 0:
            break
    assert stable <= set(seen)
    assert len([f for f in seen if f in stable]) == len(stable)  # each stable field once


def test_cursor_survives_one_compaction() -> None:
    order = FieldOrder([b"a", b"b", b"c", b"d"])
    cursor = order.cursor(2)  # next: c
    order.removed(b"a")
    order.removed(b"b")
    order.added(b"e")  # into b's hole, before the cursor
    order.compact()
    assert order.fields[order.position(cursor):] == [b"c", b"d"]
    assert order.fields == [b"e", b"c", b"d"]
    old = order.cursor(1)
    order.compact()
    order.compact()
    assert order.position(old) == 0  # too old: from the start, nothing lost


def test_random_picks() -> None:
    h = make(*[x for i in range(50) for x in (f"f{i}", "v")], entries=10)
    assert len(h.random_fields(200)) == 200
    picked = h.random_unique_fields(40)
    assert len(set(picked)) == 40  # the copy-and-discard case
    picked = h.random_unique_fields(5)
    assert len(set(picked)) == 5 and set(picked) <= set(h.d)
    lp = make(*[x for i in range(10) for x in (f"f{i}", "v")])
    picked = lp.random_unique_fields(4)
    assert picked == [f for f in lp.d if f in set(picked)]  # a listpack's order


# -- RDB ---------------------------------------------------------------------------------------


class _Opts:
    compress = True


def _roundtrip(h: Hash) -> tuple[int, Hash]:
    rdb_type, blob = save_hash(h, _Opts())
    back = load_hash(Reader(blob), rdb_type)
    back.refit(512, 64)
    return rdb_type, back


def test_rdb_types_and_roundtrips() -> None:
    lp = make("a", "1", "b", "x" * 30)
    assert _roundtrip(lp)[0] == 16 and _roundtrip(lp)[1].d == lp.d
    lpex = make("a", "1", "b", "2", "c", "3")
    lpex.to_listpack_ex()
    lpex.set_expiry(b"c", NOW + 5, 0, NOW)
    lpex.set_expiry(b"a", NOW + 5, 0, NOW)
    t, back = _roundtrip(lpex)
    assert t == 25 and list(back.d) == [b"a", b"c", b"b"]
    assert back.encoding() == b"listpackex" and back.expire_time(b"c") == NOW + 5
    ht = make(*[x for i in range(600) for x in (f"f{i}", str(i))])
    t, back = _roundtrip(ht)
    assert t == 4 and back.d == ht.d and back.enc == HASHTABLE
    ht.to_listpack_ex()
    ht.set_expiry(b"f3", NOW + 100, 0, NOW)
    ht.set_expiry(b"f4", NOW + 10, 0, NOW)
    t, back = _roundtrip(ht)
    assert t == 24 and back.expire_time(b"f3") == NOW + 100 and back.min_expire() == NOW + 10
    ht.persist(b"f3", NOW)
    ht.persist(b"f4", NOW)
    assert _roundtrip(ht)[0] == 4  # a hashtable whose deadlines all went


def test_load_decides_the_encoding_as_redis() -> None:
    long_value = make("a", "x" * 100, entries=512, value=1000)  # a listpack over the limit
    assert long_value.enc == LISTPACK
    t, back = _roundtrip(long_value)
    assert t == 16 and back.enc == LISTPACK  # from a listpack: only the count matters
    small_ht = make("a", "x" * 100)  # field by field: the lengths count too
    assert small_ht.enc == HASHTABLE
    assert _roundtrip(small_ht)[1].enc == HASHTABLE
    tiny = make("a", "1", "b", "2", entries=1)
    assert _roundtrip(tiny)[1].enc == LISTPACK  # small enough now: a listpack
    tiny.to_listpack_ex()
    tiny.set_expiry(b"a", NOW + 5, 0, NOW)
    tiny.set_expiry(b"b", NOW + 5, 0, NOW)
    back = _roundtrip(tiny)[1]
    assert back.enc == LISTPACK_EX
    assert list(back.d) == list(reversed(list(tiny.d)))  # inserted one by one: ties reversed


def test_old_and_malformed_payloads() -> None:
    zipmap = bytes([2, 1]) + b"a" + bytes([1, 0]) + b"1" + bytes([2]) + b"bb" + bytes([3, 2]) \
        + b"xyz" + b"\x00\x00" + b"\xff"
    assert zipmap_decode(zipmap) == [b"a", b"1", b"bb", b"xyz"]
    h = load_hash(Reader(enc_string(zipmap)), 9)
    assert h.d == {b"a": b"1", b"bb": b"xyz"}
    with pytest.raises(RdbError, match="Duplicate"):
        load_hash(Reader(enc_len(2) + enc_string(b"a") + enc_string(b"1") + enc_string(b"a")
                         + enc_string(b"2")), 4)
    with pytest.raises(RdbError, match="integrity"):
        load_hash(Reader(enc_string(lp_encode([b"a", b"1", b"b"]))), 16)
    with pytest.raises(RdbError, match="empty"):
        load_hash(Reader(enc_len(0)), 4)
    pre_ga = enc_len(1) + enc_len(NOW + 5) + enc_string(b"f") + enc_string(b"v")  # type 22
    h = load_hash(Reader(pre_ga), 22)
    assert h.expire_time(b"f") == NOW + 5


def test_dump_payload_of_a_hash() -> None:
    h = make("a", "1")
    payload = rdb.dump_payload(h)
    assert payload[0] == 16
    assert struct.unpack_from("<H", payload, len(payload) - 10)[0] == 13
    assert rdb.load_payload(payload).d == {b"a": b"1"}


def test_small_hashes_share_field_names() -> None:
    """Listpacks too big to be packed (dicts) share their field names."""
    extra = [x for i in range(20) for x in (f"x{i}", "v")]
    a, b = make("status", "queued", *extra), make("status", "done", *extra)
    assert type(a.d) is dict and a.enc == LISTPACK
    assert next(iter(a.d)) is next(iter(b.d))  # one bytes object for both
    big = make(*[x for i in range(5) for x in (f"f{i}", "v")], entries=2)
    assert big.enc == HASHTABLE
    name = b"z" * (SHARED_FIELD_MAX_LEN + 1)  # too long to share: kept as given
    assert shared_field(name) is name and shared_field(bytes(bytearray(name))) is not name


def test_small_listpacks_are_packed_between_writes() -> None:
    h = make("a", "1", "bb", "")
    h.maybe_pack()
    assert type(h.d) is PackedFields and len(h.d) == 2
    assert h.d.get(b"bb") == b"" and h.d.get(b"b") is None and b"a" in h.d
    assert list(h.d.items()) == [(b"a", b"1"), (b"bb", b"")] and h.d == {b"a": b"1", b"bb": b""}
    assert h.set(b"c", b"3", 512, 64) and type(h.d) is PackedFields  # changed, packed again
    assert not h.set(b"a", b"one", 512, 64) and list(h.d) == [b"a", b"bb", b"c"]
    assert h.delete(b"bb") and not h.delete(b"zz") and h.d == {b"a": b"one", b"c": b"3"}
    dup = h.copy()
    assert dup.d == h.d and dup.d is not h.d
    h.to_listpack_ex()  # field deadlines need the dict
    assert type(h.d) is dict
    many = make(*[x for i in range(PACK_MAX_FIELDS + 1) for x in (f"f{i}", "v")])
    many.maybe_pack()
    assert type(many.d) is dict  # too many fields to pack
    long = make("f", "x" * 300, value=1000)
    long.maybe_pack()
    assert type(long.d) is dict  # a string too long for one length byte
    packed = make("a", "1")
    packed.maybe_pack()
    packed.convert_to_hashtable()
    assert type(packed.d) is dict and packed.enc == HASHTABLE


def test_packed_listpack_matches_a_dict_under_random_writes() -> None:
    """Sets, updates and deletes on a packed listpack keep the listpack's order and values,
    as a dict does, through packing and unpacking (past PACK_MAX_FIELDS and back)."""
    rng = random.Random(3)
    h, model = Hash(), {}
    names = [b"", b"a", b"bb", b"c" * 40, b"7", b"\x00\xff"] + [b"f%d" % i for i in range(20)]
    for _ in range(3000):
        field = rng.choice(names)
        if rng.random() < 0.6:
            value = rng.choice([b"", b"1", b"x" * 60, b"-5", b"v%d" % rng.randrange(99)])
            assert h.set(field, value, 512, 64) == (field not in model)
            model[field] = value
        else:
            assert h.delete(field) == (model.pop(field, None) is not None)
        h.maybe_pack()
        assert list(h.d.items()) == list(model.items()) and len(h) == len(model)
        assert h.d.get(field) == model.get(field)
