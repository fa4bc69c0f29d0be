"""Client-side caching (CLIENT TRACKING) over real sockets: redis-py's own client-side cache,
RESP3 invalidation pushes and RESP2 redirection, the modes (BCAST, OPTIN, OPTOUT, NOLOOP),
FLUSHALL's null, the table's limit, and the keys expiry and eviction take.

redis-py 5+ builds a local cache when asked (``Redis(protocol=3, cache_config=CacheConfig())``):
it sends ``CLIENT TRACKING ON`` itself and drops an entry when an ``invalidate`` push names
its key. A read served from that cache never reaches the server (INFO commandstats says so),
and a write from another connection must reach the cache before the next read returns.
Waits are on state (what the client sees, the server's counters), not on time.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from redis.cache import CacheConfig

from tests.support import RawClient, ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)


def _get_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return int(stats.get("cmdstat_get", {}).get("calls", 0))


@pytest.fixture
def server(make_server: Any) -> ThreadedServer:
    srv: ThreadedServer = make_server()
    return srv


def test_redis_py_client_side_cache(server: ThreadedServer) -> None:
    cached = redis.Redis(port=server.port, protocol=3, cache_config=CacheConfig())
    writer = server.client()
    try:
        writer.set("k", "v1")
        before = _get_calls(writer)
        assert [cached.get("k") for _ in range(3)] == [b"v1"] * 3
        assert _get_calls(writer) - before == 1  # two of three reads came from the cache
        assert cached.get_cache().size == 1
        writer.set("k", "v2")  # another connection writes: Sluice pushes the invalidation
        wait_until(lambda: cached.get("k") == b"v2", what="the cache to be invalidated")
        writer.hset("h", "f", "1")
        assert cached.hget("h", "f") == b"1"
        writer.hset("h", "f", "2")
        wait_until(lambda: cached.hget("h", "f") == b"2", what="the hash's invalidation")
        writer.flushall()  # a null invalidation: everything goes
        wait_until(lambda: cached.get("k") is None, what="FLUSHALL's invalidation")
    finally:
        cached.close()
        writer.close()


def _push(client: RawClient) -> bytes:
    return client.read_reply()


def test_resp3_invalidation_follows_the_reply(server: ThreadedServer) -> None:
    """The tracking client's own write: its reply first, then the invalidation (Redis 7+)."""
    c = RawClient(server.port, protocol=3)
    other = RawClient(server.port)
    c.call("CLIENT", "TRACKING", "ON")
    other.call("SET", "a", "1")
    assert c.call("GET", "a") == b"$1\r\n1\r\n"
    assert c.call("SET", "a", "2") == b"+OK\r\n"
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n"
    assert c.call("GET", "a") == b"$1\r\n2\r\n"
    other.call("DEL", "a")  # another client: the push comes unasked
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n"
    other.call("FLUSHALL")
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n_\r\n"
    c.close()
    other.close()


def test_resp2_redirection_and_broken_redirect(server: ThreadedServer) -> None:
    sub = RawClient(server.port)
    sub_id = int(sub.call("CLIENT", "ID")[1:-2])
    sub.call("SUBSCRIBE", "__redis__:invalidate")
    c = RawClient(server.port)
    assert c.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(sub_id)) == b"+OK\r\n"
    assert c.call("CLIENT", "GETREDIR") == b":%d\r\n" % sub_id
    c.call("GET", "x")
    c.call("SET", "x", "1")
    assert sub.read_reply() == (b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
                                b"*1\r\n$1\r\nx\r\n")
    sub.close()
    c3 = RawClient(server.port, protocol=3)
    c_id = int(c.call("CLIENT", "ID")[1:-2])
    c3.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(c_id))
    c.close()
    wait_until(lambda: b"id=%d " % c_id not in c3.call("CLIENT", "LIST"),
               what="the redirection's client to go")
    c3.call("GET", "y")
    c3.call("SET", "y", "1")  # its redirection is gone: Redis tells it so, after the reply
    assert _push(c3) == b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % c_id
    assert b"broken_redirect" in c3.call("CLIENT", "TRACKINGINFO")
    c3.close()


def test_bcast_prefixes_and_noloop(server: ThreadedServer) -> None:
    c = RawClient(server.port, protocol=3)
    other = RawClient(server.port)
    c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "NOLOOP")
    other.call("MSET", "user:1", "a", "order:1", "b", "user:2", "c")
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n*2\r\n$6\r\nuser:1\r\n$6\r\nuser:2\r\n"
    c.call("SET", "user:3", "mine")  # NOLOOP: its own write is not reported to it
    other.call("SET", "user:4", "x")
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:4\r\n"
    info = c.call("CLIENT", "TRACKINGINFO")
    assert b"bcast" in info and b"noloop" in info and b"user:" in info
    c.close()
    other.close()


def test_optin_caching_yes(server: ThreadedServer) -> None:
    c = RawClient(server.port, protocol=3)
    other = RawClient(server.port)
    c.call("CLIENT", "TRACKING", "ON", "OPTIN")
    c.call("GET", "not-tracked")
    assert c.call("CLIENT", "CACHING", "YES") == b"+OK\r\n"
    c.call("GET", "tracked")
    other.call("SET", "not-tracked", "1")
    other.call("SET", "tracked", "1")
    assert _push(c) == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\ntracked\r\n"
    assert not c.has_reply()
    c.close()
    other.close()


def test_expired_and_evicted_keys_are_invalidated(server: ThreadedServer) -> None:
    c = RawClient(server.port, protocol=3)
    other = RawClient(server.port)
    c.call("CLIENT", "TRACKING", "ON")
    other.call("SET", "soon", "1", "PX", "300")
    c.call("GET", "soon")
    assert _push(c).endswith(b"$4\r\nsoon\r\n")  # the active cycle took it
    other.call("SET", "big", "x" * 100_000)
    c.call("GET", "big")
    other.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    other.call("CONFIG", "SET", "maxmemory", "1")
    other.call("PING")  # the next command evicts
    assert _push(c).endswith(b"$3\r\nbig\r\n")
    other.call("CONFIG", "SET", "maxmemory", "0")
    c.close()
    other.close()


def test_tracking_table_limit(server: ThreadedServer) -> None:
    c = RawClient(server.port, protocol=3)
    c.call("CLIENT", "TRACKING", "ON")
    c.call("MGET", "t1", "t2", "t3")
    r = server.client()
    assert r.info("stats")["tracking_total_keys"] == 3
    assert r.info("clients")["tracking_clients"] == 1
    r.config_set("tracking-table-max-keys", 1)
    wait_until(lambda: r.info("stats")["tracking_total_keys"] <= 1, what="the table's limit")
    assert b"invalidate" in _push(c)
    r.config_set("tracking-table-max-keys", 1_000_000)
    c.close()
    r.close()


def test_tracking_errors(server: ThreadedServer) -> None:
    r = server.client()
    with pytest.raises(redis.ResponseError, match="requires BCAST"):
        r.execute_command("CLIENT", "TRACKING", "ON", "PREFIX", "a")
    with pytest.raises(redis.ResponseError, match="does not exist"):
        r.execute_command("CLIENT", "TRACKING", "ON", "REDIRECT", "999999")
    with pytest.raises(redis.ResponseError, match="both OPTIN mode and OPTOUT"):
        r.execute_command("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")
    with pytest.raises(redis.ResponseError, match="overlaps"):
        r.execute_command("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a")
    with pytest.raises(redis.ResponseError, match="CLIENT CACHING can be called only"):
        r.execute_command("CLIENT", "CACHING", "YES")
    r.close()
