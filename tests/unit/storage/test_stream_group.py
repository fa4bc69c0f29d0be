"""Consumer groups, PELs, claims and the Redis 8.2 reference policies, on a virtual clock."""

from __future__ import annotations

from sluice.storage.stream import ACKED, DELREF, KEEPREF, Stream, XDelExResult
from sluice.storage.stream_group import ConsumerGroup
from sluice.storage.streamid import MAX_ID, make_id

F = [b"f", b"v"]


def i(n: int) -> int:
    return make_id(n, 0)


def filled(n: int) -> Stream:
    s = Stream()
    for k in range(1, n + 1):
        s.append((i(k), True), F, 0)
    return s


def shared_pel_ok(g: ConsumerGroup) -> None:
    owned = 0
    for c in g.consumers.values():
        for sid, pe in c.pel.items():
            assert g.pel[sid] is pe and pe.consumer is c
        owned += len(c.pel)
    assert owned == len(g.pel)


def test_redis_walkthrough() -> None:
    """The same commands as a session on redis-server 7.0.15, with the replies it gave.

    Obtained with XADD s 1-0..10-0, XGROUP CREATE s g 0, then the calls below
    (RESP2, raw connection); every assert mirrors the server's reply.
    """
    s = filled(10)
    g = s.create_group(b"g", 0)
    alice, created = g.get_or_create_consumer(b"alice", 0)
    assert created
    assert len(g.deliver_new(alice, 4, 0, False)) == 4
    assert g.claim(b"bob", 0, [i(7)], 0, force=True, justid=True) == [(i(7), None)]
    assert g.claim(b"bob", 0, [i(8)], 0, force=True) == [(i(8), F)]
    assert [(r[0], r[1], r[3]) for r in g.pending_range(0, MAX_ID, 10, 0)] == [
        (i(1), b"alice", 1),
        (i(2), b"alice", 1),
        (i(3), b"alice", 1),
        (i(4), b"alice", 1),
        (i(7), b"bob", 1),  # FORCE + JUSTID: count stays 1
        (i(8), b"bob", 2),  # FORCE without JUSTID: created at 1, then incremented
    ]
    s.delete([i(2), i(3)])
    assert g.read_history(alice, 0, 0, 0) == [(i(1), F), (i(2), None), (i(3), None), (i(4), F)]
    assert g.autoclaim(b"carol", 0, 0, 2, 0) == (i(3), [(i(1), F)], [i(2)])
    assert g.autoclaim(b"carol", 0, 0, 2, 0, justid=True) == (i(4), [(i(1), None)], [i(3)])
    assert [(r[0], r[1], r[3]) for r in g.pending_range(0, MAX_ID, 10, 0)] == [
        (i(1), b"carol", 3),
        (i(4), b"alice", 2),
        (i(7), b"bob", 1),
        (i(8), b"bob", 2),
    ]
    assert g.pending_summary() == (4, i(1), i(8), [(b"alice", 1), (b"bob", 2), (b"carol", 1)])
    assert g.delete_consumer(b"carol") == 1
    assert (g.last_id, g.entries_read, s.group_lag(g)) == (i(4), 4, 6)
    s.create_group(b"g2", 0)
    g.set_id(0)
    dave, _ = g.get_or_create_consumer(b"dave", 0)
    assert [e[0] for e in g.deliver_new(dave, 3, 0, False)] == [i(1), i(4), i(5)]
    assert [(r[0], r[1], r[3]) for r in g.pending_range(0, MAX_ID, 10, 0)] == [
        (i(1), b"dave", 1),
        (i(4), b"dave", 1),  # taken over from alice, count reset
        (i(5), b"dave", 1),
        (i(7), b"bob", 1),
        (i(8), b"bob", 2),
    ]
    assert (g.entries_read, s.group_lag(g)) == (-1, None)
    shared_pel_ok(g)


def test_noack_history_and_ack() -> None:
    s = filled(5)
    g = s.create_group(b"g", 0)
    c, _ = g.get_or_create_consumer(b"c", 10)
    assert c.active_time == -1 and c.seen_time == 10
    assert len(g.deliver_new(c, 2, 20, True)) == 2 and not g.pel  # NOACK
    assert c.seen_time == 20 and c.active_time == -1
    g.deliver_new(c, 0, 30, False)
    assert list(g.pel) == [i(3), i(4), i(5)] and c.active_time == 30
    assert g.deliver_new(c, 0, 40, False) == []
    assert [e[0] for e in g.read_history(c, i(3), 1, 50)] == [i(4)]
    assert g.pel[i(4)].delivery_count == 2 and g.pel[i(4)].delivery_time == 50
    assert [e[0] for e in g.read_history(c, MAX_ID, 0, 50)] == [i(3), i(4), i(5)]  # wraps
    assert g.ack([i(3), i(3), i(9)]) == 1
    assert list(c.pel) == [i(4), i(5)]
    shared_pel_ok(g)


def test_pending_filters_idle_and_count() -> None:
    s = filled(6)
    g = s.create_group(b"g", 0)
    a, _ = g.get_or_create_consumer(b"a", 0)
    b, _ = g.get_or_create_consumer(b"b", 0)
    g.deliver_new(a, 3, 100, False)
    g.deliver_new(b, 3, 200, False)
    rows = g.pending_range(0, MAX_ID, 10, 250)
    assert [(r[0], r[2]) for r in rows] == [
        (i(1), 150),
        (i(2), 150),
        (i(3), 150),
        (i(4), 50),
        (i(5), 50),
        (i(6), 50),
    ]
    assert [r[0] for r in g.pending_range(0, MAX_ID, 10, 250, min_idle=100)] == [i(1), i(2), i(3)]
    assert [r[0] for r in g.pending_range(i(2), i(5), 2, 250, consumer=b"b")] == [i(4), i(5)]
    assert g.pending_range(0, MAX_ID, 10, 250, consumer=b"nobody") == []
    assert g.pending_range(0, MAX_ID, 0, 250) == []
    assert g.pending_range(0, MAX_ID, 10, 50)[0][2] == 0  # idle is never negative


def test_claim_idle_time_retrycount_lastid() -> None:
    s = filled(4)
    g = s.create_group(b"g", 0)
    a, _ = g.get_or_create_consumer(b"a", 0)
    g.deliver_new(a, 3, 1000, False)
    assert g.claim(b"b", 500, [i(1), i(2)], 1200) == []  # not idle enough
    got = g.claim(b"b", 500, [i(1), i(4), i(9)], 1600, delivery_time=1500, retrycount=7)
    assert got == [(i(1), F)]  # 4-0 is not pending, 9-0 does not exist
    pe = g.pel[i(1)]
    assert (pe.consumer.name if pe.consumer else None, pe.delivery_time, pe.delivery_count) == (
        b"b",
        1500,
        7,
    )
    g.claim(b"b", 0, [i(2)], 1600, delivery_time=5000)  # future TIME becomes now
    assert g.pel[i(2)].delivery_time == 1600
    g.claim(b"b", 0, [], 1600, lastid=i(4))
    assert g.last_id == i(4)
    g.claim(b"b", 0, [], 1600, lastid=i(2))
    assert g.last_id == i(4)  # LASTID never moves back
    s.delete([i(3)])
    assert g.claim(b"b", 0, [i(3)], 1700) == [] and i(3) not in g.pel
    shared_pel_ok(g)


def test_autoclaim_scan_bound_and_cursor() -> None:
    s = filled(50)
    g = s.create_group(b"g", 0)
    a, _ = g.get_or_create_consumer(b"a", 0)
    g.deliver_new(a, 0, 0, False)
    # Only entries >= 40 are idle enough: COUNT 1 scans at most 10 entries.
    for k in range(40, 51):
        g.pel[i(k)].delivery_time = -1000
    assert g.autoclaim(b"b", 500, 0, 1, 100) == (i(11), [], [])
    assert g.autoclaim(b"b", 500, i(35), 2, 100) == (i(42), [(i(40), F), (i(41), F)], [])
    assert g.autoclaim(b"b", 500, i(50), 5, 100) == (0, [(i(50), F)], [])
    assert b"b" in g.consumers
    shared_pel_ok(g)


def test_claim_idle_most_idle_first() -> None:
    s = filled(6)
    g = s.create_group(b"g", 0)
    a, _ = g.get_or_create_consumer(b"a", 0)
    for k, t in ((1, 300), (2, 100), (3, 200)):
        g.deliver_new(a, 1, t, False)
        assert g.last_id == i(k)
    b, _ = g.get_or_create_consumer(b"b", 0)
    got = g.claim_idle(b, 150, 0, 400)
    assert [(e[0], e[2], e[3]) for e in got] == [(i(2), 300, 1), (i(3), 200, 1)]
    assert [g.pel[i(k)].consumer is b for k in (1, 2, 3)] == [False, True, True]
    assert g.pel[i(2)].delivery_count == 2
    assert g.claim_idle(b, 150, 0, 400) == []  # just claimed: idle 0 now
    g.ack([i(2)])
    s.delete([i(3)])
    assert [e[0] for e in g.claim_idle(b, 0, 1, 500)] == [i(1)]
    # A deleted entry is skipped and stays pending (8.6.3; XAUTOCLAIM would drop it).
    assert [e[0] for e in g.claim_idle(b, 0, 0, 500)] == [i(1)] and i(3) in g.pel
    shared_pel_ok(g)


def test_delete_ex_policies() -> None:
    s = filled(6)
    g = s.create_group(b"g", 0)
    c, _ = g.get_or_create_consumer(b"c", 0)
    g.deliver_new(c, 4, 0, False)  # 1..4 pending, 5..6 not yet delivered
    g.ack([i(1)])
    res = s.delete_ex([i(1), i(2), i(5), i(9)], ACKED)
    # 9-0 was never added, but no group has read that far: "referenced" (8.6.3).
    assert res == [XDelExResult.DELETED, XDelExResult.REFERENCED, XDelExResult.REFERENCED,
                   XDelExResult.REFERENCED]
    assert s.delete_ex([i(2), i(2)], KEEPREF) == [1, -1]
    assert i(2) in g.pel  # KEEPREF leaves the dangling reference
    assert s.delete_ex([i(2), i(3)], DELREF) == [-1, 1]  # DELREF still cleans 2-0's reference
    assert i(2) not in g.pel and i(3) not in g.pel and list(c.pel) == [i(4)]
    assert s.max_deleted_entry_id == i(3)
    # XACKDEL answers -1 for an ID the group has no pending entry for (5-0: never delivered),
    # as redis-server 8.6.3 does, without deleting it; 4-0 was pending, is acknowledged, and
    # with no other group needing it is deleted. 2-0 is pending nowhere any more: -1 too.
    assert s.ack_delete(g, [i(4), i(5), i(2)], ACKED) == [1, -1, -1]
    assert not g.pel and len(s) == 2
    shared_pel_ok(g)


def test_trim_ref_policies() -> None:
    s = filled(10)
    g = s.create_group(b"g", 0)
    c, _ = g.get_or_create_consumer(b"c", 0)
    g.deliver_new(c, 6, 0, False)
    g.ack([i(1), i(2), i(4)])
    # ACKED: of the 8 oldest, only acked-and-delivered ones go (1, 2, 4).
    assert s.trim("MAXLEN", 2, ref_policy=ACKED) == 3
    assert [e[0] for e in s.range(0, MAX_ID)] == [i(3)] + [i(k) for k in range(5, 11)]
    assert s.max_deleted_entry_id == 0  # trimming never moves it (8.6.3's streamTrim)
    # DELREF: exact MINID removes 3 and 5 and their references.
    assert s.trim("MINID", i(6), ref_policy=DELREF) == 2
    assert list(g.pel) == [i(6)] and list(c.pel) == [i(6)]
    # Without groups ACKED trims like KEEPREF.
    t = filled(3)
    assert t.trim("MAXLEN", 1, ref_policy=ACKED) == 2
    shared_pel_ok(g)


def test_approx_trim_under_acked_or_delref_is_exact() -> None:
    """Measured on redis-server 8.6.3 with the same steps: 0, then 11 (two whole nodes, and
    11-0 from the third: '~' trims whole nodes only under KEEPREF)."""
    s = Stream()
    for k in range(1, 21):
        s.append((i(k), True), F, 0, node_max_entries=5)
    g = s.create_group(b"g", 0)
    c, _ = g.get_or_create_consumer(b"c", 0)
    g.deliver_new(c, 12, 0, False)
    assert s.trim("MAXLEN", 9, approx=True, limit=500, ref_policy=ACKED) == 0
    assert s.trim("MAXLEN", 9, approx=True, limit=500, ref_policy=DELREF) == 11
    assert list(g.pel) == [i(12)]
    shared_pel_ok(g)


def test_consumers_create_delete_and_destroy() -> None:
    s = filled(3)
    g = s.create_group(b"g", 0)
    assert g.create_consumer(b"x", 5) is not None
    assert g.create_consumer(b"x", 6) is None
    assert g.delete_consumer(b"missing") == 0
    x = g.consumers[b"x"]
    g.deliver_new(x, 0, 7, False)
    g.create_consumer(b"A", 8)
    assert [c.name for c in g.consumers_in_order()] == [b"A", b"x"]
    assert g.delete_consumer(b"x") == 3 and not g.pel
    s.create_group(b"B", 0)
    assert [gr.name for gr in s.groups_in_order()] == [b"B", b"g"]
    assert s.destroy_group(b"g") and not s.destroy_group(b"g")


def test_entries_read_follows_redis_7_2() -> None:
    # XGROUP CREATE ... ENTRIESREAD n keeps n; the lag then is entries_added - n.
    s = filled(10)
    g = s.create_group(b"g", i(5), entries_read=5)
    assert s.group_lag(g) == 5
    c, _ = g.get_or_create_consumer(b"c", 0)
    g.deliver_new(c, 2, 0, True)
    assert (g.entries_read, s.group_lag(g)) == (7, 3)
    g2 = s.create_group(b"g2", i(5))  # no ENTRIESREAD: unknown, lag estimated
    assert g2.entries_read == -1 and s.group_lag(g2) is None
    g2.deliver_new(c, 0, 0, True)
    assert (g2.entries_read, s.group_lag(g2)) == (10, 0)


def test_entries_timed_in_the_same_millisecond_keep_the_order_they_were_timed() -> None:
    """Redis keeps the PEL in a list by delivery time; an entry given a new time (even the
    same millisecond) goes after the others with that time. CLAIM takes them in that order."""
    s = filled(3)
    g = s.create_group(b"g", 0)
    c, _ = g.get_or_create_consumer(b"c", 0)
    b, _ = g.get_or_create_consumer(b"b", 0)
    g.deliver_new(c, 3, 100, False)  # 1-0, 2-0, 3-0 at 100, in that order
    assert [e[0] for e in g.claim_idle(b, 0, 1, 100)] == [i(1)]  # re-timed at 100: now last
    assert [e[0] for e in g.claim_idle(b, 0, 0, 100)] == [i(2), i(3), i(1)]
    assert g.oldest_delivery() == 100
