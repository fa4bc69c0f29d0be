"""Stream commands without consumer-group reads, over a real socket, RESP2 and RESP3.

XADD (IDs, options, trimming, IDMP), XRANGE / XREVRANGE, XLEN, XDEL, XDELEX, XTRIM, XSETID,
XCFGSET, XINFO STREAM / HELP, non-blocking XREAD, streams as keys (TYPE, DEL, EXPIRE, RENAME,
COPY, SCAN TYPE, OBJECT ENCODING, MULTI/EXEC) and what the AOF is fed. Behaviour added after
7.0 is asserted as the newest Redis documents it (or as its test suite checks it); the tests
say so where that differs from the installed 7.0.15.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis

from sluice.commands import errors as E
from sluice.storage.stream import Stream
from sluice.storage.streamid import parse_strict_id
from tests.support import RecordingAof, ThreadedServer


def err(text: str) -> str:
    """The message redis-py shows for an error text (it strips the ERR code)."""
    import re

    return re.escape(text.removeprefix("ERR "))


def cmd(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def raw(r: redis.Redis, *args: Any) -> Any:
    """A command's reply without redis-py's per-command parsing (XREAD's, for one)."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def as_dict(reply: Any) -> dict[bytes, Any]:
    """A RESP2 flat list or a RESP3 map as a dict."""
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[::2], reply[1::2], strict=True))


def xinfo(r: redis.Redis, key: str, *extra: Any) -> dict[bytes, Any]:
    return as_dict(cmd(r, "XINFO", "STREAM", key, *extra))


def ids(entries: list[Any]) -> list[bytes]:
    return [e[0] for e in entries]


def stream_of(sluice: ThreadedServer, key: bytes) -> Stream:
    """The Stream object itself (inspected or prepared on the server's own thread)."""
    assert sluice.server is not None
    return sluice.call(lambda: sluice.server.keyspace[0].get(key))  # type: ignore[union-attr]


def add_group(sluice: ThreadedServer, key: bytes, name: bytes, last: int = 0,
              deliver: dict[bytes, int] | None = None) -> None:
    """Create a group and deliver entries to consumers through the storage API.

    (The consumer-group commands are another module's; these tests only need groups to exist
    and hold PELs.)
    """
    def prepare() -> None:
        s = sluice.server.keyspace[0].get(key)  # type: ignore[union-attr]
        g = s.create_group(name, last)
        for consumer, n in (deliver or {}).items():
            c, _ = g.get_or_create_consumer(consumer, 1000)
            g.deliver_new(c, n, 1000, False)

    sluice.call(prepare)


# -- XADD -------------------------------------------------------------------------------------


def test_xadd_auto_ids_increase(rr: redis.Redis) -> None:
    a = rr.xadd("s", {"f": "1"})
    b = rr.xadd("s", {"f": "2"})
    c = cmd(rr, "XADD", "s", "*", "f", "3")
    assert parse_strict_id(a) < parse_strict_id(b) < parse_strict_id(c)
    assert rr.xlen("s") == 3
    assert [e[1] for e in rr.xrange("s")] == [{b"f": b"1"}, {b"f": b"2"}, {b"f": b"3"}]


def test_xadd_partial_and_explicit_ids(rr: redis.Redis) -> None:
    assert cmd(rr, "XADD", "s", "123-456", "a", "1") == b"123-456"
    assert cmd(rr, "XADD", "s", "123-*", "a", "2") == b"123-457"
    assert cmd(rr, "XADD", "s", "789-*", "a", "3") == b"789-0"
    assert cmd(rr, "XADD", "s", "790", "a", "4") == b"790-0"
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        cmd(rr, "XADD", "s", "42-*", "a", "5")
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        cmd(rr, "XADD", "s", "790-0", "a", "5")
    assert cmd(rr, "XADD", "z", "0-*", "a", "b") == b"0-1"
    cmd(rr, "XADD", "m", "1-18446744073709551615", "a", "b")
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        cmd(rr, "XADD", "m", "1-*", "c", "d")
    # Both halves may be up to 2**64-1 (redis-py's own suite relies on it).
    assert cmd(rr, "XADD", "big", "9999999999999999999-*", "a", "b") == b"9999999999999999999-0"


def test_xadd_exhausted_and_zero_id(rr: redis.Redis) -> None:
    top = "18446744073709551615-18446744073709551615"
    assert cmd(rr, "XADD", "s", top, "a", "b") == top.encode()
    for arg in ("*", "18446744073709551615-*"):
        with pytest.raises(redis.ResponseError, match="exhausted the last possible ID"):
            cmd(rr, "XADD", "s", arg, "a", "b")
    # 0-0 is refused before the key is looked up: no key, no WRONGTYPE.
    rr.set("str", "v")
    with pytest.raises(redis.ResponseError, match="must be greater than 0-0"):
        cmd(rr, "XADD", "str", "0-0", "a", "b")
    with pytest.raises(redis.ResponseError, match="must be greater than 0-0"):
        cmd(rr, "XADD", "nokey", "MAXLEN", "1", "0-0", "a", "b")
    assert rr.exists("nokey") == 0


@pytest.mark.parametrize(("args", "message"), [
    (["MAXLEN", "1", "*", "a"], "wrong number of arguments for 'xadd' command"),
    (["*", "a", "b", "c"], "wrong number of arguments for 'xadd' command"),
    (["MAXLEN", "x", "*", "a", "b"], err(E.NOT_INTEGER)),
    (["MAXLEN", "-1", "*", "a", "b"], err(E.STREAM_MAXLEN_NEGATIVE)),
    (["MAXLEN", "1", "MINID", "0", "*", "a", "b"], err(E.STREAM_MAXLEN_AND_MINID)),
    (["MAXLEN", "1", "LIMIT", "10", "*", "a", "b"], err(E.STREAM_LIMIT_WITHOUT_APPROX)),
    (["LIMIT", "10", "*", "a", "b"], err(E.STREAM_LIMIT_WITHOUT_STRATEGY)),
    (["LIMIT", "0", "*", "a", "b"], err(E.STREAM_LIMIT_WITHOUT_APPROX)),  # 0 is "not given"
    (["LIMIT", "-1", "*", "a", "b"], err(E.STREAM_LIMIT_NEGATIVE)),
    (["MINID", "x", "*", "a", "b"], err(E.STREAM_INVALID_ID)),
    (["MINID", "+", "*", "a", "b"], err(E.STREAM_INVALID_ID)),
    (["foo", "a", "b"], err(E.STREAM_INVALID_ID)),
    # Redis 8.6 IDMP / IDMPAUTO checks (texts from Redis's test suite)
    (["IDMP", "p1", "*", "f", "v"], err(E.STREAM_INVALID_ID)),  # "*" was the iid, "f" the ID
    (["IDMP", "p1", "i1", "1-1", "f", "v"], err(E.IDMP_EXPLICIT_ID)),
    (["IDMP", "p1", "i1", "5-*", "f", "v"], err(E.IDMP_EXPLICIT_ID)),
    (["IDMPAUTO", "p1", "1-1", "f", "v"], err(E.IDMP_EXPLICIT_ID)),
    (["IDMP", "p1", "i1", "IDMP", "p2", "i2", "*", "f", "v"], err(E.IDMP_TWICE)),
    (["IDMPAUTO", "p1", "IDMP", "p2", "i2", "*", "f", "v"], err(E.IDMP_TWICE)),
    (["IDMP", "p1", "i1", "IDMPAUTO", "p2", "*", "f", "v"], err(E.IDMP_TWICE)),
    (["IDMP", "", "i1", "*", "f", "v"], err(E.IDMP_EMPTY_PID)),
    (["IDMP", "p1", "", "*", "f", "v"], err(E.IDMP_EMPTY_IID)),
    (["IDMPAUTO", "", "*", "f", "v"], err(E.IDMPAUTO_EMPTY_PID)),
])
def test_xadd_argument_errors(rr: redis.Redis, args: list[str], message: str) -> None:
    with pytest.raises(redis.ResponseError, match=message):
        cmd(rr, "XADD", "s", *args)
    assert rr.exists("s") == 0


def test_xadd_wrongtype(rr: redis.Redis) -> None:
    rr.set("str", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        cmd(rr, "XADD", "str", "*", "a", "b")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        cmd(rr, "XADD", "str", "MAXLEN", "1", "*", "a", "b")


def test_xadd_nomkstream(rr: redis.Redis) -> None:
    assert cmd(rr, "XADD", "s", "NOMKSTREAM", "*", "a", "b") is None
    assert rr.exists("s") == 0
    cmd(rr, "XADD", "s", "*", "item", "1")
    assert cmd(rr, "XADD", "s", "NOMKSTREAM", "*", "item", "2") is not None
    assert rr.xlen("s") == 2


def test_xadd_maxlen_and_minid(rr: redis.Redis) -> None:
    for j in range(100):
        cmd(rr, "XADD", "s", "MAXLEN", "5", "*", "x", str(j))
    assert [e[1][b"x"] for e in rr.xrange("s")] == [b"95", b"96", b"97", b"98", b"99"]
    for j in range(100):
        cmd(rr, "XADD", "e", "MAXLEN", "=", "5", "*", "x", str(j))
    assert rr.xlen("e") == 5
    for j in range(1, 101):
        cmd(rr, "XADD", "m", "MINID", str(max(j - 5, 0)), str(j), "x", str(j))
    assert ids(rr.xrange("m")) == [b"%d-0" % j for j in range(95, 101)]


def test_xadd_approx_maxlen_drops_whole_nodes(rr: redis.Redis) -> None:
    # The default stream-node-max-entries is 100: "~ 555" keeps 600 (whole nodes only).
    for j in range(1000):
        cmd(rr, "XADD", "s", "MAXLEN", "~", "555", "*", "x", str(j))
    assert rr.xlen("s") == 600


def test_xadd_creates_an_empty_stream(rr: redis.Redis) -> None:
    cmd(rr, "XADD", "s", "MAXLEN", "0", "*", "a", "b")
    assert rr.exists("s") == 1 and rr.type("s") == b"stream"
    info = xinfo(rr, "s")
    assert info[b"length"] == 0 and info[b"entries-added"] == 1
    assert info[b"first-entry"] is None and info[b"last-entry"] is None


def test_limit_with_small_nodes(make_server: Any) -> None:
    """Redis's "XADD with LIMIT consecutive calls" and the XTRIM LIMIT cases."""
    srv = make_server("stream-node-max-entries 10")
    r = srv.client()
    for _ in range(100):
        r.xadd("s", {"x": "v"})
    cmd(r, "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "x", "v")
    assert r.xlen("s") == 71
    cmd(r, "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "x", "v")
    assert r.xlen("s") == 62
    srv1 = make_server("stream-node-max-entries 1")
    r1 = srv1.client()
    for key in ("a", "b"):
        for _ in range(102):
            r1.xadd(key, {"x": "v"})
    assert cmd(r1, "XTRIM", "a", "MAXLEN", "~", "1") == 100  # the default LIMIT: 100 nodes
    assert r1.xlen("a") == 2
    assert cmd(r1, "XTRIM", "b", "MAXLEN", "1") == 101  # exact trims are never limited
    srv2 = make_server("stream-node-max-entries 2")
    r2 = srv2.client()
    for _ in range(3):
        r2.xadd("s", {"x": "v"})
    assert cmd(r2, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "1") == 0
    assert cmd(r2, "XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "2") == 2


# -- IDMP / XCFGSET (Redis 8.6, asserted as its docs and test suite describe it) ----------------


def test_idmp_returns_the_original_entry(rr: redis.Redis) -> None:
    a = cmd(rr, "XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "100")
    b = cmd(rr, "XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "200")
    assert a == b and rr.xlen("s") == 1
    assert rr.xrange("s")[0][1] == {b"amount": b"100"}
    c = cmd(rr, "XADD", "s", "IDMP", "p2", "payment-abc", "*", "amount", "300")  # another producer
    assert c != a and rr.xlen("s") == 2
    # Options in any order, binary-safe iids.
    d = cmd(rr, "XADD", "s", "MAXLEN", "~", "100", "KEEPREF", "IDMP", "p1", b"\x00\xff", "*", "f", "v")
    assert cmd(rr, "XADD", "s", "IDMP", "p1", b"\x00\xff", "MAXLEN", "~", "100", "*", "f", "w") == d
    info = xinfo(rr, "s")
    assert (info[b"pids-tracked"], info[b"iids-tracked"]) == (2, 3)
    assert (info[b"iids-added"], info[b"iids-duplicates"]) == (3, 2)


def test_idmpauto_hashes_fields_regardless_of_order(rr: redis.Redis) -> None:
    a = cmd(rr, "XADD", "s", "IDMPAUTO", "p1", "*", "f1", "a", "f2", "b")
    assert cmd(rr, "XADD", "s", "IDMPAUTO", "p1", "*", "f2", "b", "f1", "a") == a
    assert cmd(rr, "XADD", "s", "IDMPAUTO", "p1", "*", "f1", "a", "f2", "x") != a
    assert cmd(rr, "XADD", "s", "IDMPAUTO", "p1", "*", "f3", "a", "f2", "b") != a
    assert cmd(rr, "XADD", "s", "IDMPAUTO", "p2", "*", "f1", "a", "f2", "b") != a
    assert rr.xlen("s") == 4
    assert cmd(rr, "XADD", "n", "NOMKSTREAM", "IDMPAUTO", "p1", "*", "f", "v") is None


def test_xcfgset_and_history(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="no such key"):
        cmd(rr, "XCFGSET", "s", "IDMP-DURATION", "5")
    a = cmd(rr, "XADD", "s", "IDMP", "p1", "init", "*", "f", "v")
    info = xinfo(rr, "s")
    assert (info[b"idmp-duration"], info[b"idmp-maxsize"]) == (100, 100)
    assert cmd(rr, "XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100") in (b"OK", "OK")
    assert cmd(rr, "XADD", "s", "IDMP", "p1", "init", "*", "f", "w") == a  # same values: kept
    cmd(rr, "XCFGSET", "s", "IDMP-MAXSIZE", "3")  # a change clears every history
    info = xinfo(rr, "s")
    assert (info[b"idmp-maxsize"], info[b"pids-tracked"], info[b"iids-tracked"]) == (3, 0, 0)
    assert info[b"iids-added"] == 1 and info[b"iids-duplicates"] == 1  # lifetime counters
    assert cmd(rr, "XADD", "s", "IDMP", "p1", "init", "*", "f", "w") != a
    got = [cmd(rr, "XADD", "s", "IDMP", "p1", f"r{i}", "*", "f", "v") for i in range(4)]
    assert cmd(rr, "XADD", "s", "IDMP", "p1", "r3", "*", "f", "v") == got[3]
    assert cmd(rr, "XADD", "s", "IDMP", "p1", "r0", "*", "f", "v") != got[0]  # evicted
    assert xinfo(rr, "s")[b"iids-tracked"] == 3


@pytest.mark.parametrize(("args", "message"), [
    ([], err(E.XCFGSET_NO_PARAMETER)),
    (["IDMP-DURATION"], err(E.SYNTAX)),
    (["INVALID"], err(E.SYNTAX)),
    (["IDMP-DURATION", "A"], err(E.NOT_INTEGER)),
    (["IDMP-DURATION", "000000000"], err(E.NOT_INTEGER)),
    (["IDMP-DURATION", "INVALID", "IDMP-MAXSIZE"], err(E.NOT_INTEGER)),
    (["IDMP-DURATION", "0"], err(E.IDMP_DURATION_RANGE)),
    (["IDMP-DURATION", "86401"], err(E.IDMP_DURATION_RANGE)),
    (["IDMP-MAXSIZE", "-50"], err(E.IDMP_MAXSIZE_RANGE)),
    (["IDMP-MAXSIZE", "10001"], err(E.IDMP_MAXSIZE_RANGE)),
])
def test_xcfgset_errors(rr: redis.Redis, args: list[str], message: str) -> None:
    rr.xadd("s", {"f": "v"})
    with pytest.raises(redis.ResponseError, match=message):
        cmd(rr, "XCFGSET", "s", *args)
    assert xinfo(rr, "s")[b"idmp-duration"] == 100


def test_idmp_expires_after_duration(make_server: Any) -> None:
    from sluice.storage.keyspace import FakeClock

    clock = FakeClock()
    srv = make_server(clock=clock)
    r = srv.client()
    a = cmd(r, "XADD", "s", "IDMP", "p", "x", "*", "f", "v")
    cmd(r, "XCFGSET", "s", "IDMP-DURATION", "1")
    a = cmd(r, "XADD", "s", "IDMP", "p", "x", "*", "f", "v")
    srv.call(lambda: clock.advance(999))
    assert cmd(r, "XADD", "s", "IDMP", "p", "x", "*", "f", "v") == a
    srv.call(lambda: clock.advance(2))
    assert cmd(r, "XADD", "s", "IDMP", "p", "x", "*", "f", "v") != a


# -- XRANGE / XREVRANGE / XLEN ------------------------------------------------------------------


def test_xrange_bounds_and_count(rr: redis.Redis) -> None:
    for i in ("0-1", "0-18446744073709551615", "1-0", "42-0", "42-42",
              "18446744073709551615-18446744073709551614",
              "18446744073709551615-18446744073709551615"):
        cmd(rr, "XADD", "v", i, "foo", "bar")
    assert len(rr.xrange("v")) == 7
    assert len(rr.xrange("v", "(0-1", "+")) == 6
    assert len(rr.xrange("v", "-", "(18446744073709551615-18446744073709551615")) == 6
    assert ids(rr.xrange("v", "(0-1", "(1-0")) == [b"0-18446744073709551615"]
    assert ids(rr.xrange("v", "(1-0", "(42-42")) == [b"42-0"]
    assert ids(rr.xrange("v", "42", "42")) == [b"42-0", b"42-42"]  # incomplete IDs
    assert ids(rr.xrevrange("v", "42", "1")) == [b"42-42", b"42-0", b"1-0"]
    assert ids(rr.xrange("v", count=2)) == [b"0-1", b"0-18446744073709551615"]
    assert ids(rr.xrevrange("v", count=1)) == [b"18446744073709551615-18446744073709551615"]
    assert rr.xrange("v", "50", "40") == []
    for bad in (["(-", "+"], ["-", "(+"], ["(", "+"]):
        with pytest.raises(redis.ResponseError, match=err(E.STREAM_INVALID_ID)):
            cmd(rr, "XRANGE", "v", *bad)
    with pytest.raises(redis.ResponseError, match="invalid start ID for the interval"):
        cmd(rr, "XRANGE", "v", "(18446744073709551615-18446744073709551615", "+")
    with pytest.raises(redis.ResponseError, match="invalid end ID for the interval"):
        cmd(rr, "XRANGE", "v", "-", "(0-0")
    with pytest.raises(redis.ResponseError, match=err(E.SYNTAX)):
        cmd(rr, "XRANGE", "v", "-", "+", "COUNT")
    with pytest.raises(redis.ResponseError, match=err(E.NOT_INTEGER)):
        cmd(rr, "XRANGE", "v", "-", "+", "COUNT", "x")


def test_xrange_count_zero_is_a_null_array(rr: redis.Redis) -> None:
    # 7.0.15 and the current source agree (the docs are silent): COUNT 0 or negative on an
    # existing stream is a null array, on a missing key an empty array.
    rr.xadd("s", {"a": "b"})
    assert cmd(rr, "XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert cmd(rr, "XREVRANGE", "s", "+", "-", "COUNT", "-1") is None
    assert cmd(rr, "XRANGE", "nokey", "-", "+", "COUNT", "0") == []


def test_xrange_iterates_a_big_stream(rr: redis.Redis) -> None:
    with rr.pipeline(transaction=True) as p:
        for j in range(2000):
            p.xadd("s", {"item": j} if j % 10 else {"item": j, "other": "foo"})
        p.execute()
    seen, last = [], "-"
    while True:
        chunk = rr.xrange("s", last, "+", count=300)
        if not chunk:
            break
        seen += [int(e[1][b"item"]) for e in chunk]
        ms, seq = chunk[-1][0].split(b"-")
        last = f"{int(ms)}-{int(seq) + 1}"
    assert seen == list(range(2000))
    assert rr.xrange("s") == list(reversed(rr.xrevrange("s")))


def test_xlen_and_wrongtype(rr: redis.Redis) -> None:
    assert rr.xlen("nokey") == 0
    rr.set("str", "v")
    for args in (["XLEN", "str"], ["XRANGE", "str", "-", "+"], ["XREVRANGE", "str", "+", "-"],
                 ["XDEL", "str", "1"], ["XTRIM", "str", "MAXLEN", "1"], ["XSETID", "str", "1"],
                 ["XDELEX", "str", "IDS", "1", "1"], ["XINFO", "STREAM", "str"]):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            cmd(rr, *args)


# -- XDEL / XDELEX / XTRIM ---------------------------------------------------------------------


def test_xdel(rr: redis.Redis) -> None:
    for i in range(1, 6):
        cmd(rr, "XADD", "s", f"1-{i}", "k", str(i))
    assert cmd(rr, "XDEL", "s", "1-1", "1-4", "1-5", "2-1", "1-4") == 3
    assert ids(rr.xrange("s")) == [b"1-2", b"1-3"]
    assert cmd(rr, "XDEL", "nokey", "foo") == 0  # a missing key answers before IDs are parsed
    with pytest.raises(redis.ResponseError, match=err(E.STREAM_INVALID_ID)):
        cmd(rr, "XDEL", "s", "1-2", "foo")
    assert rr.xlen("s") == 2  # nothing was deleted: IDs are all checked first
    info = xinfo(rr, "s")
    assert info[b"max-deleted-entry-id"] == b"1-5" and info[b"recorded-first-entry-id"] == b"1-2"


def test_xdel_down_to_empty_keeps_the_key(rr: redis.Redis) -> None:
    got = [rr.xadd("s", {"i": j}) for j in range(250)]
    for n, i in enumerate(reversed(got[::3] + got[1::3] + got[2::3])):
        assert cmd(rr, "XDEL", "s", i) == 1
        if n % 50 == 0:
            assert len(rr.xrange("s")) == rr.xlen("s") == 249 - n
    assert rr.xlen("s") == 0 and rr.exists("s") == 1
    assert xinfo(rr, "s")[b"radix-tree-keys"] == 0


def test_xdelex(rr: redis.Redis, sluice: ThreadedServer) -> None:
    assert cmd(rr, "XDELEX", "nokey", "IDS", "2", "1-1", "2-2") == [-1, -1]
    cmd(rr, "XADD", "s", "1-0", "f", "v")
    cmd(rr, "XADD", "s", "2-0", "f", "v")
    cmd(rr, "XADD", "s", "3-0", "f", "v")
    add_group(sluice, b"s", b"g1", deliver={b"c1": 1})  # 1-0 pending in g1
    add_group(sluice, b"s", b"g2", last=parse_strict_id(b"3-0"))  # g2 has seen everything
    # ACKED: 1-0 is pending in g1, 2-0 and 3-0 are not yet delivered to g1; 9-0 was never
    # added, but g1 has not read that far either, so it too is "referenced" (8.6.3).
    assert cmd(rr, "XDELEX", "s", "ACKED", "IDS", "3", "1-0", "2-0", "9-0") == [2, 2, 2]
    assert cmd(rr, "XDELEX", "s", "IDS", "1", "1-0") == [1]  # KEEPREF: the PEL keeps 1-0
    assert list(stream_of(sluice, b"s").groups[b"g1"].pel) == [parse_strict_id(b"1-0")]
    assert cmd(rr, "XDELEX", "s", "delref", "IDS", "1", "1-0") == [-1]  # a dangling reference
    assert list(stream_of(sluice, b"s").groups[b"g1"].pel) == []
    assert rr.xlen("s") == 2


@pytest.mark.parametrize(("args", "message"), [
    (["IDS", "abc", "1-1"], err(E.NUMIDS_NOT_POSITIVE)),
    (["IDS", "0", "1-1"], err(E.NUMIDS_NOT_POSITIVE)),
    (["IDS", "-5", "1-1"], err(E.NUMIDS_NOT_POSITIVE)),
    (["IDS", "3", "1-1", "2-2"], err(E.NUMIDS_MISMATCH)),
    (["IDS", "1", "1-1", "2-2"], err(E.SYNTAX)),
    (["KEEPREF", "DELREF", "IDS", "1", "1-1"], err(E.SYNTAX)),
    (["ACKED", "DELREF", "IDS", "1", "1-1"], err(E.SYNTAX)),
    (["BOGUS", "IDS", "1", "1-1"], err(E.SYNTAX)),
    (["IDS", "1", "not-an-id"], err(E.STREAM_INVALID_ID)),
])
def test_xdelex_errors(rr: redis.Redis, args: list[str], message: str) -> None:
    cmd(rr, "XADD", "s", "1-1", "f", "v")
    with pytest.raises(redis.ResponseError, match=message):
        cmd(rr, "XDELEX", "s", *args)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'xdelex'"):
        cmd(rr, "XDELEX", "s", "DELREF")


def test_xtrim(rr: redis.Redis) -> None:
    assert cmd(rr, "XTRIM", "nokey", "MAXLEN", "1") == 0
    for j in range(1000):
        rr.xadd("s", {"x": j})
    assert cmd(rr, "XTRIM", "s", "MAXLEN", "666") == 334
    assert cmd(rr, "XTRIM", "s", "MAXLEN", "=", "555") == 111
    assert cmd(rr, "XTRIM", "s", "MAXLEN", "~", "444") == 55
    assert rr.xlen("s") == 500
    assert cmd(rr, "XTRIM", "s", "MAXLEN", "~", "400") == 100
    for j in range(1, 6):
        cmd(rr, "XADD", "m", f"{j}-0", "f", "v")
    assert cmd(rr, "XTRIM", "m", "MINID", "=", "3-0") == 2
    assert ids(rr.xrange("m")) == [b"3-0", b"4-0", b"5-0"]
    cmd(rr, "XADD", "big", "1-0", "f", "v")
    cmd(rr, "XADD", "big", "1641544570597-0", "f", "v")
    cmd(rr, "XADD", "big", "1641544570597-1", "f", "v")
    cmd(rr, "XTRIM", "big", "MINID", "1641544570597-0")
    assert ids(rr.xrange("big")) == [b"1641544570597-0", b"1641544570597-1"]
    assert cmd(rr, "XTRIM", "m", "MAXLEN", "0") == 3
    assert rr.exists("m") == 1  # zero-length streams stay keys
    for args, message in ((["LIMIT", "1"], E.STREAM_LIMIT_WITHOUT_STRATEGY),
                          (["MAXLEN", "1", "LIMIT", "1"], E.STREAM_LIMIT_WITHOUT_APPROX),
                          (["MAXLEN", "~", "1", "foo"], E.SYNTAX),
                          (["ACKED", "DELREF"], E.SYNTAX),  # one policy only (8.6.3)
                          (["ACKED", "LIMIT", "0"], E.XTRIM_WITHOUT_STRATEGY)):
        with pytest.raises(redis.ResponseError, match=err(message)):
            cmd(rr, "XTRIM", "s", *args)


def test_trim_reference_policies(rr: redis.Redis, sluice: ThreadedServer) -> None:
    """Redis 8.2's ACKED / DELREF on XADD and XTRIM (as its test suite checks them)."""
    for j in range(1, 6):
        cmd(rr, "XADD", "s", f"{j}-0", "f", "v")
    add_group(sluice, b"s", b"g")  # nothing delivered: every entry is still needed
    cmd(rr, "XADD", "s", "MAXLEN", "=", "1", "ACKED", "6-0", "f", "v")
    assert rr.xlen("s") == 6
    cmd(rr, "XADD", "s", "MAXLEN", "=", "1", "KEEPREF", "7-0", "f", "v")
    assert rr.xlen("s") == 1
    for j in range(1, 5):
        cmd(rr, "XADD", "d", f"{j}-0", "f", "v")
    add_group(sluice, b"d", b"g", deliver={b"c": 10})
    assert cmd(rr, "XTRIM", "d", "MINID", "~", "5-0", "DELREF") == 4
    assert len(stream_of(sluice, b"d").groups[b"g"].pel) == 0


# -- XSETID ---------------------------------------------------------------------------------------


def test_xsetid(rr: redis.Redis) -> None:
    cmd(rr, "XADD", "s", "MAXLEN", "0", "*", "a", "b")
    assert cmd(rr, "XSETID", "s", "200-0") in (b"OK", "OK")
    info = xinfo(rr, "s")
    assert info[b"last-generated-id"] == b"200-0" and info[b"entries-added"] == 1
    cmd(rr, "XADD", "s", "*", "a", "b")
    with pytest.raises(redis.ResponseError, match="smaller than the target stream top item"):
        cmd(rr, "XSETID", "s", "1-1")
    with pytest.raises(redis.ResponseError, match="no such key"):
        cmd(rr, "XSETID", "nokey", "1-1")
    for args, message in ((["1-1", "0"], E.SYNTAX), (["1-1", "0-0"], E.SYNTAX),
                          (["1-1", "ENTRIESADDED"], E.SYNTAX),
                          (["1-1", "ENTRIESADDED", "-1", "MAXDELETEDID", "0-0"],
                           E.ENTRIES_ADDED_NEGATIVE),
                          (["10", "ENTRIESADDED", "1", "MAXDELETEDID", "20"],
                           E.XSETID_BELOW_GIVEN_MAXDELETED),
                          (["x"], E.STREAM_INVALID_ID)):
        with pytest.raises(redis.ResponseError, match=err(message)):
            cmd(rr, "XSETID", "nokey", *args)
    cmd(rr, "XADD", "x", "1-0", "a", "b")
    with pytest.raises(redis.ResponseError, match="smaller than the target stream length"):
        cmd(rr, "XSETID", "x", "1-0", "ENTRIESADDED", "0", "MAXDELETEDID", "0-0")
    cmd(rr, "XSETID", "x", "5-0", "ENTRIESADDED", "9", "MAXDELETEDID", "3-0")
    info = xinfo(rr, "x")
    assert (info[b"last-generated-id"], info[b"entries-added"],
            info[b"max-deleted-entry-id"]) == (b"5-0", 9, b"3-0")


def test_xsetid_below_max_deleted_is_refused(rr: redis.Redis) -> None:
    # Current Redis refuses this ("XSETID cannot set smaller ID than current MAXDELETEDID" in
    # its test suite); 7.0.15 accepts it, so this is not a differential case.
    for i in (1, 2, 3):
        cmd(rr, "XADD", "x", f"1-{i}", "a", str(i))
    cmd(rr, "XDEL", "x", "1-2", "1-3")
    assert xinfo(rr, "x")[b"max-deleted-entry-id"] == b"1-3"
    with pytest.raises(redis.ResponseError, match="smaller than current max_deleted_entry_id"):
        cmd(rr, "XSETID", "x", "1-2")


# -- XINFO ----------------------------------------------------------------------------------------


def test_xinfo_stream_summary(rr: redis.Redis) -> None:
    for j in range(1, 6):
        cmd(rr, "XADD", "x", f"{j}-0", "data", "a")
    cmd(rr, "XDEL", "x", "2-0")
    cmd(rr, "XDEL", "x", "1-0")
    info = xinfo(rr, "x")
    assert list(info)[:7] == [b"length", b"radix-tree-keys", b"radix-tree-nodes",
                              b"last-generated-id", b"max-deleted-entry-id", b"entries-added",
                              b"recorded-first-entry-id"]
    assert info[b"length"] == 3 and info[b"radix-tree-keys"] == 1
    assert info[b"radix-tree-nodes"] == 2
    assert info[b"recorded-first-entry-id"] == b"3-0"
    assert info[b"max-deleted-entry-id"] == b"2-0"
    assert info[b"first-entry"] == [b"3-0", [b"data", b"a"]]
    assert info[b"last-entry"] == [b"5-0", [b"data", b"a"]]
    assert info[b"groups"] == 0
    cmd(rr, "XTRIM", "x", "MAXLEN", "=", "2")
    assert xinfo(rr, "x")[b"recorded-first-entry-id"] == b"4-0"
    with pytest.raises(redis.ResponseError, match="no such key"):
        xinfo(rr, "nokey")


def test_xinfo_stream_full(rr: redis.Redis, sluice: ThreadedServer) -> None:
    for j in range(1, 4):
        cmd(rr, "XADD", "s", f"{j}-0", "f", str(j))
    add_group(sluice, b"s", b"g1", deliver={b"bob": 2, b"alice": 1})
    add_group(sluice, b"s", b"g0", last=parse_strict_id(b"3-0"))
    full = xinfo(rr, "s", "FULL")
    assert b"first-entry" not in full and full[b"length"] == 3
    assert [e[0] for e in full[b"entries"]] == [b"1-0", b"2-0", b"3-0"]
    g0, g1 = (as_dict(g) for g in full[b"groups"])
    assert g0[b"name"] == b"g0" and g0[b"entries-read"] is None and g0[b"pel-count"] == 0
    assert list(g1) == [b"name", b"last-delivered-id", b"entries-read", b"lag", b"pel-count",
                        b"pending", b"consumers"]
    assert (g1[b"last-delivered-id"], g1[b"entries-read"], g1[b"lag"]) == (b"3-0", 3, 0)
    assert [p[:2] for p in g1[b"pending"]] == [[b"1-0", b"bob"], [b"2-0", b"bob"],
                                               [b"3-0", b"alice"]]
    alice, bob = (as_dict(c) for c in g1[b"consumers"])
    # active-time is Redis 7.2+ (7.0.15 has no such field): follow the newest.
    assert list(alice) == [b"name", b"seen-time", b"active-time", b"pel-count", b"pending"]
    assert (alice[b"name"], alice[b"pel-count"], bob[b"pel-count"]) == (b"alice", 1, 2)
    assert [p[0] for p in bob[b"pending"]] == [b"1-0", b"2-0"]
    one = xinfo(rr, "s", "FULL", "COUNT", "1")
    assert len(one[b"entries"]) == 1
    assert len(as_dict(one[b"groups"][1])[b"pending"]) == 1
    assert len(xinfo(rr, "s", "FULL", "COUNT", "0")[b"entries"]) == 3
    for j in range(12):
        rr.xadd("big", {"f": j})
    assert len(xinfo(rr, "big", "FULL")[b"entries"]) == 10  # the default COUNT
    assert len(xinfo(rr, "big", "FULL", "COUNT", "0")[b"entries"]) == 12  # 0: everything
    # Current Redis turns a negative COUNT into the default (7.0.15 returns everything).
    assert len(xinfo(rr, "big", "FULL", "COUNT", "-1")[b"entries"]) == 10
    with pytest.raises(redis.ResponseError, match="no such key"):
        xinfo(rr, "nokey", "FULL", "foo")  # the key is looked up before the options
    for extra in (["foo"], ["FULL", "foo"], ["FULL", "COUNT"], ["FULL", "COUNT", "1", "x"]):
        with pytest.raises(redis.ResponseError, match="unknown subcommand or wrong number"):
            xinfo(rr, "s", *extra)


def test_xinfo_help(rr: redis.Redis) -> None:
    lines = cmd(rr, "XINFO", "HELP")
    assert lines[0].startswith(b"XINFO <subcommand>") and len(lines) == 9
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'xinfo|help'"):
        cmd(rr, "XINFO", "HELP", "x")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'foo'. Try XINFO HELP."):
        cmd(rr, "XINFO", "foo")


def test_radix_tree_node_counts() -> None:
    from sluice.commands.stream_info import rax_node_count

    assert rax_node_count([]) == 1
    assert rax_node_count([5]) == 2
    # Two keys sharing 15 bytes: a compressed run, a branch, two leaves.
    assert rax_node_count([(1 << 64) | 1, (1 << 64) | 2]) == 4
    # Differing at the first byte: the root branches at once.
    assert rax_node_count([1, 1 << 127]) == 1 + 2 * 2


# -- XREAD (non-blocking) -----------------------------------------------------------------------


def test_xread(rr: redis.Redis) -> None:
    cmd(rr, "XADD", "a", "1-1", "f", "v1")
    cmd(rr, "XADD", "a", "1-2", "f", "v2")
    cmd(rr, "XADD", "b", "2-1", "f", "w")
    got = raw(rr, "XREAD", "COUNT", "1", "STREAMS", "nokey", "a", "b", "0", "0", "0")
    pairs = list(got.items()) if isinstance(got, dict) else [tuple(p) for p in got]
    assert pairs == [(b"a", [[b"1-1", [b"f", b"v1"]]]), (b"b", [[b"2-1", [b"f", b"w"]]])]
    assert raw(rr, "XREAD", "STREAMS", "a", "1-2") is None
    assert raw(rr, "XREAD", "STREAMS", "a", "$") is None
    assert raw(rr, "XREAD", "STREAMS", "nokey", "0") is None
    got = raw(rr, "XREAD", "COUNT", "-1", "STREAMS", "a", "0")  # negative: no limit
    assert len(got[b"a"] if isinstance(got, dict) else got[0][1]) == 2


def test_xread_plus_reads_the_last_entry(rr: redis.Redis) -> None:
    # Redis 7.4+ (7.0.15 refuses "+"): the last entry, whatever COUNT says.
    for i in (1, 2, 3):
        cmd(rr, "XADD", "le", f"{i}-0", f"k{i}", f"v{i}")
    assert raw(rr, "XREAD", "COUNT", "3", "STREAMS", "le", "+") in (
        [[b"le", [[b"3-0", [b"k3", b"v3"]]]]], {b"le": [[b"3-0", [b"k3", b"v3"]]]})
    cmd(rr, "XDEL", "le", "3-0")  # redis/redis#13628: the last *live* entry
    got = raw(rr, "XREAD", "STREAMS", "le", "nokey", "+", "+")
    assert got in ([[b"le", [[b"2-0", [b"k2", b"v2"]]]]], {b"le": [[b"2-0", [b"k2", b"v2"]]]})
    cmd(rr, "XDEL", "le", "1-0", "2-0")
    assert raw(rr, "XREAD", "STREAMS", "le", "+") is None


def test_xread_same_key_twice_in_resp3(r3: redis.Redis) -> None:
    r3.xadd("s", {"f": "v"}, id="1-0")
    reply = raw(r3, "XREAD", "STREAMS", "s", "s", "0", "0")
    assert reply == {b"s": [[b"1-0", [b"f", b"v"]]]}  # redis-py folds the repeated map key


@pytest.mark.parametrize(("args", "message"), [
    (["STREAMS", "s"], "wrong number of arguments"),
    (["STREAMS", "s", "0", "t"], err(E.XREAD_UNBALANCED)),  # 7.2+ wording
    (["COUNT", "x", "STREAMS", "s", "0"], err(E.NOT_INTEGER)),
    (["BLOCK", "x", "STREAMS", "s", "0"], err(E.TIMEOUT_NOT_INTEGER)),
    (["BLOCK", "1.5", "STREAMS", "s", "0"], err(E.TIMEOUT_NOT_INTEGER)),
    (["BLOCK", "-1", "STREAMS", "s", "0"], "timeout is negative"),
    (["BLOCK", "9223372036854775807", "STREAMS", "s", "$"], "timeout is out of range"),  # 7.2+
    (["FOO", "STREAMS", "s", "0"], err(E.SYNTAX)),
    (["COUNT", "1", "BLOCK", "0", "s", "0"], err(E.SYNTAX)),
    (["GROUP", "g", "c", "STREAMS", "s", "0"], err(E.XREAD_GROUP_OPTION)),
    (["NOACK", "STREAMS", "s", "0"], err(E.XREAD_NOACK_OPTION)),
    (["STREAMS", "s", ">"], err(E.XREAD_GT_ID)),
    (["STREAMS", "s", "-"], err(E.STREAM_INVALID_ID)),
    (["STREAMS", "s", "1-*"], err(E.STREAM_INVALID_ID)),
])
def test_xread_errors(rr: redis.Redis, args: list[str], message: str) -> None:
    with pytest.raises(redis.ResponseError, match=message):
        cmd(rr, "XREAD", *args)


def test_xread_checks_each_type_before_its_id(rr: redis.Redis) -> None:
    rr.set("str", "v")
    rr.xadd("s", {"f": "v"})
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        cmd(rr, "XREAD", "STREAMS", "s", "str", "0", "x")
    with pytest.raises(redis.ResponseError, match=err(E.STREAM_INVALID_ID)):
        cmd(rr, "XREAD", "STREAMS", "s", "str", "x", "0")


# -- streams as keys -------------------------------------------------------------------------------


def test_streams_as_keys(rr: redis.Redis) -> None:
    cmd(rr, "XADD", "s", "1-0", "a", "1")
    assert rr.type("s") == b"stream"
    assert rr.object("encoding", "s") == b"stream"
    assert rr.scan(0, _type="stream")[1] == [b"s"]
    rr.set("str", "v")
    assert rr.scan(0, _type="string")[1] == [b"str"]
    assert rr.copy("s", "c") is True
    cmd(rr, "XADD", "c", "2-0", "a", "2")
    cmd(rr, "XDEL", "c", "1-0")
    assert ids(rr.xrange("s")) == [b"1-0"] and ids(rr.xrange("c")) == [b"2-0"]
    assert rr.rename("s", "t") is True
    assert ids(rr.xrange("t")) == [b"1-0"] and rr.exists("s") == 0
    assert rr.pexpire("t", 100_000) is True and 0 < rr.pttl("t") <= 100_000
    assert rr.delete("t", "c") == 2


def test_copy_is_deep(rr: redis.Redis, sluice: ThreadedServer) -> None:
    cmd(rr, "XADD", "s", "1-0", "a", "1")
    cmd(rr, "XADD", "s", "IDMP", "p", "i", "*", "a", "2")
    add_group(sluice, b"s", b"g", deliver={b"c": 1})
    rr.copy("s", "d")
    src, dup = stream_of(sluice, b"s"), stream_of(sluice, b"d")
    assert dup is not src and dup.groups[b"g"] is not src.groups[b"g"]
    g = dup.groups[b"g"]
    sid = parse_strict_id(b"1-0")
    assert g.pel[sid] is g.consumers[b"c"].pel[sid]  # still shared within the copy
    assert g.pel[sid] is not src.groups[b"g"].pel[sid]
    assert xinfo(rr, "d")[b"iids-tracked"] == 1


def test_streams_in_multi_exec(rr: redis.Redis) -> None:
    with rr.pipeline(transaction=True) as p:
        p.xadd("s", {"item": 1})
        p.xadd("s", {"item": 2})
        p.xadd("s", {"item": 3})
        p.xlen("s")
        p.execute_command("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")  # never blocks
        a, b, c, n, blocked = p.execute()
    assert parse_strict_id(a) < parse_strict_id(b) < parse_strict_id(c) and n == 3
    assert not blocked  # the null reply (redis-py turns it into an empty list / dict)


# -- what the AOF is fed ----------------------------------------------------------------------------


def test_logged_commands_are_deterministic(make_server: Any) -> None:
    srv = make_server("stream-node-max-entries 10")
    rec = RecordingAof()
    srv.call(lambda: setattr(srv.server, "aof", rec))
    r = srv.client()
    assert cmd(r, "XADD", "s", "5-*", "f", "v") == b"5-0"
    assert rec.logged[-1] == [b"XADD", b"s", b"5-0", b"f", b"v"]
    for j in range(6, 104):
        cmd(r, "XADD", "s", f"{j}-0", "f", "v")
    # 100 entries in nodes of 10: "~ 55 LIMIT 30" drops three whole nodes, logged as "= 70".
    new = cmd(r, "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "*", "f", "v")
    assert rec.logged[-1] == [b"XADD", b"s", b"MAXLEN", b"=", b"70", b"LIMIT", b"30", new,
                              b"f", b"v"]
    # Nodes now start at 35-0, 45-0 ...: "MINID ~ 50" drops one node, logged as "= 45-0".
    assert cmd(r, "XTRIM", "s", "MINID", "~", "50") == 10
    assert rec.logged[-1] == [b"XTRIM", b"s", b"MINID", b"=", b"45-0"]
    sid = r.xadd("s", {"f": "v"})
    assert rec.logged[-1] == [b"XADD", b"s", sid, b"f", b"v"]
    auto = cmd(r, "XADD", "s", "IDMPAUTO", "p", "*", "f", "v")
    logged = rec.logged[-1]
    assert logged[:3] == [b"XADD", b"s", b"IDMP"] and logged[3] == b"p" and logged[5] == auto
    n = len(rec.logged)
    assert cmd(r, "XADD", "s", "IDMPAUTO", "p", "*", "f", "v") == auto
    assert len(rec.logged) == n  # a duplicate changes nothing and logs nothing
    assert cmd(r, "XTRIM", "s", "MAXLEN", "1000") == 0
    assert len(rec.logged) == n

    # Replaying the log as the AOF loader would (exact trims, LIMIT ignored, IDMP + explicit
    # ID accepted) rebuilds the same stream.
    from sluice.server.client import Client
    from sluice.server.dispatch import call, lookup

    replay = make_server("stream-node-max-entries 1")

    def run() -> None:
        server = replay.server
        client = Client(server, 999, None)
        client.kind = "aof"
        for argv in rec.logged:
            reply = call(server, client, lookup(server.table, argv), argv)
            assert not isinstance(reply, bytes) or not reply.startswith(b"ERR"), reply

    replay.call(run)
    r2 = replay.client()
    assert r2.xrange("s") == r.xrange("s")
    assert cmd(r2, "XADD", "s", "IDMPAUTO", "p", "*", "f", "v") == auto
