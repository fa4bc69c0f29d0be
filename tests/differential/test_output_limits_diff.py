"""Output buffer limits as redis-server 8.6.3 applies them (networking.c's reply accounting):
a client is closed once the replies it has not received pass its class's hard limit, and it
is sent none of them, whether the replies come from one command, a pipeline read in one go,
or a transaction (whose commands all run). CLIENT LIST's ``omem`` shows what a subscriber
has not taken. Repeating random picks with a huge count stop once the limit is passed.

Each scenario runs on both servers; what a client received and the server's counters are
compared.
"""

from __future__ import annotations

import socket

import pytest

from tests.support import ProcessServer, ThreadedServer, require_redis_server, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(60)]


def _received(port: int, payload: bytes) -> bytes:
    """Send ``payload`` in one write; everything received until the server closes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(payload)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    sock.close()
    return got


def _inline(*commands: str) -> bytes:
    return b"".join(c.encode() + b"\r\n" for c in commands)


def test_a_reply_over_the_hard_limit_is_not_sent(fresh_servers: tuple[ThreadedServer, ProcessServer]
                                                 ) -> None:
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.rpush("mylist", *["x" * 1000] * 150)
        r.config_set("client-output-buffer-limit", "normal 100000 0 0")
        got = _received(server.port, _inline("LRANGE mylist 0 -1"))
        stats = r.info("stats")
        outcomes.append((got, stats["client_output_buffer_limit_disconnections"]))
    assert outcomes[0] == outcomes[1] == (b"", 1)


def test_a_pipeline_read_at_once_is_closed_unanswered(fresh_servers: tuple[ThreadedServer, ProcessServer]
                                                      ) -> None:
    """Fifteen 10 KB replies among small ones: past 100 KB before the read is served, so
    none is sent (Sluice would otherwise hand the first 64 KB to the socket mid-pipeline)."""
    pipeline = _inline(*[c for i in range(15)
                         for c in (f"SET {i} {i}", f"GET {i}", f"DEL {i}", "GET bigkey")])
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.set("bigkey", "x" * 10_000)
        r.config_set("client-output-buffer-limit", "normal 100000 0 0")
        outcomes.append(_received(server.port, pipeline))
    assert outcomes[0] == outcomes[1] == b""


def test_a_transaction_runs_whole_though_its_reply_is_dropped(
        fresh_servers: tuple[ThreadedServer, ProcessServer]) -> None:
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.rpush("mylist2", *["x" * 1000] * 150)
        r.set("k1", "v1")
        r.config_set("client-output-buffer-limit", "normal 100000 0 0")
        got = _received(server.port, _inline("MULTI", "SET k2 v2", "LRANGE mylist2 0 -1",
                                             "SET k3 v3", "DEL k1", "EXEC"))
        outcomes.append((got, r.mget("k1", "k2", "k3")))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] == (b"", [None, b"v2", b"v3"])  # read at once: nothing was sent


@pytest.mark.parametrize("command", ["HRANDFIELD h -999999999", "SRANDMEMBER s -999999999",
                                     "ZRANDMEMBER z -999999999 WITHSCORES"])
def test_a_huge_repeating_pick_stops_at_the_limit(fresh_servers: tuple[ThreadedServer, ProcessServer],
                                                  command: str) -> None:
    """Without the limit this reply would hold a billion elements: both servers stop past
    the limit and close the client, unanswered."""
    for server in fresh_servers:
        r = server.client()
        r.hset("h", "a", "b")
        r.sadd("s", "a")
        r.zadd("z", {"a": 1})
        r.config_set("client-output-buffer-limit", "normal 1000000 0 0")
        assert _received(server.port, _inline(command)) == b""
        assert r.info("stats")["client_output_buffer_limit_disconnections"] == 1


def test_client_list_shows_what_a_subscriber_has_not_taken(
        fresh_servers: tuple[ThreadedServer, ProcessServer]) -> None:
    """A subscriber that never reads: its omem grows with the messages published, and the
    pubsub hard limit closes it, on both servers."""
    for server in fresh_servers:
        r = server.client()
        r.config_set("client-output-buffer-limit", "pubsub 100000 0 0")
        sub = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sub.sendall(b"CLIENT SETNAME lazy\r\nSUBSCRIBE foo\r\n")
        wait_until(lambda r=r: r.pubsub_numsub("foo")[0][1] == 1, what="subscribed")
        highest = 0
        while True:
            r.publish("foo", "bar" * 50)
            line = [c for c in r.client_list() if c["name"] == "lazy"]
            if not line:
                break
            highest = max(highest, int(line[0]["omem"]))
        assert 50_000 < highest < 100_000, (server, highest)
        assert r.info("stats")["client_output_buffer_limit_disconnections"] == 1
        sub.close()


def test_query_buffer_limit_disconnections_are_counted(
        fresh_servers: tuple[ThreadedServer, ProcessServer]) -> None:
    """A request that does not fit client-query-buffer-limit closes the client after the
    read that passes it, before it runs, on both servers."""
    value = b"a" * 1024 * 1024
    request = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$%d\r\n%s\r\n" % (len(value), value)
    for server in fresh_servers:
        r = server.client()
        r.config_set("client-query-buffer-limit", 1024 * 1024)
        try:
            got = _received(server.port, request)
        except (ConnectionResetError, BrokenPipeError):  # closed while still sending
            got = b""
        assert got == b""
        assert r.info("stats")["client_query_buffer_limit_disconnections"] == 1
        assert r.exists("key") == 0


@pytest.mark.parametrize("count", [481, 482])
def test_an_unauthenticated_client_holds_16_kb_of_output(count: int) -> None:
    """Before it authenticates a client may not pile up replies (CVE-2025-21605): 481
    NOAUTH errors read at once (16,354 bytes) fit Redis's 16 KB reply buffer and are all
    sent; 482 spill past it and the client is closed unanswered, counted as an output
    buffer limit disconnection. Then, once authenticated, the normal class's rule holds."""
    require_redis_server()
    outcomes = []
    for server in (ThreadedServer(["requirepass secret"]).start(),
                   ProcessServer("redis", ["--requirepass", "secret"]).start()):
        try:
            got = _received(server.port, b"SET x 5\r\n" * count + b"QUIT\r\n")
            authed = _received(server.port, b"AUTH secret\r\n" + b"SET x 5\r\n" * count
                               + b"QUIT\r\n")
            r = server.client(password="secret")
            outcomes.append((got.count(b"-NOAUTH"), authed.count(b"+OK"),
                             r.info("stats")["client_output_buffer_limit_disconnections"]))
            r.close()
        finally:
            server.stop()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] == ((count, count + 2, 0) if count == 481 else (0, count + 2, 1))
