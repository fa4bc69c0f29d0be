"""The keyspace's per-key slots: SCAN's guarantee across compaction, random samples, the
dataset's size kept at each write, INFO keysizes' histograms, lookup statistics and the
keyspace's own events (storage/keyspace.py)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage import valuesize  # noqa: F401  (registers the sizers)
from sluice.storage.keyspace import NO_KIND, Database, FakeClock, Keyspace
from sluice.storage.lists import ListValue
from sluice.storage.memsize import (
    EXPIRE_OVERHEAD,
    KEY_OVERHEAD,
    KIND_LIST,
    KIND_STRING,
    bytes_size,
    key_size,
)


def _db() -> Database:
    return Keyspace(1, FakeClock())[0]


def _full_scan(db: Database, count: int = 7) -> list[bytes]:
    cursor, out = 0, []
    while True:
        cursor, keys = db.scan(cursor, count)
        out += keys
        if cursor == 0:
            return out


def _recount(db: Database) -> int:
    """The dataset's size measured from scratch."""
    total = sum(key_size(k, v) for k, v in db.data.items())
    return total + EXPIRE_OVERHEAD * len(db.expires)


def test_scan_returns_every_key_once() -> None:
    db = _db()
    for i in range(500):
        db.add(b"k%d" % i, b"v")
    keys = _full_scan(db)
    assert sorted(keys) == sorted(db.data) and len(keys) == len(set(keys))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), count=st.integers(1, 50))
def test_scan_guarantee_through_deletions_and_compaction(seed: int, count: int) -> None:
    """Keys present for the whole scan come back (compaction in the middle included);
    keys added or deleted meanwhile may or may not."""
    rng = random.Random(seed)
    db = _db()
    stable = {b"s%d" % i for i in range(rng.randrange(1, 80))}
    churn = [b"c%d" % i for i in range(rng.randrange(0, 400))]
    names = list(stable) + churn
    rng.shuffle(names)
    for k in names:
        db.add(k, b"v")
    seen: list[bytes] = []
    cursor = 0
    steps = 0
    arrivals = 300  # bounded: SCAN ends only on a keyspace that stops growing, as in Redis
    while True:
        cursor, keys = db.scan(cursor, count)
        seen += keys
        # between calls, most of the churn goes (compaction kicks in) and some comes back
        for _ in range(rng.randrange(0, 60)):
            if churn and rng.random() < 0.8:
                k = churn.pop(rng.randrange(len(churn)))
                db.delete(k)
            elif arrivals:
                arrivals -= 1
                k = b"n%d" % rng.randrange(10**6)
                if db.find(k) is None:
                    db.add(k, b"v")
        steps += 1
        if cursor == 0 or steps > 10_000:
            break
    assert cursor == 0
    assert stable <= set(seen)


def test_compaction_keeps_slots_dense_and_sizes_right() -> None:
    db = _db()
    for i in range(1000):
        db.add(b"k%d" % i, b"x" * (i % 50))
    for i in range(990):
        db.delete(b"k%d" % i)
    assert len(db.keys_at) < 100  # compacted
    assert all(db.keys_at[db.slots[k]] == k for k in db.data)
    assert db.used == _recount(db)
    assert {db.sample_key() for _ in range(200)} <= set(db.data)


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["set", "add", "del", "expire", "persist",
                                                "replace", "list", "flush"]),
                              st.integers(0, 9), st.integers(0, 300)), max_size=80))
def test_used_is_the_sum_of_the_keys(ops: list[tuple[str, int, int]]) -> None:
    ks = Keyspace(2, FakeClock())
    db = ks[0]
    for op, k, n in ops:
        key = b"key%d" % k
        if op == "set":
            db.set(key, b"v" * n)
        elif op == "add" and db.find(key) is None:
            db.add(key, b"w" * n)
        elif op == "del":
            db.delete(key)
        elif op == "expire" and db.find(key) is not None:
            db.set_expire(key, 2_000_000_000_000 + n)
        elif op == "persist" and db.find(key) is not None:
            db.persist(key)
        elif op == "replace":
            db.replace(key, b"r" * n)
        elif op == "list":
            lst = db.find(key)
            if lst is None:
                lst = ListValue()
                db.add(key, lst)
            if type(lst) is ListValue:
                lst.push([b"e" * n], False, -2)
                db.written(key, False)
        elif op == "flush":
            db.flush()
        ks.settle()  # (what every reader of the sizes does first)
        assert db.used == _recount(db), (op, k, n)
        assert ks.access.used == db.used
        counts = [sum(h) for h in db.keysizes]
        assert sum(counts) == len(db.data)
        assert all(db.kinds[s] != NO_KIND for s in db.slots.values())


def test_keysizes_bins() -> None:
    db = _db()
    db.add(b"empty", b"")
    db.add(b"five", b"hello")
    lst = ListValue([b"a", b"b", b"c"])
    db.add(b"list", lst)
    assert db.keysizes[KIND_STRING][0] == 1  # length 0
    assert db.keysizes[KIND_STRING][3] == 1  # 4..7
    assert db.keysizes[KIND_LIST][2] == 1  # 2..3
    lst.push([b"d"], False, -2)
    db.written(b"list", False)
    assert db.keysizes[KIND_LIST][2] == 0 and db.keysizes[KIND_LIST][3] == 1
    db.delete(b"five")
    assert db.keysizes[KIND_STRING][3] == 0


def test_string_size_is_cpythons() -> None:
    db = _db()
    db.add(b"key", b"x" * 100)
    assert db.key_size(b"key") == KEY_OVERHEAD + bytes_size(3) + bytes_size(100)
    db.set_expire(b"key", 2_000_000_000_000)
    assert db.key_size(b"key") == KEY_OVERHEAD + bytes_size(3) + bytes_size(100) + EXPIRE_OVERHEAD


def test_lookup_statistics_and_keymiss() -> None:
    db = _db()
    misses: list[bytes] = []
    db.access.on_miss = lambda _db, key: misses.append(key)
    db.add(b"a", b"1")
    db.get(b"a")
    db.get(b"b")
    assert (db.access.hits, db.access.misses) == (0, 0)  # not counting (a write command)
    db.access.counting = True
    db.get(b"a")
    db.get(b"b")
    db.peek(b"c", notify=False)
    db.find(b"d")  # the server's own lookups never count
    assert (db.access.hits, db.access.misses) == (1, 2)
    assert misses == [b"b"]


def test_new_overwritten_type_changed_events() -> None:
    db = _db()
    events: list[tuple[bytes, bytes]] = []
    db.access.on_event = lambda _db, event, key: events.append((event, key))
    db.set(b"a", b"1")
    db.set(b"a", b"2")
    db.set(b"a", ListValue([b"x"]))
    db.replace(b"a", ListValue([b"y"]))  # dbReplaceValue: no event
    assert events == [(b"new", b"a"), (b"overwritten", b"a"), (b"overwritten", b"a"),
                      (b"type_changed", b"a")]


def test_set_over_an_expired_key_expires_it_first() -> None:
    clock = FakeClock(1000)
    expired: list[bytes] = []
    ks = Keyspace(1, clock, lambda _db, key, _ns: expired.append(key))
    db = ks[0]
    events: list[bytes] = []
    db.access.on_event = lambda _db, event, key: events.append(event)
    db.set(b"a", b"1")
    db.set_expire(b"a", 1500)
    clock.advance(1000)
    db.set(b"a", b"2")
    assert expired == [b"a"] and events == [b"new", b"new"]
    assert db.get_expire(b"a") is None


def test_a_collection_written_again_and_again_is_measured_in_arrears() -> None:
    """``written`` measures a hot collection once every few writes; ``settle`` (which INFO,
    MEMORY and the eviction check call first) brings the size and the keysizes bin up to
    date, and writing another key settles the previous one."""
    ks = Keyspace(1, FakeClock())
    db = ks[0]
    lst = ListValue()
    db.add(b"l", lst)
    for _ in range(100):
        lst.push([b"x" * 50], False, -2)
        db.written(b"l", False)
    if not db._hot_skips:  # (the 100th happened to be measured: one more)
        lst.push([b"x" * 50], False, -2)
        db.written(b"l", False)
    assert db.used < _recount(db)  # the last writes are not measured yet
    ks.settle()
    assert db.used == _recount(db) and db.keysizes[KIND_LIST][7] == 1  # 64..127 items
    lst.push([b"y"], False, -2)
    db.written(b"l", False)
    other = ListValue([b"a"])
    db.add(b"m", other)
    other.push([b"b"], False, -2)
    db.written(b"m", False)  # another collection: the first one's arrears are measured
    assert db.used == _recount(db)
    db.delete(b"m")
    lst.push([b"z"], False, -2)
    db.written(b"l", False)
    assert db.key_size(b"l") == _recount(db)  # MEMORY USAGE settles too
