"""HOTKEYS over real sockets with redis-py, RESP2 and RESP3: the session's life, GET's shape,
what each command costs (NET exactly, as Redis counts the bytes; CPU by shape), transactions,
scripts, pipelines, blocking, sampling, DURATION on virtual time, INFO hotkeys.

Expected byte counts are computed here from the wire format (request as a multibulk, reply as
encoded), not copied from a server: the differential test compares them with redis-server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sluice.protocol import encode
from sluice.storage.keyspace import FakeClock
from tests.support import ThreadedServer, wait_blocked, wait_until

pytestmark = pytest.mark.timeout(60)


def req(*args: str | bytes) -> int:
    """A request's bytes as a RESP multibulk."""
    parts = [a.encode() if isinstance(a, str) else a for a in args]
    return len(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))


def rep(reply: Any, resp3: bool = False) -> int:
    return len(encode(reply, resp3))


OK_SIZE = len(b"+OK\r\n")


def hotkeys(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command("HOTKEYS", *args)


def get(r: redis.Redis) -> dict[bytes, Any] | None:
    """HOTKEYS GET's one map, as a dict (RESP2 sends it as a flat array)."""
    reply = hotkeys(r, "GET")
    if reply is None:
        return None
    assert isinstance(reply, list) and len(reply) == 1
    m = reply[0]
    return m if isinstance(m, dict) else dict(zip(m[::2], m[1::2], strict=True))


def pairs(flat: list[Any]) -> dict[bytes, int]:
    assert len(flat) % 2 == 0
    return dict(zip(flat[::2], flat[1::2], strict=True))


@pytest.fixture
def r(rr: redis.Redis) -> Iterator[redis.Redis]:
    """A client of the shared server; no session is left behind."""
    yield rr
    hotkeys(rr, "STOP")
    hotkeys(rr, "RESET")


def resp3(r: redis.Redis) -> bool:
    return r.connection_pool.connection_kwargs.get("protocol") == 3


def test_session_life(r: redis.Redis) -> None:
    assert get(r) is None and hotkeys(r, "STOP") is None
    assert hotkeys(r, "RESET") in (b"OK", "OK")
    assert hotkeys(r, "START", "METRICS", "1", "CPU") == b"OK"
    with pytest.raises(redis.ResponseError, match="session already in progress"):
        hotkeys(r, "START", "METRICS", "1", "NET")
    with pytest.raises(redis.ResponseError, match="stop tracking first"):
        hotkeys(r, "RESET")
    first = get(r)
    assert first is not None and first[b"tracking-active"] == 1
    assert hotkeys(r, "STOP") == b"OK" and hotkeys(r, "STOP") is None
    stopped = get(r)
    assert stopped is not None and stopped[b"tracking-active"] == 0
    # a stopped session is replaced by the next START
    assert hotkeys(r, "START", "METRICS", "1", "NET", "SAMPLE", "4") == b"OK"
    again = get(r)
    assert again is not None and again[b"sample-ratio"] == 4 and b"by-net-bytes" in again
    hotkeys(r, "STOP")
    assert hotkeys(r, "RESET") == b"OK" and get(r) is None


def test_get_shape(r: redis.Redis) -> None:
    hotkeys(r, "START", "METRICS", "2", "CPU", "NET")
    r.set("testkey", "testvalue")
    hotkeys(r, "STOP")
    raw = hotkeys(r, "GET")
    assert isinstance(raw[0], dict if resp3(r) else list)  # a map in RESP3, flat in RESP2
    g = get(r)
    assert g is not None
    assert list(g) == [
        b"tracking-active", b"sample-ratio", b"selected-slots", b"all-commands-all-slots-us",
        b"net-bytes-all-commands-all-slots", b"collection-start-time-unix-ms",
        b"collection-duration-ms", b"total-cpu-time-user-ms", b"total-cpu-time-sys-ms",
        b"total-net-bytes", b"by-cpu-time-us", b"by-net-bytes"]
    assert g[b"selected-slots"] == [[0, 16383]]
    cpu = g[b"by-cpu-time-us"]
    assert cpu[0] == b"testkey" and isinstance(cpu[1], int) and cpu[1] >= 1
    size = req("SET", "testkey", "testvalue") + OK_SIZE
    assert pairs(g[b"by-net-bytes"]) == {b"testkey": size}
    assert g[b"total-net-bytes"] == g[b"net-bytes-all-commands-all-slots"] == size
    assert g[b"all-commands-all-slots-us"] >= cpu[1]
    assert g[b"collection-start-time-unix-ms"] > 1_700_000_000_000


def test_net_is_request_plus_reply_shared_among_keys(r: redis.Redis) -> None:
    p3 = resp3(r)
    hotkeys(r, "START", "METRICS", "1", "NET", "COUNT", "64")
    r.set("key1", "value1")
    r.get("key1")
    r.mset({"a": "1", "bb": "22", "ccc": "333"})
    r.get("missing")
    r.rpush("l", "x", "yy")
    r.lrange("l", 0, -1)
    with pytest.raises(redis.ResponseError):
        r.execute_command("INCR", "l")  # an error reply is a reply
    r.ping()  # no key: counts for nothing
    g = get(r)
    assert g is not None
    mset = req("MSET", "a", "1", "bb", "22", "ccc", "333") + OK_SIZE
    wrongtype = len(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    expected = {
        b"key1": req("SET", "key1", "value1") + OK_SIZE + req("GET", "key1") + rep(b"value1"),
        b"a": mset // 3, b"bb": mset // 3, b"ccc": mset // 3,
        b"missing": req("GET", "missing") + rep(None, p3),
        b"l": (req("RPUSH", "l", "x", "yy") + rep(2) + req("LRANGE", "l", "0", "-1")
               + rep([b"x", b"yy"]) + req("INCR", "l") + wrongtype),
    }
    assert pairs(g[b"by-net-bytes"]) == expected
    whole = sum(expected.values()) - 3 * (mset // 3) + mset
    assert g[b"net-bytes-all-commands-all-slots"] == whole
    assert g[b"total-net-bytes"] == sum(expected.values())  # the shares, truncated


def test_cpu_ranks_the_expensive_key_first(r: redis.Redis) -> None:
    r.rpush("big", *range(5000))
    r.set("small", "v")
    hotkeys(r, "START", "METRICS", "1", "CPU")
    for _ in range(5):
        r.lrange("big", 0, -1)
        r.get("small")
    g = get(r)
    assert g is not None
    cpu = g[b"by-cpu-time-us"]
    assert cpu[0] == b"big"
    values = cpu[1::2]
    assert values == sorted(values, reverse=True) and all(v >= 1 for v in values)
    assert g[b"all-commands-all-slots-us"] >= sum(values)


def test_transaction_counts_exec_bytes_cumulatively(r: redis.Redis) -> None:
    """Inside EXEC each command counts EXEC's request, the array header and every reply so
    far (Redis's per-command byte counters are not reset between a transaction's commands)."""
    hotkeys(r, "START", "METRICS", "1", "NET")
    p = r.pipeline(transaction=True)
    p.set("k1{t}", "v1")
    p.set("k2{t}", "v2")
    p.get("k1{t}")
    p.execute()
    g = get(r)
    assert g is not None
    base = req("EXEC") + len(b"*3\r\n")
    after = [OK_SIZE, 2 * OK_SIZE, 2 * OK_SIZE + rep(b"v1")]
    assert pairs(g[b"by-net-bytes"]) == {b"k1{t}": 2 * base + after[0] + after[2],
                                         b"k2{t}": base + after[1]}


def test_scripts(r: redis.Redis) -> None:
    """A script's own keys count; the keys its commands use count only inside EXEC."""
    hotkeys(r, "START", "METRICS", "1", "NET")
    script = "redis.call('set', KEYS[1], 'v'); redis.call('set', 'inner', 'v'); return 1"
    r.eval(script, 1, "outer")
    g = get(r)
    assert g is not None and set(pairs(g[b"by-net-bytes"])) == {b"outer"}
    p = r.pipeline(transaction=True)
    p.eval(script, 1, "outer2")
    p.execute()
    g = get(r)
    assert g is not None
    nested = pairs(g[b"by-net-bytes"])
    assert {b"outer2", b"inner"} <= set(nested)
    assert nested[b"inner"] == OK_SIZE  # its reply to the script, no request bytes
    with pytest.raises(redis.ResponseError, match="not allowed from script"):
        r.eval("return redis.call('hotkeys', 'get')", 0)


def test_pipelined_commands_are_all_counted(r: redis.Redis) -> None:
    """While a session runs, pipelined plain commands leave the short path (which keeps no
    books) and are counted; after STOP nothing is."""
    hotkeys(r, "START", "METRICS", "1", "NET", "COUNT", "64")
    p = r.pipeline(transaction=False)
    for i in range(200):
        p.set(f"p{i % 50}", "v")
    p.execute()
    hotkeys(r, "STOP")
    r.set("after", "v")
    g = get(r)
    assert g is not None
    net = pairs(g[b"by-net-bytes"])
    assert len(net) == 50 and b"after" not in net
    assert net[b"p0"] == 4 * (req("SET", "p0", "v") + OK_SIZE)


def test_blocked_commands_are_not_counted(r: redis.Redis, sluice: ThreadedServer) -> None:
    """As Redis: a served blocked command is re-run nested (not counted), a timed-out one
    never reaches call(); the push that served it is."""
    waiter = redis.Redis(port=sluice.port, protocol=r.connection_pool.connection_kwargs.get(
        "protocol", 2))
    hotkeys(r, "START", "METRICS", "1", "NET")
    try:
        assert waiter.blpop(["bl2"], timeout=0.01) is None
        pool = waiter.connection_pool
        conn = pool.get_connection()
        conn.send_command("BLPOP", "bl", "0")
        wait_blocked(r, 1)
        r.lpush("bl", "hello")
        assert conn.read_response() == [b"bl", b"hello"]
        pool.release(conn)
    finally:
        waiter.close()
    g = get(r)
    assert g is not None
    assert pairs(g[b"by-net-bytes"]) == {b"bl": req("LPUSH", "bl", "hello") + rep(1)}


def test_sampling_keeps_totals_for_every_command(r: redis.Redis, sluice: ThreadedServer) -> None:
    hotkeys(r, "START", "METRICS", "1", "NET", "SAMPLE", "2")
    session = sluice.call(lambda: sluice.server.hotkeys.session)  # type: ignore[union-attr]
    session.random = lambda: 0.5  # never drawn (probability 1/2: drawn below 0.5)
    r.set("k", "v")
    g = get(r)
    assert g is not None
    assert g[b"sample-ratio"] == 2 and g[b"by-net-bytes"] == [] and g[b"total-net-bytes"] == 0
    assert g[b"net-bytes-all-commands-all-slots"] == req("SET", "k", "v") + OK_SIZE
    session.random = lambda: 0.49
    r.set("k", "v")
    g = get(r)
    assert g is not None and pairs(g[b"by-net-bytes"]) == {b"k": req("SET", "k", "v") + OK_SIZE}


def test_info_hotkeys(r: redis.Redis) -> None:
    assert r.info("hotkeys") == {}
    hotkeys(r, "START", "METRICS", "1", "CPU")
    r.set("k", "v")
    info = r.info("hotkeys")
    assert info["hotkeys-tracking-active"] == 1 and info["hotkeys-cmd-cpu-time"] >= 0
    hotkeys(r, "STOP")
    assert r.info("hotkeys")["hotkeys-tracking-active"] == 0
    hotkeys(r, "RESET")
    assert r.info("hotkeys") == {}
    assert "hotkeys-tracking-active" not in r.info()  # default sections: an empty one


def test_duration_ends_the_session_on_the_cron(make_server: Any) -> None:
    clock = FakeClock()
    server: ThreadedServer = make_server(clock=clock)
    r = server.client()
    try:
        assert hotkeys(r, "START", "METRICS", "1", "NET", "DURATION", "2") == b"OK"
        r.set("k", "v")
        clock.advance(1999)
        loops = server.call(lambda: server.server.cronloops)  # type: ignore[union-attr]
        wait_until(lambda: server.call(lambda: server.server.cronloops) > loops + 1)  # type: ignore[union-attr]
        g = get(r)
        assert g is not None and g[b"tracking-active"] == 1
        assert g[b"collection-duration-ms"] == 1999
        clock.advance(1)
        wait_until(lambda: get(r)[b"tracking-active"] == 0, what="DURATION's end")  # type: ignore[index]
        r.set("late", "v")  # after the end: not counted
        clock.advance(5000)
        g = get(r)
        assert g is not None and g[b"collection-duration-ms"] == 2000
        assert set(pairs(g[b"by-net-bytes"])) == {b"k"}
        assert hotkeys(r, "STOP") is None  # already over
        assert g[b"collection-start-time-unix-ms"] == 1_700_000_000_000
    finally:
        r.close()
