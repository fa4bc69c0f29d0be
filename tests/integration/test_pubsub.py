"""Pub/Sub over a real socket with redis-py's PubSub (RESP2 and RESP3), plus what surrounds it:
CLIENT LIST, INFO, ACL channel permissions, the pubsub output buffer class, disconnects."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests.support import RawClient, ThreadedServer

pytestmark = pytest.mark.timeout(60)


def _next(p: Any) -> dict[str, Any]:
    """The next message of any type (waits for it; fails rather than hangs)."""
    msg = p.get_message(timeout=10)
    assert msg is not None, "no message within 10 s"
    return msg  # type: ignore[no-any-return]


def _wait_for(predicate: Callable[[], bool]) -> None:
    """Wait on server state (a test's own deadline, not a sleep as synchronisation)."""
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "server state never reached"
        time.sleep(0.005)


def test_subscribe_publish_unsubscribe(rr: redis.Redis) -> None:
    p = rr.pubsub()
    p.subscribe("news", "sport")
    assert _next(p) == {"type": "subscribe", "pattern": None, "channel": b"news", "data": 1}
    assert _next(p)["data"] == 2
    assert rr.publish("news", "hello") == 1
    assert _next(p) == {"type": "message", "pattern": None, "channel": b"news",
                        "data": b"hello"}
    assert rr.pubsub_numsub("news", "none") == [(b"news", 1), (b"none", 0)]
    assert sorted(rr.pubsub_channels()) == [b"news", b"sport"]
    p.unsubscribe("news")
    assert _next(p) == {"type": "unsubscribe", "pattern": None, "channel": b"news", "data": 1}
    assert rr.publish("news", "nobody") == 0
    p.close()


def test_patterns_and_their_count(rr: redis.Redis) -> None:
    p = rr.pubsub()
    p.psubscribe("sensor.*")
    assert _next(p)["type"] == "psubscribe"
    p.subscribe("sensor.1")
    _next(p)
    assert rr.pubsub_numpat() == 1
    assert rr.publish("sensor.1", "19.8") == 2  # once for the channel, once for the pattern
    assert _next(p)["type"] == "message"
    assert _next(p) == {"type": "pmessage", "pattern": b"sensor.*", "channel": b"sensor.1",
                        "data": b"19.8"}
    p.close()


def test_sharded_channels(rr: redis.Redis) -> None:
    p = rr.pubsub()
    p.ssubscribe("orders")
    assert _next(p)["type"] == "ssubscribe"
    assert rr.spublish("orders", "o1") == 1
    assert rr.publish("orders", "not sharded") == 0
    assert _next(p) == {"type": "smessage", "pattern": None, "channel": b"orders",
                        "data": b"o1"}
    assert rr.pubsub_shardnumsub("orders") == [(b"orders", 1)]
    p.close()


def test_handler_thread_receives_in_order(rr: redis.Redis) -> None:
    got: list[bytes] = []
    p = rr.pubsub()
    p.subscribe(**{"jobs": lambda m: got.append(m["data"])})
    thread = p.run_in_thread(sleep_time=0.01, daemon=True)
    try:
        _wait_for(lambda: rr.pubsub_numsub("jobs") == [(b"jobs", 1)])
        for i in range(50):
            rr.publish("jobs", str(i))
        _wait_for(lambda: len(got) == 50)
        assert got == [str(i).encode() for i in range(50)]
    finally:
        thread.stop()
        thread.join(10)
        p.close()


def test_resp2_subscriber_may_only_run_pubsub_commands(sluice: ThreadedServer) -> None:
    c = RawClient(sluice.port, 2)
    try:
        c.send("SUBSCRIBE", "c")
        c.read_replies(1)
        assert c.call("GET", "k") == (b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                      b"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
                                      b"in this context\r\n")
        assert c.call("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        assert c.call("RESET") == b"+RESET\r\n"
        assert c.call("GET", "k") == b"$-1\r\n"
    finally:
        c.close()


def test_resp3_subscriber_runs_anything(r3: redis.Redis, sluice: ThreadedServer) -> None:
    c = RawClient(sluice.port, 3)
    try:
        c.send("SUBSCRIBE", "c")
        assert c.read_replies(1) == [b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"]
        assert c.call("SET", "k", "v") == b"+OK\r\n"
        # The push to itself comes after PUBLISH's own reply (Redis 7.2+, redis/redis#12326;
        # 7.0 sent it before).
        c.send("PUBLISH", "c", "me")
        assert c.read_replies(2) == [b":1\r\n", b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nme\r\n"]
    finally:
        c.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_publish_to_self_inside_multi_comes_after_exec(sluice: ThreadedServer,
                                                       protocol: int) -> None:
    """EXEC's array holds its commands' replies only; a message the transaction published to
    its own connection follows it (Redis 7.2+; 7.0 put it inside the array, leaving PUBLISH's
    count outside, a stream no client can read)."""
    c = RawClient(sluice.port, protocol)
    try:
        for command in (("MULTI",), ("SUBSCRIBE", "ch"), ("PUBLISH", "ch", "msg"),
                        ("PUBLISH", "ch", "again")):
            c.send(*command)
        c.read_replies(4)  # +OK, +QUEUED x3
        c.send("EXEC")
        push = b">" if protocol == 3 else b"*"
        subscribed = push + b"3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
        assert c.read_replies(3) == [
            b"*3\r\n" + subscribed + b":1\r\n:1\r\n",
            push + b"3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nmsg\r\n",
            push + b"3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nagain\r\n"]
    finally:
        c.close()


def test_client_list_info_and_disconnect(r: redis.Redis, sluice: ThreadedServer) -> None:
    p = r.pubsub()
    p.subscribe("a", "b")
    p.psubscribe("x*")
    for _ in range(3):
        _next(p)
    line = next(c for c in r.client_list() if c["cmd"] == "psubscribe")
    assert (line["flags"], line["sub"], line["psub"], line["ssub"]) == ("P", "2", "1", "0")
    assert [c["flags"] for c in r.client_list(_type="pubsub")] == ["P"]
    stats = r.info("stats")
    assert (stats["pubsub_channels"], stats["pubsub_patterns"]) == (2, 1)
    p.close()  # the connection goes: every subscription with it
    _wait_for(lambda: r.info("stats")["pubsub_channels"] == 0)
    assert r.pubsub_numpat() == 0 and r.pubsub_channels() == []


def test_acl_channel_permissions(make_server: Any) -> None:
    s = make_server()
    admin = redis.Redis(port=s.port)
    admin.acl_setuser("u", enabled=True, passwords=["+pw"], commands=["+@all"],
                      channels=["allowed*"])
    u = redis.Redis(port=s.port, username="u", password="pw")
    with pytest.raises(redis.exceptions.NoPermissionError):
        u.publish("secret", "x")
    assert u.publish("allowed.1", "x") == 0
    p = u.pubsub()
    p.subscribe("allowed.1")
    _next(p)
    with pytest.raises(redis.exceptions.NoPermissionError):
        p.subscribe("secret")
        p.get_message(timeout=10)
    # Revoking the channel closes the subscriber, as Redis does.
    admin.acl_setuser("u", enabled=True, reset_channels=True, channels=["other"])
    _wait_for(lambda: admin.pubsub_numsub("allowed.1") == [(b"allowed.1", 0)])
    p.close()
    u.close()
    admin.close()


def test_slow_subscriber_is_closed_at_the_pubsub_limit(make_server: Any) -> None:
    s = make_server("client-output-buffer-limit pubsub 1mb 0 0")
    sub = socket.create_connection(("127.0.0.1", s.port))
    sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n")  # and never reads again
    r = redis.Redis(port=s.port)
    _wait_for(lambda: r.pubsub_numsub("c") == [(b"c", 1)])
    payload = b"x" * 256 * 1024
    for _ in range(200):  # 50 MB, far more than the socket buffers hold
        if r.publish("c", payload) == 0:
            break
    _wait_for(lambda: r.pubsub_numsub("c") == [(b"c", 0)])
    assert r.info("stats")["client_output_buffer_limit_disconnections"] == 1
    assert r.ping()  # the server, and its memory, are fine
    sub.close()
    r.close()
