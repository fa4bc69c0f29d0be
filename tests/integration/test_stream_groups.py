"""Consumer groups over real sockets with redis-py, RESP2 and RESP3.

Covers XGROUP, XREADGROUP (history, NOACK, CLAIM, BLOCK), XACK, XACKDEL, XPENDING, XCLAIM,
XAUTOCLAIM and XINFO GROUPS / CONSUMERS, the Redis streams tutorial (Alice and Bob) replayed
on a virtual clock, and what the AOF receives for the group commands (replayed on a fresh
server, the state must be the same).

Idle times are checked on virtual time: ``make_server(clock=FakeClock())`` and the clock is
moved with ``server.call``. Blocked clients are waited for through ``INFO clients``.
Behaviour that changed after Redis 7.0 (the installed reference) is asserted as current Redis
documents it, with a comment saying so; ``tests/differential/test_stream_groups_diff.py``
compares everything else with redis-server byte for byte.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from sluice.commands import errors
from sluice.storage.keyspace import FakeClock
from tests.support import RawClient, RecordingAof, ThreadedServer, wait_blocked

T0 = 1_692_632_639_151  # the first ID of the tutorial's race:italy stream


def err(template: bytes | str, *names: bytes) -> str:
    """The full error text of one of our error constants."""
    text = template % names if names else template
    return text.decode() if isinstance(text, bytes) else text


def same_error(e: BaseException, template: bytes | str, *names: bytes) -> bool:
    """redis-py drops the code word of the error codes it knows (ERR, WRONGTYPE ...)."""
    full = err(template, *names)
    return str(e) in (full, full.split(" ", 1)[1])


def raises(r_call: Callable[[], Any], template: bytes | str, *names: bytes) -> None:
    with pytest.raises(redis.ResponseError) as e:
        r_call()
    assert same_error(e.value, template, *names), str(e.value)


def fill(r: redis.Redis, key: str, n: int, start: int = 1) -> list[bytes]:
    return [r.xadd(key, {"f": str(i)}, id=f"{i}-0") for i in range(start, start + n)]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def vclock(request: pytest.FixtureRequest,
           make_server: Callable[..., ThreadedServer]) -> Iterator[tuple[redis.Redis, Any]]:
    """(client, advance(ms)) on a server whose clock only moves when told to."""
    clock = FakeClock(T0)
    srv = make_server(clock=clock)
    client = srv.client(protocol=request.param)

    def advance(ms: int) -> None:
        srv.call(lambda: clock.advance(ms))

    yield client, advance
    client.close()


class Deferred:
    """A command sent on its own connection from a thread; ``result()`` waits for the reply."""

    def __init__(self, port: int, protocol: int, *args: Any) -> None:
        self.client = redis.Redis(port=port, protocol=protocol, socket_timeout=20)
        self.reply: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=args, daemon=True)
        self.thread.start()

    def _run(self, *args: Any) -> None:
        try:
            self.reply = self.client.execute_command(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self.error = e

    def result(self) -> Any:
        self.thread.join(20)
        assert not self.thread.is_alive(), "blocked command never answered"
        self.client.close()
        if self.error is not None:
            raise self.error
        return self.reply


def proto(r: redis.Redis) -> int:
    return int(r.connection_pool.connection_kwargs.get("protocol") or 2)


def plain(r: redis.Redis, *args: Any) -> Any:
    """The reply decoded as sent, without redis-py's per-command reshaping."""
    import hiredis

    raw = RawClient(r.connection_pool.connection_kwargs["port"], proto(r))
    try:
        reader = hiredis.Reader()
        reader.feed(raw.call(*args))
        return reader.gets()
    finally:
        raw.close()


# -- the Redis streams tutorial ---------------------------------------------------------------


def test_tutorial_alice_and_bob(vclock: tuple[redis.Redis, Any]) -> None:
    """The consumer-group part of the Redis streams introduction, with its IDs and replies.

    The clock is set to the tutorial's timestamps so XADD * yields its exact IDs. One step
    departs from the page: its second XAUTOCLAIM (Lora, from ``(1692632662819-0``) shows a
    reply that cannot follow from the state before it; we claim from ``0-0`` a minute later,
    which reaches the XINFO CONSUMERS state the page shows next (Alice 1, Bob 0, Lora 1).
    """
    r, advance = vclock
    assert r.xgroup_create("race:italy", "italy_riders", "$", mkstream=True)
    ids = []
    for ms, rider in ((0, "Castilla"), (8748, "Royce"), (14920, "Sam-Bodden"),
                      (7682, "Prickett"), (7748, "Norem")):
        advance(ms)
        ids.append(r.xadd("race:italy", {"rider": rider}))
    assert ids == [b"1692632639151-0", b"1692632647899-0", b"1692632662819-0",
                   b"1692632670501-0", b"1692632678249-0"]
    castilla, royce, sam = ids[0], ids[1], ids[2]
    got = r.xreadgroup("italy_riders", "Alice", {"race:italy": ">"}, count=1)
    expected_first = [(castilla, {b"rider": b"Castilla"})]
    assert _entries(got, b"race:italy") == expected_first
    got = r.xreadgroup("italy_riders", "Alice", {"race:italy": "0"})
    assert _entries(got, b"race:italy") == expected_first
    assert r.xack("race:italy", "italy_riders", castilla) == 1
    got = r.xreadgroup("italy_riders", "Alice", {"race:italy": "0"})
    assert _entries(got, b"race:italy") == []
    got = r.xreadgroup("italy_riders", "Bob", {"race:italy": ">"}, count=2)
    assert _entries(got, b"race:italy") == [(royce, {b"rider": b"Royce"}),
                                            (sam, {b"rider": b"Sam-Bodden"})]
    assert r.xpending("race:italy", "italy_riders") == {
        "pending": 2, "min": royce, "max": sam,
        "consumers": [{"name": b"Bob", "pending": 2}]}
    advance(74642)
    assert r.xpending_range("race:italy", "italy_riders", "-", "+", 10) == [
        {"message_id": royce, "consumer": b"Bob", "time_since_delivered": 74642,
         "times_delivered": 1},
        {"message_id": sam, "consumer": b"Bob", "time_since_delivered": 74642,
         "times_delivered": 1}]
    assert r.xclaim("race:italy", "italy_riders", "Alice", 60000, [royce]) == [
        (royce, {b"rider": b"Royce"})]
    # The second claimer loses: the first claim reset the idle time.
    assert r.xclaim("race:italy", "italy_riders", "Lora", 60000, [royce]) == []
    assert r.xautoclaim("race:italy", "italy_riders", "Alice", 60000, "0-0", count=1) == [
        b"0-0", [(sam, {b"rider": b"Sam-Bodden"})], []]
    advance(60000)
    assert r.xautoclaim("race:italy", "italy_riders", "Lora", 60000, "0-0", count=1) == [
        sam, [(royce, {b"rider": b"Royce"})], []]
    groups = r.xinfo_groups("race:italy")
    assert [(g["name"], g["consumers"], g["pending"], g["last-delivered-id"]) for g in groups] \
        == [(b"italy_riders", 3, 2, sam)]
    consumers = r.xinfo_consumers("race:italy", "italy_riders")
    assert [(c["name"], c["pending"]) for c in consumers] == [
        (b"Alice", 1), (b"Bob", 0), (b"Lora", 1)]
    # Delivery counters: read once, claimed twice.
    assert [p["times_delivered"] for p in
            r.xpending_range("race:italy", "italy_riders", "-", "+", 10)] == [3, 2]


def _entries(reply: Any, key: bytes) -> list[Any]:
    """The entries of ``key`` in an XREADGROUP reply, whatever the protocol."""
    if isinstance(reply, dict):
        return list(reply[key][0]) if reply[key] and isinstance(reply[key][0], list) \
            else list(reply[key])
    for k, entries in reply:
        if k == key:
            return list(entries)
    raise AssertionError(f"{key!r} not in {reply!r}")


# -- XGROUP -------------------------------------------------------------------------------------


def test_xgroup_create_and_errors(rr: redis.Redis) -> None:
    raises(lambda: rr.xgroup_create("s", "g", "0"), errors.XGROUP_KEY_REQUIRED)
    assert rr.xgroup_create("s", "g", "$", mkstream=True)
    assert rr.type("s") == b"stream" and rr.xlen("s") == 0
    raises(lambda: rr.xgroup_create("s", "g", "0"), "BUSYGROUP Consumer Group name already exists")
    raises(lambda: rr.execute_command("XGROUP", "CREATE", "s", "g2", "-"),
           "ERR Invalid stream ID specified as stream command argument")
    raises(lambda: rr.execute_command("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-2"),
           errors.ENTRIESREAD_RANGE)
    raises(lambda: rr.execute_command("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x"),
           errors.NOT_INTEGER)
    raises(lambda: rr.execute_command("XGROUP", "CrEaTe", "s", "g2", "0", "BOGUS"),
           "ERR unknown subcommand or wrong number of arguments for 'CrEaTe'. Try XGROUP HELP.")
    raises(lambda: rr.execute_command("XGROUP", "FOO"),
           "ERR unknown subcommand 'FOO'. Try XGROUP HELP.")
    rr.set("str", "x")
    raises(lambda: rr.xgroup_create("str", "g", "0", mkstream=True), errors.WRONGTYPE)
    # A failed MKSTREAM creates nothing.
    raises(lambda: rr.execute_command("XGROUP", "CREATE", "new", "g", "bad-id", "MKSTREAM"),
           "ERR Invalid stream ID specified as stream command argument")
    assert rr.exists("new") == 0
    fill(rr, "s", 3)
    assert rr.execute_command("XGROUP", "CREATE", "s", "g3", "$", "ENTRIESREAD", "3") in (
        b"OK", "OK", True)
    info = {g["name"]: g for g in rr.xinfo_groups("s")}
    assert info[b"g"]["last-delivered-id"] == b"0-0"
    assert info[b"g3"]["last-delivered-id"] == b"3-0"
    assert info[b"g3"]["entries-read"] == 3 and info[b"g3"]["lag"] == 0


def test_xgroup_setid_destroy_and_consumers(rr: redis.Redis) -> None:
    fill(rr, "s", 3)
    rr.xgroup_create("s", "g", "0")
    raises(lambda: rr.xgroup_setid("s", "nope", "0"), errors.NOGROUP_XGROUP, b"nope", b"s")
    raises(lambda: rr.xgroup_createconsumer("nokey", "g", "c"), errors.XGROUP_KEY_REQUIRED)
    assert rr.xgroup_createconsumer("s", "g", "alice") == 1
    assert rr.xgroup_createconsumer("s", "g", "alice") == 0
    rr.xreadgroup("g", "bob", {"s": ">"}, count=2)
    assert rr.xgroup_delconsumer("s", "g", "bob") == 2  # its pending entries go with it
    assert rr.xpending("s", "g")["pending"] == 0
    assert rr.xgroup_delconsumer("s", "g", "nobody") == 0
    # SETID accepts "-" / "+" and $, and ENTRIESREAD.
    assert rr.execute_command("XGROUP", "SETID", "s", "g", "+") in (b"OK", "OK", True)
    assert rr.xinfo_groups("s")[0]["last-delivered-id"] == b"18446744073709551615-18446744073709551615"
    assert rr.xgroup_setid("s", "g", "$", entries_read=3)
    assert rr.xinfo_groups("s")[0]["lag"] == 0
    assert rr.xgroup_setid("s", "g", "0")
    assert _entries(rr.xreadgroup("g", "c", {"s": ">"}), b"s")[0][0] == b"1-0"
    raises(lambda: rr.execute_command("XGROUP", "SETID", "s", "g", "0", "MKSTREAM"),
           "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.")
    assert rr.xgroup_destroy("s", "g") == 1
    assert rr.xgroup_destroy("s", "g") == 0
    raises(lambda: rr.xgroup_destroy("nokey", "g"), errors.XGROUP_KEY_REQUIRED)
    assert rr.xinfo_groups("s") == []


def test_xgroup_help(r: redis.Redis) -> None:
    lines = r.execute_command("XGROUP", "HELP")
    assert lines[0] == b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[-2:] == [b"HELP", b"    Print this help."]  # 7.2+ wording ("Prints" in 7.0)
    assert b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]" in lines


# -- XREADGROUP ---------------------------------------------------------------------------------


def test_xreadgroup_new_history_and_deleted(rr: redis.Redis) -> None:
    fill(rr, "s", 4)
    rr.xgroup_create("s", "g", "0")
    got = _entries(rr.xreadgroup("g", "c", {"s": ">"}), b"s")
    assert [e[0] for e in got] == [b"1-0", b"2-0", b"3-0", b"4-0"]
    assert rr.xreadgroup("g", "c", {"s": ">"}) in (None, [], {})  # nothing new: null
    rr.xdel("s", "2-0")
    raw = RawClient(rr.connection_pool.connection_kwargs["port"], proto(rr))
    try:
        reply = raw.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", "0")
        null = b"_\r\n" if proto(rr) == 3 else b"*-1\r\n"
        assert b"$3\r\n2-0\r\n" + null in reply  # a deleted entry is [id, nil]
    finally:
        raw.close()
    # Counters: 1 delivery + this history read (deleted entries keep theirs).
    rows = {p["message_id"]: p["times_delivered"] for p in rr.xpending_range("s", "g", "-", "+", 9)}
    assert rows == {b"1-0": 2, b"2-0": 1, b"3-0": 1, b"4-0": 1}
    # History after an ID, and the max ID means ">" (Redis encodes ">" that way).
    got = _entries(rr.xreadgroup("g", "c", {"s": "3-0"}), b"s")
    assert [e[0] for e in got] == [b"4-0"]
    assert rr.xreadgroup("g", "c", {"s": "18446744073709551615-18446744073709551615"}) in (
        None, [], {})


def test_xreadgroup_noack_and_consumer_creation(rr: redis.Redis) -> None:
    fill(rr, "s", 2)
    rr.xgroup_create("s", "g", "0")
    assert rr.xreadgroup("g", "quiet", {"s": ">"}, noack=True)
    assert rr.xpending("s", "g")["pending"] == 0
    assert rr.xinfo_groups("s")[0]["last-delivered-id"] == b"2-0"
    # Created even though there was nothing to read (7.2+; 7.0 only when serving).
    assert rr.xreadgroup("g", "late", {"s": ">"}) in (None, [], {})
    names = [c["name"] for c in rr.xinfo_consumers("s", "g")]
    assert names == [b"late", b"quiet"]


def test_xreadgroup_errors(rr: redis.Redis) -> None:
    fill(rr, "s", 1)
    rr.xgroup_create("s", "g", "0")
    rr.set("str", "x")
    x = rr.execute_command
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"),
           errors.NOGROUP_XREADGROUP, b"nokey", b"g")
    raises(lambda: x("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"),
           errors.NOGROUP_XREADGROUP, b"s", b"nog")
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "str", ">", ">"),
           errors.WRONGTYPE)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"),
           errors.XREADGROUP_DOLLAR)
    # 7.2+ texts (7.0 answered "Invalid stream ID" and "Unbalanced XREAD list ...").
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"),
           errors.XREADGROUP_PLUS)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">"),
           errors.XREADGROUP_UNBALANCED)
    raises(lambda: x("XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">"),
           errors.XREADGROUP_MISSING_GROUP)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"),
           errors.TIMEOUT_NOT_INTEGER)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">"),
           errors.NOT_POSITIVE_TIMEOUT)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "BLOCK", str(2**63 - 1), "STREAMS", "s",
                     ">"), errors.TIMEOUT_OUT_OF_RANGE)  # 7.2+ check
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"),
           errors.NOT_INTEGER)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "BOGUS", "STREAMS", "s", ">"),
           errors.SYNTAX)
    raises(lambda: x("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "1-x"),
           "ERR Invalid stream ID specified as stream command argument")


def test_xreadgroup_several_streams(rr: redis.Redis) -> None:
    fill(rr, "a", 2)
    fill(rr, "b", 1)
    rr.xgroup_create("a", "g", "0")
    rr.xgroup_create("b", "g", "$")
    got = rr.xreadgroup("g", "c", {"a": ">", "b": ">"})
    # Only the streams that could be served are in the reply.
    if isinstance(got, dict):
        assert list(got) == [b"a"]
    else:
        assert [k for k, _ in got] == [b"a"]
    got = rr.xreadgroup("g", "c", {"a": "0", "b": ">"}, count=1)
    assert [e[0] for e in _entries(got, b"a")] == [b"1-0"]


def test_xreadgroup_claim_option(vclock: tuple[redis.Redis, Any]) -> None:
    """XREADGROUP ... CLAIM (Redis 8.4): not in 7.0, checked against the redis.io page."""
    r, advance = vclock
    port = r.connection_pool.connection_kwargs["port"]
    fill(r, "s", 5)
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "old", {"s": ">"}, count=1)  # 1-0 delivered at T0
    advance(500)
    r.xreadgroup("g", "old", {"s": ">"}, count=1)  # 2-0 at T0+500
    advance(1000)
    raw = RawClient(port, proto(r))
    try:
        # 1-0 idle 1500 and 2-0 idle 1000 qualify for CLAIM 1000; most idle first, each with
        # its idle time and earlier deliveries; then new entries fill COUNT, with 0 0.
        reply = raw.call("XREADGROUP", "GROUP", "g", "new", "COUNT", "3", "CLAIM", "1000",
                         "STREAMS", "s", ">")
        head = b"%1\r\n" if proto(r) == 3 else b"*1\r\n*2\r\n"
        assert reply == head + b"$1\r\ns\r\n*3\r\n" + (
            b"*4\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\n1\r\n:1500\r\n:1\r\n"
            b"*4\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$1\r\n2\r\n:1000\r\n:1\r\n"
            b"*4\r\n$3\r\n3-0\r\n*2\r\n$1\r\nf\r\n$1\r\n3\r\n:0\r\n:0\r\n")
        # Claimed entries moved to "new" with their counter bumped.
        rows = r.xpending_range("s", "g", "-", "+", 9)
        assert [(p["message_id"], p["consumer"], p["times_delivered"]) for p in rows] == [
            (b"1-0", b"new", 2), (b"2-0", b"new", 2), (b"3-0", b"new", 1)]
        # Nothing idle enough and nothing new: a null reply.
        null = b"_\r\n" if proto(r) == 3 else b"*-1\r\n"
        r.xreadgroup("g", "x", {"s": ">"})  # take 4-0, 5-0
        assert raw.call("XREADGROUP", "GROUP", "g", "new", "CLAIM", "5000", "STREAMS", "s",
                        ">") == null
        # NOACK does not apply to claimed entries.
        advance(6000)
        raw.call("XREADGROUP", "GROUP", "g", "z", "CLAIM", "5000", "NOACK", "STREAMS", "s", ">")
        assert r.xpending("s", "g")["consumers"] == [{"name": b"z", "pending": 5}]
    finally:
        raw.close()


@pytest.mark.timeout(30)
def test_xreadgroup_claim_block_wakes_when_an_entry_becomes_claimable(
        rr: redis.Redis, sluice: ThreadedServer) -> None:
    """Redis 8.4+: a blocked XREADGROUP ... CLAIM is woken when a pending entry has been idle
    for min-idle-time, not only by writes; an entry acknowledged before then wakes nobody."""
    import hiredis

    rr.xadd("s", {"f": "v"}, id="1-0")
    rr.xgroup_create("s", "g", "0")
    rr.xreadgroup("g", "c1", {"s": ">"})
    raw = RawClient(sluice.port, proto(rr))
    try:
        raw.send("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100", "BLOCK", "0", "STREAMS",
                 "s", ">")
        reader = hiredis.Reader()
        reader.feed(raw.read_reply())  # no write comes: only the idle time can answer
        reply = reader.gets()
        entries = list(reply.values())[0] if isinstance(reply, dict) else reply[0][1]
        assert [e[:2] for e in entries] == [[b"1-0", [b"f", b"v"]]]
        assert entries[0][2] >= 100 and entries[0][3] == 1
        assert rr.xpending("s", "g")["consumers"] == [{"name": b"c2", "pending": 1}]
        # Acknowledged while the reader waits: at its time it re-runs, finds nothing to
        # claim, blocks again, and its own BLOCK timeout ends it.
        rr.xadd("s", {"f": "w"}, id="2-0")
        rr.xreadgroup("g", "c1", {"s": ">"})
        rr.xack("s", "g", "1-0")
        raw.send("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100", "BLOCK", "600", "STREAMS",
                 "s", ">")
        wait_blocked(rr, 1)
        rr.xack("s", "g", "2-0")
        assert raw.read_reply() == (b"_\r\n" if proto(rr) == 3 else b"*-1\r\n")
        assert rr.xpending("s", "g")["pending"] == 0
    finally:
        raw.close()


@pytest.mark.timeout(30)
def test_xreadgroup_block_served_by_xadd(rr: redis.Redis, sluice: ThreadedServer) -> None:
    rr.xgroup_create("s", "g", "$", mkstream=True)
    d = Deferred(sluice.port, proto(rr), "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                 "STREAMS", "s", ">")
    wait_blocked(rr, 1)
    rr.xadd("s", {"k": "v"}, id="5-0")
    got = d.result()
    assert _entries(got, b"s") == [[b"5-0", [b"k", b"v"]]] or \
        _entries(got, b"s") == [(b"5-0", {b"k": b"v"})]
    assert rr.xpending("s", "g")["consumers"] == [{"name": b"c", "pending": 1}]
    wait_blocked(rr, 0)


@pytest.mark.timeout(30)
def test_xreadgroup_block_timeout_and_multi(rr: redis.Redis) -> None:
    rr.xgroup_create("s", "g", "$", mkstream=True)
    assert rr.xreadgroup("g", "c", {"s": ">"}, block=5) in (None, [], {})  # redis-py: null
    p = rr.pipeline(transaction=True)
    p.xreadgroup("g", "c", {"s": ">"}, block=0)
    assert p.execute() in ([None], [[]], [{}])  # MULTI never blocks


@pytest.mark.timeout(30)
@pytest.mark.parametrize("change", ["del", "set", "flushall", "destroy"])
def test_xreadgroup_block_key_or_group_gone(rr: redis.Redis, sluice: ThreadedServer,
                                            change: str) -> None:
    """A blocked XREADGROUP whose key is deleted or changes type, or whose group is destroyed.

    Current Redis (7.2+, src/blocked.c reprocesses ``unblock_on_nokey`` clients) re-runs the
    command, which answers its own NOGROUP (key gone, group gone) or WRONGTYPE (key retyped).
    redis-server 7.0 sent "UNBLOCKED the stream key no longer exists" instead; the newest
    behaviour wins (a documented 7.2 breaking change).
    """
    rr.xadd("s", {"f": "v"}, id="1-0")
    rr.xgroup_create("s", "g", "$")
    d = Deferred(sluice.port, proto(rr), "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                 "STREAMS", "s", ">")
    wait_blocked(rr, 1)
    expected = err(errors.NOGROUP_XREADGROUP, b"s", b"g")
    if change == "del":
        rr.delete("s")
    elif change == "set":
        rr.set("s", "x")
        expected = errors.WRONGTYPE
    elif change == "flushall":
        rr.flushall()
    else:
        rr.xgroup_destroy("s", "g")
    with pytest.raises(redis.ResponseError) as e:
        d.result()
    assert same_error(e.value, expected), str(e.value)
    wait_blocked(rr, 0)


@pytest.mark.timeout(30)
def test_xreadgroup_block_not_woken_by_group_changes(rr: redis.Redis,
                                                     sluice: ThreadedServer) -> None:
    """SETID back to 0 does not serve a blocked reader until the next XADD (as in Redis)."""
    fill(rr, "s", 2)
    rr.xgroup_create("s", "g", "$")
    d = Deferred(sluice.port, proto(rr), "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                 "STREAMS", "s", ">")
    wait_blocked(rr, 1)
    rr.xgroup_setid("s", "g", "0")
    rr.xgroup_createconsumer("s", "g", "other")
    assert rr.info("clients")["blocked_clients"] == 1
    rr.xadd("s", {"f": "3"}, id="3-0")
    assert [e[0] for e in _entries(d.result(), b"s")] == [b"1-0", b"2-0", b"3-0"]


@pytest.mark.timeout(30)
def test_blocked_readers_without_anything_new_are_not_rerun(rr: redis.Redis,
                                                            sluice: ThreadedServer) -> None:
    """One new entry re-runs one blocked reader; the others stay blocked, in order.

    (blocking.py consults ``ready_check``: the readers after the first would only block again,
    as Redis 7.0 also left them.)
    """
    rr.xgroup_create("s", "g", "$", mkstream=True)
    readers = []
    for i in range(5):
        readers.append(Deferred(sluice.port, proto(rr), "XREADGROUP", "GROUP", "g", f"c{i}",
                                "BLOCK", "0", "STREAMS", "s", ">"))
        wait_blocked(rr, i + 1)
    calls = rr.info("commandstats")["cmdstat_xreadgroup"]["calls"]
    for i in range(5):
        rr.xadd("s", {"n": str(i)}, id=f"{i + 1}-0")
        assert [e[0] for e in _entries(readers[i].result(), b"s")] == [b"%d-0" % (i + 1)]
        wait_blocked(rr, 4 - i)
    # Five re-runs for five entries (without the check: 5 + 4 + 3 + 2 + 1).
    assert rr.info("commandstats")["cmdstat_xreadgroup"]["calls"] - calls == 5


@pytest.mark.timeout(30)
def test_client_unblock_xreadgroup(rr: redis.Redis, sluice: ThreadedServer) -> None:
    rr.xgroup_create("s", "g", "$", mkstream=True)
    for expect_error in (False, True):  # TIMEOUT, then ERROR
        d = Deferred(sluice.port, proto(rr), "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                     "STREAMS", "s", ">")
        wait_blocked(rr, 1)
        blocked = [c["id"] for c in rr.client_list() if c["cmd"] == "xreadgroup"]
        assert rr.client_unblock(blocked[0], error=expect_error)
        if expect_error:
            with pytest.raises(redis.ResponseError) as e:
                d.result()
            assert same_error(e.value, errors.UNBLOCKED)
        else:
            assert d.result() in (None, [], {})
        wait_blocked(rr, 0)


# -- XACK / XACKDEL -----------------------------------------------------------------------------


def test_xack(rr: redis.Redis) -> None:
    fill(rr, "s", 3)
    assert rr.xack("nokey", "g", "1-0") == 0
    rr.xgroup_create("s", "g", "0")
    assert rr.xack("s", "nog", "1-0") == 0
    rr.xreadgroup("g", "c", {"s": ">"})
    raises(lambda: rr.xack("s", "g", "1-0", "bad"),
           "ERR Invalid stream ID specified as stream command argument")
    assert rr.xpending("s", "g")["pending"] == 3  # all or nothing
    assert rr.xack("s", "g", "1-0", "1-0", "2", "9-0") == 2
    assert rr.xpending("s", "g")["pending"] == 1


def test_xackdel_policies(rr: redis.Redis) -> None:
    """XACKDEL (Redis 8.2; not in 7.0): checked against the redis.io page."""
    x = rr.execute_command
    fill(rr, "s", 4)
    rr.xgroup_create("s", "g1", "0")
    rr.xgroup_create("s", "g2", "0")
    rr.xreadgroup("g1", "c", {"s": ">"})
    rr.xreadgroup("g2", "c", {"s": ">"}, count=2)
    assert x("XACKDEL", "nokey", "g1", "IDS", "2", "1-0", "2-0") == [-1, -1]
    # ACKED: 1-0 is still pending in g2, so it stays (2); 9-0 does not exist (-1).
    assert x("XACKDEL", "s", "g1", "ACKED", "IDS", "2", "1-0", "9-0") == [2, -1]
    assert rr.xlen("s") == 4
    assert rr.xpending("s", "g1")["pending"] == 3
    # KEEPREF (default): deleted, g2 keeps its reference.
    assert x("XACKDEL", "s", "g1", "IDS", "1", "2-0") == [1]
    assert rr.xlen("s") == 3
    assert rr.xpending("s", "g2")["pending"] == 2
    # DELREF: the reference in g2 goes too.
    assert x("XACKDEL", "s", "g2", "DELREF", "IDS", "1", "1-0") == [1]
    assert rr.xpending("s", "g2")["pending"] == 1  # only the dangling 2-0 is left
    assert rr.xpending("s", "g1")["pending"] == 2  # 3-0 and 4-0
    # No such group: -1 per ID, not an error (redis-server 8.6.3).
    assert x("XACKDEL", "s", "nog", "IDS", "2", "3-0", "bad") == [-1, -1]
    raises(lambda: x("XACKDEL", "s", "g1", "IDS", "0", "3-0"), errors.NUMIDS_NOT_POSITIVE)
    raises(lambda: x("XACKDEL", "s", "g1", "IDS", "3", "3-0"), errors.NUMIDS_MISMATCH)
    raises(lambda: x("XACKDEL", "s", "g1", "IDS", "1", "3-0", "4-0"), errors.SYNTAX)
    raises(lambda: x("XACKDEL", "s", "g1", "KEEPREF", "DELREF", "IDS", "1", "3-0"),
           errors.SYNTAX)
    raises(lambda: x("XACKDEL", "s", "g1", "KEEPREF", "ACKED", "DELREF"), errors.SYNTAX)
    raises(lambda: x("XACKDEL", "s", "g1", "KEEPREF", "x", "y"), errors.SYNTAX)


# -- XPENDING -----------------------------------------------------------------------------------


def test_xpending_forms(vclock: tuple[redis.Redis, Any]) -> None:
    r, advance = vclock
    port = r.connection_pool.connection_kwargs["port"]
    fill(r, "s", 4)
    r.xgroup_create("s", "g", "0")
    raw = RawClient(port, proto(r))
    try:
        null = b"_\r\n" if proto(r) == 3 else b"*-1\r\n"
        nil = b"_\r\n" if proto(r) == 3 else b"$-1\r\n"
        assert raw.call("XPENDING", "s", "g") == b"*4\r\n:0\r\n" + nil + nil + null
        r.xreadgroup("g", "alice", {"s": ">"}, count=3)
        advance(2000)
        r.xreadgroup("g", "bob", {"s": ">"})
        # Per-consumer counts are bulk strings.
        assert raw.call("XPENDING", "s", "g") == (
            b"*4\r\n:4\r\n$3\r\n1-0\r\n$3\r\n4-0\r\n*2\r\n*2\r\n$5\r\nalice\r\n$1\r\n3\r\n"
            b"*2\r\n$3\r\nbob\r\n$1\r\n1\r\n")
        assert raw.call("XPENDING", "s", "g", "-", "+", "-1") == b"*0\r\n"
        assert raw.call("XPENDING", "s", "g", "IDLE", "1000", "-", "+", "10") == (
            b"*3\r\n*4\r\n$3\r\n1-0\r\n$5\r\nalice\r\n:2000\r\n:1\r\n"
            b"*4\r\n$3\r\n2-0\r\n$5\r\nalice\r\n:2000\r\n:1\r\n"
            b"*4\r\n$3\r\n3-0\r\n$5\r\nalice\r\n:2000\r\n:1\r\n")
        assert raw.call("XPENDING", "s", "g", "(1-0", "+", "10", "bob") == (
            b"*1\r\n*4\r\n$3\r\n4-0\r\n$3\r\nbob\r\n:0\r\n:1\r\n")
        assert raw.call("XPENDING", "s", "g", "-", "+", "10", "nobody") == b"*0\r\n"
        assert raw.call("XPENDING", "s", "g", "-", "(2-0", "10") == (
            b"*1\r\n*4\r\n$3\r\n1-0\r\n$5\r\nalice\r\n:2000\r\n:1\r\n")
        assert raw.call("XPENDING", "s", "g", "-", "+") == b"-ERR syntax error\r\n"
        assert raw.call("XPENDING", "s", "g", "IDLE", "1", "-", "+") == b"-ERR syntax error\r\n"
        assert raw.call("XPENDING", "s", "nog", "x", "+", "1") == (
            b"-ERR Invalid stream ID specified as stream command argument\r\n")
        assert raw.call("XPENDING", "s", "g", "(18446744073709551615-18446744073709551615",
                        "+", "1") == b"-ERR invalid start ID for the interval\r\n"
        assert raw.call("XPENDING", "s", "nog") == (
            b"-NOGROUP No such key 's' or consumer group 'nog'\r\n")
    finally:
        raw.close()


# -- XCLAIM / XAUTOCLAIM ------------------------------------------------------------------------


def test_xclaim_options(vclock: tuple[redis.Redis, Any]) -> None:
    r, advance = vclock
    x = r.execute_command
    fill(r, "s", 5)
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "alice", {"s": ">"}, count=4)
    advance(10_000)
    raises(lambda: x("XCLAIM", "s", "nog", "bob", "0", "1-0"),
           errors.NOGROUP_KEY_OR_GROUP, b"s", b"nog")
    raises(lambda: x("XCLAIM", "s", "g", "bob", "x", "1-0"), errors.XCLAIM_MIN_IDLE)
    raises(lambda: x("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE", "x"), errors.XCLAIM_IDLE)
    raises(lambda: x("XCLAIM", "s", "g", "bob", "0", "1-0", "TIME", "x"), errors.XCLAIM_TIME)
    raises(lambda: x("XCLAIM", "s", "g", "bob", "0", "1-0", "RETRYCOUNT", "x"),
           errors.XCLAIM_RETRYCOUNT)
    raises(lambda: x("XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID", "2-0"),
           errors.XCLAIM_UNKNOWN_OPTION, b"2-0")
    raises(lambda: x("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE"),
           errors.XCLAIM_UNKNOWN_OPTION, b"IDLE")
    assert r.xpending("s", "g")["consumers"] == [{"name": b"alice", "pending": 4}]
    # Too recent for min-idle 20000: nothing.
    assert r.xclaim("s", "g", "bob", 20_000, ["1-0"]) == []
    # IDLE sets the new idle time; JUSTID leaves the counter alone.
    assert r.xclaim("s", "g", "bob", 5_000, ["1-0", "2-0"], idle=3_000, justid=True) == [
        b"1-0", b"2-0"]
    rows = r.xpending_range("s", "g", "-", "+", 9)
    assert [(p["message_id"], p["consumer"], p["time_since_delivered"], p["times_delivered"])
            for p in rows][:2] == [(b"1-0", b"bob", 3000, 1), (b"2-0", b"bob", 3000, 1)]
    # TIME (absolute) and RETRYCOUNT; a future TIME means now.
    assert r.xclaim("s", "g", "carol", 0, ["3-0"], time=T0 + 10_000 - 700, retrycount=7)
    assert r.xclaim("s", "g", "carol", 0, ["4-0"], time=T0 + 99_999_999)
    rows = {p["message_id"]: p for p in r.xpending_range("s", "g", "-", "+", 9)}
    assert (rows[b"3-0"]["time_since_delivered"], rows[b"3-0"]["times_delivered"]) == (700, 7)
    assert (rows[b"4-0"]["time_since_delivered"], rows[b"4-0"]["times_delivered"]) == (0, 2)
    # FORCE creates a PEL entry for an existing, unpending entry; never for a missing one.
    assert r.xclaim("s", "g", "dave", 0, ["5-0", "9-0"], force=True, justid=True) == [b"5-0"]
    # LASTID moves the group forward only.
    assert plain(r, "XCLAIM", "s", "g", "dave", "0", "5-0", "LASTID", "5-0", "JUSTID") == [
        b"5-0"]
    assert r.xinfo_groups("s")[0]["last-delivered-id"] == b"5-0"
    plain(r, "XCLAIM", "s", "g", "dave", "0", "5-0", "LASTID", "1-0", "JUSTID")
    assert r.xinfo_groups("s")[0]["last-delivered-id"] == b"5-0"
    # A deleted entry is dropped from the PEL and left out of the reply.
    r.xdel("s", "3-0")
    assert r.xclaim("s", "g", "erin", 0, ["3-0", "4-0"], justid=True) == [b"4-0"]
    assert b"3-0" not in [p["message_id"] for p in r.xpending_range("s", "g", "-", "+", 9)]
    # The claimer exists even when it claimed nothing (7.2+).
    r.xclaim("s", "g", "frank", 0, ["9-9"])
    assert b"frank" in [c["name"] for c in r.xinfo_consumers("s", "g")]


def test_xautoclaim(vclock: tuple[redis.Redis, Any]) -> None:
    r, advance = vclock
    x = r.execute_command
    fill(r, "s", 30)
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "alice", {"s": ">"})
    raises(lambda: x("XAUTOCLAIM", "s", "g", "bob", "x", "0"), errors.XAUTOCLAIM_MIN_IDLE)
    raises(lambda: x("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "0"),
           errors.XAUTOCLAIM_COUNT)
    raises(lambda: x("XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", str(2**62)),
           errors.XAUTOCLAIM_COUNT)
    raises(lambda: x("XAUTOCLAIM", "s", "g", "bob", "0", "0", "BOGUS"), errors.SYNTAX)
    raises(lambda: x("XAUTOCLAIM", "s", "nog", "bob", "0", "0"),
           errors.NOGROUP_KEY_OR_GROUP, b"s", b"nog")
    # Nothing idle enough: nothing claimed, but the consumer exists (7.2+).
    assert plain(r, "XAUTOCLAIM", "s", "g", "bob", "1000", "0-0", "COUNT", "5") == [
        b"0-0", [], []]
    assert b"bob" in [c["name"] for c in r.xinfo_consumers("s", "g")]
    advance(2000)
    # COUNT bounds the claims; the cursor continues the scan.
    got = plain(r, "XAUTOCLAIM", "s", "g", "bob", "1000", "0-0", "COUNT", "2", "JUSTID")
    assert got == [b"3-0", [b"1-0", b"2-0"], []]
    # Deleted entries: dropped, listed third, and they count against COUNT.
    r.xdel("s", "3-0", "4-0")
    got = plain(r, "XAUTOCLAIM", "s", "g", "bob", "1000", "3-0", "COUNT", "3", "JUSTID")
    assert got == [b"6-0", [b"5-0"], [b"3-0", b"4-0"]]
    # Entries too recent are scanned but not claimed (1-0, 2-0, 5-0 are bob's and fresh).
    got = plain(r, "XAUTOCLAIM", "s", "g", "carol", "1000", "0-0", "COUNT", "1", "JUSTID")
    assert got == [b"7-0", [b"6-0"], []]
    # At most COUNT*10 PEL entries are scanned: 1, 2, 5 .. 12 here, none idle enough.
    got = plain(r, "XAUTOCLAIM", "s", "g", "dave", "100000", "0-0", "COUNT", "1")
    assert got == [b"13-0", [], []]
    got = plain(r, "XAUTOCLAIM", "s", "g", "dave", "0", "(29-0", "COUNT", "100")
    assert got == [b"0-0", [[b"30-0", [b"f", b"30"]]], []]
    # redis-py's own reshaping of the reply works too.
    assert r.xautoclaim("s", "g", "dave", 0, "30-0") == [b"0-0", [(b"30-0", {b"f": b"30"})],
                                                         []]


# -- XINFO GROUPS / CONSUMERS -------------------------------------------------------------------


def test_xinfo_groups_and_consumers(vclock: tuple[redis.Redis, Any]) -> None:
    r, advance = vclock
    fill(r, "s", 5)
    r.xgroup_create("s", "g", "0")
    r.xgroup_create("s", "a", "$")
    r.xreadgroup("g", "bob", {"s": ">"}, count=2)
    r.xgroup_createconsumer("s", "g", "alice")
    advance(300)
    r.xreadgroup("g", "bob", {"s": ">"})
    advance(200)
    r.xreadgroup("g", "bob", {"s": ">"})  # nothing new: seen, not active
    groups = r.xinfo_groups("s")
    assert [g["name"] for g in groups] == [b"a", b"g"]  # name order, as Redis's rax
    g = groups[1]
    assert (g["consumers"], g["pending"], g["last-delivered-id"], g["entries-read"], g["lag"]) \
        == (2, 5, b"5-0", 5, 0)
    assert (groups[0]["entries-read"], groups[0]["lag"]) == (None, 0)
    consumers = r.xinfo_consumers("s", "g")
    assert consumers == [
        {"name": b"alice", "pending": 0, "idle": 500, "inactive": -1},
        {"name": b"bob", "pending": 5, "idle": 0, "inactive": 200},
    ]
    raises(lambda: r.xinfo_groups("nokey"), errors.NO_SUCH_KEY)
    raises(lambda: r.xinfo_consumers("s", "nog"), errors.NOGROUP_XGROUP, b"nog", b"s")
    # Lag is unknown (null) when a deletion sits past the group's position.
    r.xgroup_create("s", "h", "1-0")
    r.xdel("s", "3-0")
    lag = {x["name"]: (x["entries-read"], x["lag"]) for x in r.xinfo_groups("s")}
    assert lag[b"h"] == (None, None)


# -- WATCH and the AOF --------------------------------------------------------------------------


def test_group_changes_do_not_touch_watch(rr: redis.Redis, sluice: ThreadedServer) -> None:
    """As Redis by design: consumer-group metadata is not a key modification for WATCH."""
    fill(rr, "s", 2)
    rr.xgroup_create("s", "g", "0")
    other = redis.Redis(port=sluice.port, protocol=proto(rr))
    try:
        for change in (lambda: other.xreadgroup("g", "c", {"s": ">"}, count=1),
                       lambda: other.xack("s", "g", "1-0"),
                       lambda: other.xgroup_setid("s", "g", "0"),
                       lambda: other.xclaim("s", "g", "d", 0, ["2-0"])):
            with rr.pipeline() as p:
                p.watch("s")
                change()
                p.multi()
                p.ping()
                assert p.execute() == [True]
        with rr.pipeline() as p:  # a new stream via MKSTREAM is a key modification
            p.watch("t")
            other.xgroup_create("t", "g", "$", mkstream=True)
            p.multi()
            p.ping()
            with pytest.raises(redis.WatchError):
                p.execute()
    finally:
        other.close()


def _state(r: redis.Redis) -> Any:
    """What consumer groups keep and Redis propagates, seen through commands (virtual time).

    Consumers' seen/active times are not propagated by Redis either (a replica's differ).
    """
    out = []
    for g in r.xinfo_groups("s"):
        name = g["name"]
        consumers = [(c["name"], c["pending"]) for c in r.xinfo_consumers("s", name)]
        out.append((g, consumers, r.xpending_range("s", name, "-", "+", 1000)))
    return out


def test_aof_records_effects_and_replays(make_server: Callable[..., ThreadedServer]) -> None:
    """XREADGROUP / XCLAIM / XAUTOCLAIM log XCLAIM ... FORCE JUSTID and XGROUP SETID records
    (``streamPropagateXCLAIM`` / ``streamPropagateGroupID``); replaying the log on a fresh
    server gives the same groups, PELs and counters."""
    clock = FakeClock(T0)
    srv = make_server(clock=clock)
    rec = RecordingAof()
    srv.call(lambda: setattr(srv.server, "aof", rec))
    r = srv.client()
    fill(r, "s", 6)
    r.xgroup_create("s", "g", "0")
    r.xgroup_create("s", "n", "0")
    r.xreadgroup("g", "alice", {"s": ">"}, count=3)
    r.xreadgroup("n", "quiet", {"s": ">"}, count=2, noack=True)
    srv.call(lambda: clock.advance(5000))
    # (History reads are left out: they bump counters, and Redis does not propagate them.)
    r.xclaim("s", "g", "bob", 1000, ["1-0"], retrycount=4)
    r.xdel("s", "2-0")
    r.xautoclaim("s", "g", "carol", 1000, "0-0")
    r.execute_command("XCLAIM", "s", "g", "dave", "0", "9-0", "LASTID", "4-0")
    r.xreadgroup("g", "erin", {"s": ">"})
    r.xack("s", "g", "4-0")
    logged = [a[:2] for a in rec.logged]
    assert [b"XREADGROUP"] not in [a[:1] for a in rec.logged]
    assert [b"XAUTOCLAIM"] not in [a[:1] for a in rec.logged]
    assert [b"XCLAIM", b"s"] in logged and [b"XGROUP", b"SETID"] in logged
    first = rec.logged[[a[0] for a in rec.logged].index(b"XCLAIM")]
    assert first == [b"XCLAIM", b"s", b"g", b"alice", b"0", b"1-0", b"TIME", b"%d" % T0,
                     b"RETRYCOUNT", b"1", b"FORCE", b"JUSTID", b"LASTID", b"1-0"]
    # NOACK: the consumer and the group position, no PEL records.
    assert [b"XGROUP", b"CREATECONSUMER", b"s", b"n", b"quiet"] in rec.logged
    assert [b"XGROUP", b"SETID", b"s", b"n", b"2-0", b"ENTRIESREAD", b"2"] in rec.logged
    before = _state(r)
    # Replay on a fresh server whose clock shows the same time.
    clock2 = FakeClock(clock.ms)
    srv2 = make_server(clock=clock2)
    r2 = srv2.client()
    for argv in rec.logged:
        r2.execute_command(*argv)
    assert _state(r2) == before
    r.close()
    r2.close()


def test_real_aof_restart_keeps_groups(make_server: Callable[..., ThreadedServer],
                                       tmp_path: Any) -> None:
    """appendonly yes, restart, same groups, consumers, PELs and counters (virtual clock)."""
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    clock = FakeClock(T0)
    srv = make_server(*lines, clock=clock)
    r = srv.client()
    fill(r, "s", 8)
    r.xgroup_create("s", "g", "0")
    r.xgroup_create("s", "n", "$")
    r.xreadgroup("g", "alice", {"s": ">"}, count=4)
    r.xreadgroup("g", "quiet", {"s": ">"}, count=2, noack=True)
    srv.call(lambda: clock.advance(3000))
    r.xclaim("s", "g", "bob", 1000, ["1-0", "2-0"], retrycount=5)
    r.xdel("s", "3-0")
    r.xautoclaim("s", "g", "carol", 1000, "0-0")
    r.xack("s", "g", "2-0")
    r.xgroup_createconsumer("s", "n", "idle")
    r.execute_command("XCLAIM", "s", "g", "dave", "0", "99-0", "LASTID", "7-0")
    before = _state(r)
    r.close()
    srv.stop()
    srv2 = make_server(*lines, clock=FakeClock(clock.ms))
    r2 = srv2.client()
    assert _state(r2) == before
    r2.close()
