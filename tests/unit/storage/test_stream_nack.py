"""XNACK's NACK zone, the delivery-count histogram and the policies, on the storage objects.

XNACK is Redis 8.8 and no 8.8 server is available here: the expectations are the redis.io
XNACK page's (modes, FORCE, "released messages ... prioritized over other pending messages")
and the XREADGROUP page's CLAIM ordering; each test says which sentence it checks.
"""

from __future__ import annotations

import random

from sluice.storage import rdb
from sluice.storage.keyspace import FakeClock, Keyspace
from sluice.storage.stream import Retention, Stream
from sluice.storage.stream_group import (
    DELIVERY_BUCKETS,
    LLONG_MAX,
    ConsumerGroup,
    DeadLetter,
    delivery_bucket,
)

MS = 1 << 64


def _stream(n: int = 5) -> tuple[Stream, ConsumerGroup]:
    s = Stream()
    for i in range(1, n + 1):
        s.append((i * MS, True), [b"f", b"v%d" % i], 0)
    return s, s.create_group(b"g", 0)


def _read(g: ConsumerGroup, name: bytes, now: int = 1000, count: int = 0) -> list[int]:
    c, _ = g.get_or_create_consumer(name, now)
    return [sid for sid, _ in g.deliver_new(c, count, now, False)]


def _check_hist(g: ConsumerGroup) -> None:
    want = [0] * (len(DELIVERY_BUCKETS) + 1)
    for pe in g.pel.values():
        want[delivery_bucket(pe.delivery_count)] += 1
    assert g.hist == want
    assert g.hist_sum == sum(pe.delivery_count for pe in g.pel.values())


def test_modes_adjust_the_delivery_counter_as_the_page_says() -> None:
    s, g = _stream()
    _read(g, b"c")
    g.claim(b"c", 0, [2 * MS, 3 * MS], 2000)  # count 2 for IDs 2 and 3
    assert g.nack([1 * MS], "SILENT") == [1 * MS]  # "decrements ... by 1"
    assert g.pel[1 * MS].delivery_count == 0
    assert g.nack([1 * MS], "SILENT") == [1 * MS]  # never below 0
    assert g.pel[1 * MS].delivery_count == 0
    g.nack([2 * MS], "FAIL")  # "keeps the current delivery counter value unchanged"
    assert g.pel[2 * MS].delivery_count == 2
    g.nack([3 * MS], "FATAL")  # "sets the delivery counter to ... LLONG_MAX"
    assert g.pel[3 * MS].delivery_count == LLONG_MAX
    g.nack([4 * MS], "FATAL", retrycount=5)  # RETRYCOUNT wins "regardless of the mode"
    assert g.pel[4 * MS].delivery_count == 5
    _check_hist(g)


def test_released_entries_lose_their_consumer_and_time() -> None:
    s, g = _stream()
    _read(g, b"c")
    c = g.consumers[b"c"]
    g.nack([2 * MS, 4 * MS], "FAIL")
    for sid in (2 * MS, 4 * MS):
        pe = g.pel[sid]
        assert pe.consumer is None and pe.delivery_time == 0 and sid not in c.pel
    assert list(g.nacked) == [2 * MS, 4 * MS]
    rows = g.pending_range(0, MAX, 10, 5000)
    assert [(r[1], r[2]) for r in rows if r[0] in (2 * MS, 4 * MS)] == [(b"", -1), (b"", -1)]
    total, _, _, per = g.pending_summary()
    assert total == 5 and per == [(b"c", 3)]  # counted, under no consumer


MAX = (1 << 128) - 1


def test_ids_not_pending_are_ignored_unless_force() -> None:
    s, g = _stream()
    _read(g, b"c", count=2)
    assert g.nack([3 * MS, 99 * MS], "FAIL") == []  # "will only process ... in the PEL"
    assert g.nack([3 * MS, 99 * MS], "FAIL", force=True) == [3 * MS]  # "must exist"
    assert g.pel[3 * MS].delivery_count == 0  # FORCE: "set to 0"
    assert g.nack([4 * MS], "FATAL", force=True) == [4 * MS]
    assert g.pel[4 * MS].delivery_count == LLONG_MAX  # "or to LLONG_MAX if mode is FATAL"
    assert g.nack([5 * MS], "FAIL", retrycount=7, force=True) == [5 * MS]
    assert g.pel[5 * MS].delivery_count == 7  # "or to RETRYCOUNT if specified"
    _check_hist(g)


def test_claim_serves_nacked_entries_first_in_release_order() -> None:
    """XREADGROUP page: 'Among pending entries, messages released via XNACK are prioritized
    and reported first'; then idle entries by idle time."""
    s, g = _stream()
    _read(g, b"a", now=1000)
    c, _ = g.get_or_create_consumer(b"b", 9000)
    g.nack([4 * MS], "FAIL")
    g.nack([2 * MS], "FAIL")
    got = g.claim_idle(c, 100, 0, 9000)
    assert [sid for sid, *_ in got] == [4 * MS, 2 * MS, 1 * MS, 3 * MS, 5 * MS]
    assert [idle for _, _, idle, _ in got][:2] == [-1, -1]  # as XPENDING shows them
    assert not g.nacked and all(pe.consumer is c for pe in g.pel.values())
    _check_hist(g)


def test_renacking_moves_an_entry_to_the_end_of_the_zone() -> None:
    s, g = _stream()
    _read(g, b"a")
    g.nack([1 * MS, 2 * MS], "FAIL")
    g.nack([1 * MS], "FAIL")
    assert list(g.nacked) == [2 * MS, 1 * MS]
    c, _ = g.get_or_create_consumer(b"b", 2000)
    assert [sid for sid, *_ in g.claim_idle(c, 0, 2, 2000)] == [2 * MS, 1 * MS]


def test_xclaim_and_xautoclaim_take_nacked_entries_at_once() -> None:
    """XCLAIM / XAUTOCLAIM pages: released messages 'are immediately claimable since their
    delivery time is set to 0, satisfying any minimum idle time requirement'."""
    now = 1_700_000_000_000  # time 0 is idle for "now" ms: more than any sane min-idle
    s, g = _stream()
    _read(g, b"a", now=now)
    g.nack([1 * MS], "FAIL")
    assert [sid for sid, _ in g.claim(b"b", 10**12, [1 * MS], now + 1)] == [1 * MS]
    g.nack([2 * MS], "FAIL")
    _, claimed, _ = g.autoclaim(b"b", 10**12, 0, 10, now + 1)
    assert [sid for sid, _ in claimed] == [2 * MS]
    assert not g.nacked


def test_acknowledging_or_deleting_a_consumer_keeps_the_books() -> None:
    s, g = _stream()
    _read(g, b"a")
    g.nack([1 * MS, 2 * MS], "FAIL")
    assert g.ack([1 * MS]) == 1
    assert list(g.nacked) == [2 * MS]
    assert g.delete_consumer(b"a") == 3  # its own three; the NACKed one stays
    assert list(g.pel) == [2 * MS]
    _check_hist(g)


def test_histogram_follows_random_operations() -> None:
    rng = random.Random(7)
    s, g = _stream(60)
    now = 1000
    for _ in range(400):
        now += rng.randrange(0, 50)
        op = rng.randrange(7)
        ids = [rng.randrange(1, 61) * MS for _ in range(3)]
        if op == 0:
            _read(g, b"c%d" % rng.randrange(3), now, count=rng.randrange(1, 5))
        elif op == 1:
            g.claim(b"c%d" % rng.randrange(3), 0, ids, now,
                    retrycount=rng.choice([None, 0, 3, 60]))
        elif op == 2:
            g.autoclaim(b"c0", 0, 0, 5, now)
        elif op == 3:
            g.nack(ids, rng.choice(["SILENT", "FAIL", "FATAL"]), force=rng.random() < .3)
        elif op == 4:
            g.ack(ids)
        elif op == 5:
            c, _ = g.get_or_create_consumer(b"c1", now)
            g.read_history(c, 0, 3, now)
            g.claim_idle(c, 0, 2, now)
        else:
            g.delete_consumer(b"c%d" % rng.randrange(3))
        _check_hist(g)
        assert all((pe.consumer is None) == (sid in g.nacked) for sid, pe in g.pel.items())
    dup = s.copy()
    _check_hist(dup.groups[b"g"])
    assert list(dup.groups[b"g"].nacked) == list(g.nacked)


def test_dead_letter_policy_lists_due_entries_instead_of_delivering() -> None:
    s, g = _stream()
    g.dead_letter = DeadLetter(b"dlq", 2)
    _read(g, b"a")  # delivery 1 of each
    c = g.consumers[b"a"]
    assert len(g.read_history(c, 0, 0, 2000)) == 5  # delivery 2: within the policy
    assert g.read_history(c, 0, 0, 3000) == [] and g.due == [i * MS for i in range(1, 6)]
    g.due.clear()
    # XCLAIM with JUSTID or RETRYCOUNT is not a delivery (what the AOF replays)
    assert len(g.claim(b"b", 0, [1 * MS], 4000, justid=True)) == 1
    assert len(g.claim(b"b", 0, [2 * MS], 4000, retrycount=2)) == 1
    assert g.claim(b"b", 0, [3 * MS], 4000) == [] and g.due == [3 * MS]
    g.due.clear()
    _, claimed, _ = g.autoclaim(b"b", 0, 0, 10, 5000)
    assert claimed == [] and g.due == [1 * MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]
    g.due.clear()
    assert g.claim_idle(c, 0, 0, 6000) == [] and len(g.due) == 5


def _roundtrip(ks: Keyspace) -> Keyspace:
    data = b"".join(rdb.dump_keyspace(ks))
    out = Keyspace(16, FakeClock(ks.clock.now_ms()))
    rdb.load_into(data, out, ks.clock.now_ms())
    return out


def test_rdb_keeps_the_nack_zone_in_the_format_86_reads() -> None:
    clock = FakeClock(10**12)
    ks = Keyspace(16, clock)
    s, g = _stream()
    _read(g, b"a", now=10**12)
    g.nack([3 * MS, 1 * MS], "FATAL")
    g.nack([5 * MS], "SILENT")
    ks[0].add(b"s", s)
    g2 = _roundtrip(ks)[0].data[b"s"].groups[b"g"]
    assert list(g2.nacked) == [3 * MS, 1 * MS, 5 * MS]
    assert set(g2.consumers) == {b"a"}  # the "" consumer that carried them is gone again
    assert [g2.pel[sid].delivery_count for sid in g2.nacked] == [LLONG_MAX, LLONG_MAX, 0]
    assert all(g2.pel[sid].consumer is None and g2.pel[sid].delivery_time == 0
               for sid in g2.nacked)
    assert g2.hist == g.hist and g2.hist_sum == g.hist_sum


def test_rdb_keeps_a_real_empty_named_consumer_apart() -> None:
    ks = Keyspace(16, FakeClock(10**12))
    s, g = _stream()
    _read(g, b"", now=10**12, count=2)  # a consumer really named ""
    _read(g, b"b", now=10**12)
    g.nack([4 * MS], "FAIL")
    ks[0].add(b"s", s)
    g2 = _roundtrip(ks)[0].data[b"s"].groups[b"g"]
    assert list(g2.nacked) == [4 * MS]
    assert list(g2.consumers[b""].pel) == [1 * MS, 2 * MS]


def test_policies_survive_an_rdb_file_and_not_a_dump_payload() -> None:
    ks = Keyspace(16, FakeClock(10**12))
    s, g = _stream()
    s.create_group(b"h", 0)
    g.dead_letter = DeadLetter(b"dlq", 3)
    s.retention = Retention(60_000, "ACKED")
    ks[2].add(b"s", s)
    back = _roundtrip(ks)[2].data[b"s"]
    assert back.retention is not None and (back.retention.max_age_ms,
                                           back.retention.policy) == (60_000, "ACKED")
    dl = back.groups[b"g"].dead_letter
    assert dl is not None and (dl.key, dl.max_deliveries) == (b"dlq", 3)
    assert back.groups[b"h"].dead_letter is None
    payload = rdb.load_payload(rdb.dump_payload(s))
    assert payload.retention is None and payload.groups[b"g"].dead_letter is None


def test_an_rdb_without_policies_has_no_sluice_aux_field() -> None:
    ks = Keyspace(16, FakeClock(10**12))
    s, _ = _stream()
    ks[0].add(b"s", s)
    assert b"sluice-xpolicies" not in b"".join(rdb.dump_keyspace(ks))
