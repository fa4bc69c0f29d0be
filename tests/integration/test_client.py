"""CLIENT subcommands over a real socket, RESP2 and RESP3.

Pause tests use a server of their own (a pause holds every client of the server) and wait on
server state (held clients, INFO blocked_clients), never on sleeps.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sluice.commands.errors import (
    CACHING_NEEDS_TRACKING,
    CLIENT_ID_POSITIVE,
    NO_SUCH_CLIENT,
    PAUSE_MODE,
)
from tests.support import RawClient, ThreadedServer, wait_blocked, wait_until

FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
          "multi", "watch", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl",
          "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp", "lib-name",
          "lib-ver", "io-thread", "tot-net-in", "tot-net-out", "tot-cmds"]  # Redis 8.6's


def err(message: str) -> str:
    return re.escape(message.removeprefix("ERR "))


def fields(line: bytes | str) -> dict[str, str]:
    text = line.decode() if isinstance(line, bytes) else line
    return dict(part.split("=", 1) for part in text.strip().split(" "))


def raw_info(client: redis.Redis) -> dict[str, str]:
    """CLIENT INFO without redis-py's parsing (to see every field as sent)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command("CLIENT", "INFO")
        return fields(conn.read_response())
    finally:
        client.connection_pool.release(conn)


@pytest.fixture
def other(sluice: ThreadedServer) -> Iterator[redis.Redis]:
    client = sluice.client(socket_timeout=10)
    client.ping()
    yield client
    client.close()


def test_id_name(rr: redis.Redis) -> None:
    assert isinstance(rr.client_id(), int)
    assert rr.client_getname() is None
    assert rr.client_setname("worker-1") is True
    assert rr.client_getname() in ("worker-1", b"worker-1")
    with pytest.raises(redis.ResponseError, match="cannot contain spaces"):
        rr.client_setname("two words")
    assert rr.execute_command("CLIENT", "SETNAME", "") in (True, b"OK")
    assert rr.client_getname() is None


def test_client_info_fields(rr: redis.Redis) -> None:
    rr.client_setname("probe")
    rr.execute_command("SELECT", "2")
    try:
        info = raw_info(rr)
    finally:
        rr.execute_command("SELECT", "0")
    assert list(info) == FIELDS
    assert info["id"] == str(rr.client_id())
    assert info["name"] == "probe" and info["db"] == "2" and info["flags"] == "N"
    assert info["cmd"] == "client|info" and info["user"] == "default"
    assert info["resp"] == str(rr.connection_pool.connection_kwargs.get("protocol", 2))
    assert info["lib-name"] == "redis-py"  # redis-py sends CLIENT SETINFO on connect
    assert re.fullmatch(r"127\.0\.0\.1:\d+", info["addr"])
    assert int(info["fd"]) > 0


def test_client_traffic_counters(sluice: ThreadedServer) -> None:
    """tot-net-in counts the request being run; tot-net-out and tot-cmds only what is done.
    Commands count as Redis's call() counts them: EXEC's own ones do, queueing them and a
    rejected command do not, a blocked command counts once, when it times out."""
    raw = RawClient(sluice.port)
    try:
        sent = b"PING\r\nMULTI\r\nSET k v\r\nEXEC\r\nNOSUCH\r\n"
        raw.send_raw(sent)
        replies = raw.read_replies(5)
        assert raw.call("BLPOP", "nolist", "0.01") == b"*-1\r\n"
        blpop = b"*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$4\r\n0.01\r\n"
        request = b"*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n"
        raw.send_raw(request)
        info = fields(raw.read_reply().split(b"\r\n", 1)[1])
        assert info["io-thread"] == "0"
        assert info["tot-net-in"] == str(len(sent) + len(blpop) + len(request))
        assert info["tot-net-out"] == str(sum(map(len, replies)) + len(b"*-1\r\n"))
        assert info["tot-cmds"] == "5"  # PING MULTI SET EXEC BLPOP
    finally:
        raw.close()


def test_client_list(rr: redis.Redis, other: redis.Redis) -> None:
    me, them = rr.client_id(), other.client_id()
    text = _bulk(rr, "CLIENT", "LIST")
    ids = {int(fields(line)["id"]) for line in text.splitlines()}
    assert {me, them} <= ids
    only = _bulk(rr, "CLIENT", "LIST", "ID", str(them), "999999")
    assert [int(fields(line)["id"]) for line in only.splitlines()] == [them]
    assert _bulk(rr, "CLIENT", "LIST", "ID", "0") == ""
    assert _bulk(rr, "CLIENT", "LIST", "TYPE", "pubsub") == ""
    assert len(_bulk(rr, "CLIENT", "LIST", "TYPE", "normal").splitlines()) >= 2
    with pytest.raises(redis.ResponseError, match="Unknown client type 'bogus'"):
        rr.execute_command("CLIENT", "LIST", "TYPE", "bogus")
    with pytest.raises(redis.ResponseError, match="Invalid client ID"):
        rr.execute_command("CLIENT", "LIST", "ID", "x")


def _bulk(client: redis.Redis, *args: str) -> str:
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        reply = conn.read_response()
    finally:
        client.connection_pool.release(conn)
    if isinstance(reply, Exception):
        raise reply
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def test_flags_in_client_list(rr: redis.Redis, sluice: ThreadedServer) -> None:
    rr.execute_command("CLIENT", "NO-EVICT", "on")
    rr.execute_command("CLIENT", "NO-TOUCH", "on")
    assert raw_info(rr)["flags"] == "eT"
    rr.execute_command("CLIENT", "NO-EVICT", "off")
    rr.execute_command("CLIENT", "NO-TOUCH", "off")
    assert raw_info(rr)["flags"] == "N"
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rr.execute_command("CLIENT", "NO-EVICT", "maybe")
    # A client blocked in BLPOP shows b; one inside MULTI shows x.
    blocked = RawClient(sluice.port)
    blocked.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$8\r\nnothere!\r\n$1\r\n0\r\n")
    in_multi = RawClient(sluice.port)
    assert in_multi.call("MULTI") == b"+OK\r\n"
    try:
        wait_blocked(rr, 1)
        flags = {fields(line)["cmd"]: fields(line)["flags"]
                 for line in _bulk(rr, "CLIENT", "LIST").splitlines()}
        assert flags["blpop"] == "b" and flags["multi"] == "x"
    finally:
        blocked.close()
        in_multi.close()
        wait_blocked(rr, 0)


def test_kill_old_form(rr: redis.Redis, sluice: ThreadedServer) -> None:
    other = RawClient(sluice.port)
    addr = fields(other.call("CLIENT", "INFO").split(b"\r\n")[1])["addr"]
    assert rr.execute_command("CLIENT", "KILL", addr) in (True, b"OK")
    assert other.sock.recv(100) == b""  # closed
    other.close()
    with pytest.raises(redis.ResponseError, match=err(NO_SUCH_CLIENT)):
        rr.execute_command("CLIENT", "KILL", addr)


def test_kill_filters(rr: redis.Redis, sluice: ThreadedServer) -> None:
    victims = [sluice.client() for _ in range(3)]
    for v in victims:
        v.ping()
    try:
        ids = [v.client_id() for v in victims]
        assert rr.execute_command("CLIENT", "KILL", "ID", str(ids[0])) == 1
        assert rr.execute_command("CLIENT", "KILL", "ID", str(ids[0])) == 0
        assert rr.execute_command("CLIENT", "KILL", "ADDR", raw_info(victims[1])["addr"],
                                  "TYPE", "normal") == 1
        assert rr.execute_command("CLIENT", "KILL", "MAXAGE", "100000") == 0  # all are younger
        # SKIPME (yes by default) spares the caller.
        assert rr.execute_command("CLIENT", "KILL", "ID", str(rr.client_id())) == 0
        assert rr.execute_command("CLIENT", "KILL", "LADDR", "1.2.3.4:5") == 0
        assert rr.execute_command("CLIENT", "KILL", "TYPE", "master") == 0
        for argv, pattern in ((["ID", "0"], err(CLIENT_ID_POSITIVE)),
                              (["ID", "abc"], err(CLIENT_ID_POSITIVE)),
                              (["TYPE", "bogus"], "Unknown client type 'bogus'"),
                              (["USER", "nobody"], "No such user 'nobody'"),
                              (["SKIPME", "maybe"], "syntax error"),
                              (["ID", "1", "ID"], "syntax error"),
                              (["bogus", "x"], "syntax error")):
            with pytest.raises(redis.ResponseError, match=pattern):
                rr.execute_command("CLIENT", "KILL", *argv)
    finally:
        for v in victims:
            v.close()


def test_kill_self_closes_after_the_reply(sluice: ThreadedServer) -> None:
    raw = RawClient(sluice.port)
    my_id = raw.call("CLIENT", "ID").strip()[1:].decode()
    assert raw.call("CLIENT", "KILL", "ID", my_id, "SKIPME", "no") == b":1\r\n"
    assert raw.sock.recv(100) == b""  # then closed
    raw.close()


def test_kill_by_user(make_server: Any) -> None:
    server = make_server()
    a, b = server.client(), server.client()
    a.ping()
    b.ping()
    assert a.execute_command("CLIENT", "KILL", "USER", "default") == 1  # b, not a itself
    assert a.ping()
    a.close()
    b.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_reply_off_on(sluice: ThreadedServer, protocol: int) -> None:
    raw = RawClient(sluice.port, protocol)
    try:
        raw.send_raw(_cmds(["CLIENT", "REPLY", "OFF"], ["PING"], ["SET", "k", "v"],
                           ["CLIENT", "REPLY", "ON"], ["GET", "k"]))
        # Only ON answers, but the SET did run.
        assert read_exactly(raw.sock, b"+OK\r\n$1\r\nv\r\n")
    finally:
        raw.call("DEL", "k")
        raw.close()


@pytest.mark.parametrize("together", [True, False], ids=["pipelined", "one-by-one"])
def test_reply_skip_drops_exactly_the_next_reply(sluice: ThreadedServer, together: bool) -> None:
    raw = RawClient(sluice.port)
    commands = [["CLIENT", "REPLY", "SKIP"], ["ECHO", "a"], ["ECHO", "b"],
                ["CLIENT", "REPLY", "SKIP"], ["NOSUCH"], ["ECHO", "c"]]
    try:
        if together:
            raw.send_raw(_cmds(*commands))
        else:
            for argv in commands:
                raw.send_raw(_cmds(argv))
        assert read_exactly(raw.sock, b"$1\r\nb\r\n$1\r\nc\r\n")
    finally:
        raw.close()


def read_exactly(sock: socket.socket, expected: bytes) -> bool:
    """Read as many bytes as ``expected`` has; they must be exactly those."""
    got = b""
    while len(got) < len(expected):
        chunk = sock.recv(len(expected) - len(got))
        assert chunk, f"connection closed after {got!r}"
        got += chunk
    assert got == expected
    return True


def _cmds(*argvs: list[str]) -> bytes:
    out = b""
    for argv in argvs:
        parts = [a.encode() for a in argv]
        out += b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
    return out


def test_tracking_off_state(rr: redis.Redis) -> None:
    """A connection that never turned tracking on (tests/integration/test_tracking.py has
    the rest)."""
    assert rr.execute_command("CLIENT", "TRACKING", "OFF", "BCAST", "PREFIX", "a") in (True, b"OK")
    with pytest.raises(redis.ResponseError, match=err(CACHING_NEEDS_TRACKING)):
        rr.execute_command("CLIENT", "CACHING", "YES")
    assert rr.execute_command("CLIENT", "GETREDIR") == -1
    info = rr.execute_command("CLIENT", "TRACKINGINFO")
    if isinstance(info, list):
        info = dict(zip(info[::2], info[1::2], strict=True))
    assert info[b"redirect"] == -1 and list(info[b"flags"]) == [b"off"]
    assert list(info[b"prefixes"]) == []


def test_client_help(rr: redis.Redis) -> None:
    lines = rr.execute_command("CLIENT", "HELP")
    assert lines[0].startswith(b"CLIENT <subcommand>") and lines[-2] == b"HELP"
    assert b"PAUSE <timeout> [WRITE|ALL]" in lines


# -- CLIENT PAUSE ----------------------------------------------------------------------------------


@pytest.fixture
def paused_server(make_server: Any) -> ThreadedServer:
    return make_server()  # type: ignore[no-any-return]


def held(server: ThreadedServer) -> int:
    return server.call(lambda: len(server.server.pause.held))  # type: ignore[no-any-return]


def test_pause_write_holds_writes_only(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    writer = RawClient(paused_server.port)
    try:
        ctl.set("k", "old")
        with pytest.raises(redis.ResponseError, match=err(PAUSE_MODE)):
            ctl.execute_command("CLIENT", "PAUSE", "100", "bogus")
        assert ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE") in (True, b"OK")
        # The held SET keeps the pipelined GET behind it: order is preserved.
        writer.send_raw(_cmds(["SET", "k", "new"], ["GET", "k"]))
        wait_blocked(ctl, 1)  # held clients count as blocked, as in Redis
        assert ctl.get("k") == b"old"  # reads still run
        assert ctl.execute_command("CLIENT", "UNPAUSE") in (True, b"OK")
        assert read_exactly(writer.sock, b"+OK\r\n$3\r\nnew\r\n")
        wait_blocked(ctl, 0)
    finally:
        writer.close()
        ctl.close()


def test_pause_write_holds_exec_with_writes(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    reader, writer = RawClient(paused_server.port), RawClient(paused_server.port)
    try:
        for c in (reader, writer):
            assert c.call("MULTI") == b"+OK\r\n"
        assert reader.call("GET", "k") == b"+QUEUED\r\n"
        assert writer.call("SET", "k", "1") == b"+QUEUED\r\n"
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        assert reader.call("EXEC") == b"*1\r\n$-1\r\n"  # a read-only transaction runs
        writer.send_raw(_cmds(["EXEC"]))
        wait_until(lambda: held(paused_server) == 1, what="EXEC held")
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert writer.read_reply() == b"*1\r\n+OK\r\n"
    finally:
        reader.close()
        writer.close()
        ctl.close()


def test_pause_all_ends_by_itself(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    other = RawClient(paused_server.port)
    try:
        start = time.monotonic()
        ctl.execute_command("CLIENT", "PAUSE", "300", "ALL")
        other.send_raw(_cmds(["PING"]))
        wait_until(lambda: held(paused_server) == 1, what="PING held")
        assert other.read_reply() == b"+PONG\r\n"  # answered when the pause timer fires
        assert time.monotonic() - start >= 0.29
        assert held(paused_server) == 0
    finally:
        other.close()
        ctl.close()


def test_errors_are_answered_during_a_pause(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    other = RawClient(paused_server.port)
    try:
        ctl.execute_command("CLIENT", "PAUSE", "100000", "ALL")
        # Refused before the pause check (arity, unknown command): answered at once.
        assert other.call("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
        assert other.call("NOSUCH").startswith(b"-ERR unknown command 'NOSUCH'")
        other.send_raw(_cmds(["PING"]))
        wait_until(lambda: held(paused_server) == 1, what="PING held")
    finally:
        paused_server.call(paused_server.server.unpause_clients)
        other.close()
        ctl.close()


def test_held_client_that_disconnects_is_forgotten(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    gone = socket.create_connection(("127.0.0.1", paused_server.port))
    try:
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        gone.sendall(_cmds(["SET", "x", "1"]))
        wait_until(lambda: held(paused_server) == 1, what="SET held")
        gone.close()
        wait_until(lambda: held(paused_server) == 0, what="the held client forgotten")
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert ctl.exists("x") == 0
    finally:
        ctl.close()


def test_a_new_pause_never_weakens_the_current_one(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    server = paused_server.server
    assert server is not None
    try:
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        end = paused_server.call(lambda: server.pause.end)
        ctl.execute_command("CLIENT", "PAUSE", "10", "WRITE")
        assert paused_server.call(lambda: server.pause.end) == end
        assert paused_server.call(lambda: server.pause.mode) == 1
    finally:
        ctl.execute_command("CLIENT", "UNPAUSE")
        ctl.close()


def test_pause_keeps_expired_keys_until_it_ends(paused_server: ThreadedServer) -> None:
    """Redis's pause unit: during CLIENT PAUSE an expired key reads as absent but is not
    deleted (no passive or active expiry: expired_keys does not move, DBSIZE still counts
    it); after UNPAUSE the next lookups delete it."""
    ctl = paused_server.client(socket_timeout=10)
    try:
        expired = ctl.info("stats")["expired_keys"]
        pipe = ctl.pipeline(transaction=True)
        pipe.set("a", "1", px=10).set("b", "2", px=10)
        pipe.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        pipe.execute()
        wait_until(lambda: ctl.get("a") is None and ctl.get("b") is None,
                   what="the keys logically expired")
        assert ctl.exists("a", "b") == 0 and ctl.dbsize() == 2
        assert ctl.info("stats")["expired_keys"] == expired
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert ctl.get("a") is None and ctl.get("b") is None
        assert ctl.info("stats")["expired_keys"] == expired + 2 and ctl.dbsize() == 0
    finally:
        ctl.execute_command("CLIENT", "UNPAUSE")
        ctl.close()


def test_randomkey_answers_an_expired_key_during_a_pause(paused_server: ThreadedServer) -> None:
    ctl = paused_server.client(socket_timeout=10)
    try:
        pipe = ctl.pipeline(transaction=True)
        pipe.set("only", "v", px=5).execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        pipe.execute()
        wait_until(lambda: ctl.get("only") is None, what="the key logically expired")
        assert ctl.randomkey() == b"only"  # Redis's dbRandomKey gives up looking for a live one
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert ctl.randomkey() is None
    finally:
        ctl.execute_command("CLIENT", "UNPAUSE")
        ctl.close()


@pytest.mark.parametrize("argv", [["PUBLISH", "ch", "m"], ["SPUBLISH", "ch", "m"],
                                  ["PFCOUNT", "hll"]])
def test_pause_write_holds_commands_that_may_replicate(paused_server: ThreadedServer,
                                                       argv: list[str]) -> None:
    """Redis holds commands flagged may_replicate (a publish, a PFCOUNT that may rewrite its
    key) during CLIENT PAUSE WRITE, though they are not writes."""
    ctl = paused_server.client(socket_timeout=10)
    other = RawClient(paused_server.port)
    try:
        ctl.pfadd("hll", "x")
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        other.send_raw(_cmds(argv))
        wait_until(lambda: held(paused_server) == 1, what=f"{argv[0]} held")
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert other.read_reply() == (b":1\r\n" if argv[0] == "PFCOUNT" else b":0\r\n")
    finally:
        ctl.execute_command("CLIENT", "UNPAUSE")
        other.close()
        ctl.close()


def test_client_kill_maxage_kills_clients_connected_longer(paused_server: ThreadedServer) -> None:
    """CLIENT KILL MAXAGE n: clients connected more than n seconds (Redis compares whole
    seconds). The old client's connection time is moved back, rather than waiting."""
    ctl = paused_server.client(socket_timeout=10)
    old, young = RawClient(paused_server.port), RawClient(paused_server.port)
    try:
        old_id = int(old.call("CLIENT", "ID")[1:-2])
        young_id = int(young.call("CLIENT", "ID")[1:-2])
        server = paused_server.server
        assert server is not None

        def age(client_id: int, seconds: int) -> None:
            server.clients[client_id].created_ms -= seconds * 1000

        paused_server.call(lambda: age(old_id, 20))
        assert ctl.execute_command("CLIENT", "KILL", "MAXAGE", "30") == 0
        assert ctl.execute_command("CLIENT", "KILL", "MAXAGE", "10") == 1
        ids = {int(fields(line)["id"]) for line in ctl.execute_command("CLIENT", "LIST").splitlines()}
        assert old_id not in ids and young_id in ids
    finally:
        old.close()
        young.close()
        ctl.close()
