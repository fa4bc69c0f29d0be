"""CONFIG, INFO, SLOWLOG, LATENCY, MONITOR, SHUTDOWN, DEBUG and the scripting stubs over a real
socket (RESP2 and RESP3 where the reply shape depends on it).

Tests that change settings run on a server of their own (``admin``), so the shared session
server keeps its defaults.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sluice.commands.errors import (
    DEBUG_NOT_ALLOWED,
    NO_SHUTDOWN,
    SLOWLOG_COUNT,
)
from sluice.storage.keyspace import FakeClock
from tests.support import RawClient, ThreadedServer, wait_until


@pytest.fixture(scope="module")
def admin() -> Iterator[ThreadedServer]:
    server = ThreadedServer(["enable-debug-command yes"], clock=FakeClock()).start()
    yield server
    server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def ar(request: pytest.FixtureRequest, admin: ThreadedServer) -> Iterator[redis.Redis]:
    client = redis.Redis(port=admin.port, protocol=request.param, socket_timeout=10)
    yield client
    client.flushall()
    client.close()


def read_exactly(sock: socket.socket, expected: bytes) -> bool:
    """Read as many bytes as ``expected`` has (the reply must then be exactly that)."""
    got = b""
    while len(got) < len(expected):
        chunk = sock.recv(len(expected) - len(got))
        assert chunk, f"connection closed after {got!r}"
        got += chunk
    assert got == expected
    return True


def err(message: str) -> str:
    """A redis-py error text matcher for one of our constants."""
    return re.escape(message.removeprefix("ERR "))


# -- CONFIG ----------------------------------------------------------------------------------------


def test_config_get_set(ar: redis.Redis) -> None:
    assert ar.config_get("maxclients") == {"maxclients": "10000"}
    assert ar.config_get("slowlog-*") == {"slowlog-log-slower-than": "10000",
                                          "slowlog-max-len": "128"}
    assert ar.config_get("nosuch") == {}
    assert ar.config_set("maxclients", 500) is True
    try:
        assert ar.config_get("maxclients") == {"maxclients": "500"}
        # Several pairs: all are checked before any changes.
        with pytest.raises(redis.ResponseError, match="argument 'hz'"):
            ar.execute_command("CONFIG", "SET", "maxclients", "600", "hz", "abc")
        assert ar.config_get("maxclients") == {"maxclients": "500"}
    finally:
        ar.config_set("maxclients", 10000)


def test_config_errors(ar: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="syntax error"):
        ar.execute_command("CONFIG", "SET", "hz", "10", "maxclients")
    with pytest.raises(redis.ResponseError, match="duplicate parameter"):
        ar.execute_command("CONFIG", "SET", "hz", "10", "hz", "11")
    with pytest.raises(redis.ResponseError, match="can't set protected config"):
        ar.config_set("dir", "/tmp")
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        ar.config_set("enable-debug-command", "no")
    with pytest.raises(redis.ResponseError, match="running without a config file"):
        ar.execute_command("CONFIG", "REWRITE")


def test_hz_is_clamped(ar: redis.Redis) -> None:
    try:
        ar.config_set("hz", 1000)
        assert ar.config_get("hz") == {"hz": "500"}
        ar.config_set("hz", 0)
        assert ar.config_get("hz") == {"hz": "1"}
        assert ar.info("server")["hz"] == 1
    finally:
        ar.config_set("hz", 10)


def test_proto_max_bulk_len_applies_to_open_connections(admin: ThreadedServer) -> None:
    ctl = admin.client()
    raw = RawClient(admin.port)
    try:
        assert raw.call("ECHO", "x" * 2_000_000).startswith(b"$2000000\r\n")
        ctl.config_set("proto-max-bulk-len", "1mb")
        assert admin.call(lambda: {c.reader.max_bulk_len for c in admin.server.clients.values()}
                          ) == {1024 * 1024}
        # An inline PING first makes the reader check lengths as it parses the header.
        raw.send_raw(b"PING\r\n*2\r\n$4\r\nECHO\r\n$2000000\r\n")
        assert read_exactly(raw.sock, b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n")
    finally:
        ctl.config_set("proto-max-bulk-len", "512mb")
        raw.close()
        ctl.close()


def test_maxclients_applies_to_new_connections(admin: ThreadedServer) -> None:
    ctl = admin.client()
    try:
        connected = ctl.info("clients")["connected_clients"]
        ctl.config_set("maxclients", connected)
        sock = socket.create_connection(("127.0.0.1", admin.port), timeout=10)
        assert sock.recv(100) == b"-ERR max number of clients reached\r\n"
        sock.close()
    finally:
        ctl.config_set("maxclients", 10000)
        ctl.close()


def test_protected_configs_can_be_allowed(make_server: Any) -> None:
    server = make_server("enable-protected-configs yes")
    client = server.client()
    assert client.config_get("dbfilename") == {"dbfilename": "dump.rdb"}
    assert client.config_set("dbfilename", "other.rdb") is True
    assert client.config_get("dbfilename") == {"dbfilename": "other.rdb"}
    client.close()


def test_resetstat_zeroes_commandstats_and_errorstats(ar: redis.Redis) -> None:
    ar.config_resetstat()
    ar.set("k", "v")
    with pytest.raises(redis.ResponseError):
        ar.execute_command("GET")  # arity: a rejected call
    with pytest.raises(redis.ResponseError):
        ar.execute_command("INCR", "k")  # runs and fails
    with pytest.raises(redis.ResponseError):
        ar.execute_command("NOSUCH")
    raw = RawClient(ar.connection_pool.connection_kwargs["port"])
    info = raw.call("INFO", "commandstats").decode()
    assert re.search(r"cmdstat_get:calls=0,usec=0,usec_per_call=0\.00,rejected_calls=1,"
                     r"failed_calls=0\r\n", info)
    assert re.search(r"cmdstat_incr:calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,"
                     r"failed_calls=1\r\n", info)
    errors = raw.call("INFO", "errorstats").decode()
    assert "errorstat_ERR:count=3\r\n" in errors
    assert ar.info("stats")["total_error_replies"] == 3
    ar.config_resetstat()
    info = raw.call("INFO", "commandstats").decode()
    assert "cmdstat_get" not in info and "cmdstat_incr" not in info
    assert "cmdstat_config|resetstat:calls=1," in info  # RESETSTAT itself, counted after it ran
    assert raw.call("INFO", "errorstats") == b"$14\r\n# Errorstats\r\n\r\n"
    assert ar.info("stats")["total_commands_processed"] == 3  # RESETSTAT and the two INFOs
    raw.close()


# -- INFO ------------------------------------------------------------------------------------------


def sections(text: str) -> list[str]:
    return re.findall(r"^# (\w+)\r$", text, re.M)


def test_info_sections(admin: ThreadedServer) -> None:
    raw = RawClient(admin.port)
    try:
        default = raw.call("INFO").decode()
        # Redis 8.6's sections (Threads, Hotkeys and Keysizes are new since 7.0).
        assert sections(default) == ["Server", "Clients", "Memory", "Persistence", "Threads",
                                     "Stats", "Replication", "CPU", "Hotkeys", "Modules",
                                     "Errorstats", "Cluster", "Keyspace", "Keysizes"]
        assert sections(raw.call("INFO", "everything").decode()) == [
            "Server", "Clients", "Memory", "Persistence", "Threads", "Stats", "Replication",
            "CPU", "Hotkeys", "Modules", "Commandstats", "Errorstats", "Latencystats",
            "Cluster", "Keyspace", "Keysizes"]
        assert sections(raw.call("INFO", "module_list").decode()) == ["Modules"]
        # Always in Redis's order, each once, whatever was asked.
        assert sections(raw.call("INFO", "keyspace", "CPU", "server", "cpu").decode()) == [
            "Server", "CPU", "Keyspace"]
        assert raw.call("INFO", "nosuch") == b"$0\r\n\r\n"
        assert "\r\ncluster_enabled:0\r\n" in default
        assert re.search(r"\r\nredis_version:\d+\.\d+\.\d+\r\n", default)
        assert re.search(r"\r\nused_memory_human:[\d.]+[BKMG]\r\n", default)
    finally:
        raw.close()


def test_info_listener_and_threads(admin: ThreadedServer) -> None:
    raw = RawClient(admin.port)
    try:
        server = raw.call("INFO", "server").decode()
        assert f"\r\nlistener0:name=tcp,bind=127.0.0.1,port={admin.port}\r\n" in server
        # One thread serves every client: Redis's main thread, io_thread_0.
        text = raw.call("INFO", "threads", "stats").decode()
        m = re.search(r"\r\nio_thread_0:clients=(\d+),reads=(\d+),writes=(\d+)\r\n", text)
        assert m is not None and int(m[1]) >= 1
        assert f"\r\ntotal_reads_processed:{m[2]}\r\n" in text and int(m[2]) >= 2
        assert f"\r\ntotal_writes_processed:{m[3]}\r\n" in text and int(m[3]) >= 1
    finally:
        raw.close()


def test_info_counts_keys_the_active_cycle_expired(sluice: ThreadedServer) -> None:
    raw = RawClient(sluice.port)

    def stat(name: str) -> int:
        m = re.search(rf"\r\n{name}:(\d+)\r".encode(), raw.call("INFO", "stats"))
        assert m is not None, name
        return int(m[1])

    try:
        total, active = stat("expired_keys"), stat("expired_keys_active")
        raw.call("SET", "soon-gone", "v", "PX", "1")  # never read: only the cycle finds it
        wait_until(lambda: stat("expired_keys_active") > active, what="the active expiry cycle")
        assert stat("expired_keys") > total  # expired_keys counts them too
    finally:
        raw.close()


def test_info_keyspace_avg_ttl(ar: redis.Redis) -> None:
    ar.set("a", 1)
    ar.set("b", 2, px=100_000)
    line = ar.info("keyspace")["db0"]
    assert line["keys"] == 2 and line["expires"] == 1 and 0 < line["avg_ttl"] <= 100_000


# -- SLOWLOG ---------------------------------------------------------------------------------------


def test_slowlog(ar: redis.Redis) -> None:
    ar.slowlog_reset()
    ar.config_set("slowlog-log-slower-than", 0)
    try:
        ar.set("k", "x" * 200)
        ar.execute_command("RPUSH", "l", *[str(i) for i in range(40)])
        with pytest.raises(redis.RedisError):
            ar.execute_command("AUTH", "secret-password")
        entries = ar.execute_command("SLOWLOG", "GET", "-1")
    finally:
        ar.config_set("slowlog-log-slower-than", 10000)
    by_name = {e[3][0].upper(): e for e in entries}
    auth = by_name[b"AUTH"]
    assert auth[3] == [b"AUTH", b"(redacted)"]  # passwords never reach the slow log
    set_entry = by_name[b"SET"]
    assert set_entry[3] == [b"SET", b"k", b"x" * 128 + b"... (72 more bytes)"]
    assert isinstance(set_entry[0], int) and isinstance(set_entry[2], int)
    assert re.fullmatch(rb"127\.0\.0\.1:\d+", set_entry[4])
    rpush = by_name[b"RPUSH"][3]
    assert len(rpush) == 32 and rpush[-1] == b"... (11 more arguments)"
    ids = [e[0] for e in entries]
    assert ids == sorted(ids, reverse=True)  # newest first
    assert ar.execute_command("SLOWLOG", "LEN") == len(entries) + 1  # the GET itself
    assert len(ar.execute_command("SLOWLOG", "GET", "1")) == 1
    with pytest.raises(redis.ResponseError, match=err(SLOWLOG_COUNT)):
        ar.execute_command("SLOWLOG", "GET", "-2")
    assert ar.execute_command("SLOWLOG", "RESET") in (True, b"OK")
    assert ar.execute_command("SLOWLOG", "LEN") in (0, 1)  # the RESET itself may be logged


def test_slowlog_max_len(ar: redis.Redis) -> None:
    ar.config_set("slowlog-max-len", 2)
    ar.config_set("slowlog-log-slower-than", 0)
    try:
        for _ in range(5):
            ar.ping()
        assert ar.execute_command("SLOWLOG", "LEN") == 2
    finally:
        ar.config_set("slowlog-log-slower-than", 10000)
        ar.config_set("slowlog-max-len", 128)
        ar.slowlog_reset()


# -- LATENCY ---------------------------------------------------------------------------------------


def test_latency_monitor(ar: redis.Redis) -> None:
    ar.execute_command("LATENCY", "RESET")
    assert ar.execute_command("LATENCY", "LATEST") == []
    assert b"off" in _text(ar.execute_command("LATENCY", "DOCTOR"))
    ar.config_set("latency-monitor-threshold", 5)
    try:
        ar.execute_command("DEBUG", "SLEEP", "0.02")
    finally:
        ar.config_set("latency-monitor-threshold", 0)
    (event,) = ar.execute_command("LATENCY", "LATEST")
    assert event[0] == b"command" and event[2] >= 20 and event[3] >= 20
    (sample,) = ar.execute_command("LATENCY", "HISTORY", "command")
    assert sample[0] == event[1] and sample[1] == event[2]
    assert b"command - high" in _text(ar.execute_command("LATENCY", "GRAPH", "command"))
    with pytest.raises(redis.ResponseError, match="No samples available for event 'nosuch'"):
        ar.execute_command("LATENCY", "GRAPH", "nosuch")
    histo = ar.execute_command("LATENCY", "HISTOGRAM", "latency|graph", "nosuch")
    histo = histo if isinstance(histo, dict) else dict(zip(histo[::2], histo[1::2], strict=True))
    assert list(histo) == [b"latency|graph"]  # called twice above; unknown names skipped
    assert ar.execute_command("LATENCY", "RESET", "nosuch", "command") == 1
    assert ar.execute_command("LATENCY", "LATEST") == []


def _text(reply: Any) -> bytes:
    return reply if isinstance(reply, bytes) else str(reply).encode()


# -- MONITOR ---------------------------------------------------------------------------------------


def test_monitor_lines(sluice: ThreadedServer) -> None:
    mon = socket.create_connection(("127.0.0.1", sluice.port), timeout=10)
    mon.sendall(b"MONITOR\r\n")
    assert mon.recv(100) == b"+OK\r\n"
    client = RawClient(sluice.port)
    try:
        client.call("SET", b'a "b"\\', b"\x00\xff\n\t\x07")
        client.call("CONFIG", "GET", "hz")  # admin commands are never shown
        client.call("AUTH", "pw")
        client.call("SELECT", "3")
        client.call("PING")
        buf = b""
        while buf.count(b"\r\n") < 4:
            chunk = mon.recv(4096)
            assert chunk, "MONITOR connection closed"
            buf += chunk
    finally:
        client.call("SELECT", "0")
        client.close()
        mon.close()
    lines = buf.split(b"\r\n")[:4]
    pattern = rb"\+\d{10}\.\d{6} \[%s 127\.0\.0\.1:\d+\] (.*)"
    assert re.fullmatch(pattern % b"0", lines[0]).group(1) == (
        rb'"SET" "a \"b\"\\" "\x00\xff\n\t\a"')
    assert re.fullmatch(pattern % b"0", lines[1]).group(1) == b'"AUTH" "(redacted)"'
    # Fed after it ran: SELECT shows the database it selected, as on Redis.
    assert re.fullmatch(pattern % b"3", lines[2]).group(1) == b'"SELECT" "3"'
    assert re.fullmatch(pattern % b"3", lines[3]).group(1) == b'"PING"'


# -- SHUTDOWN --------------------------------------------------------------------------------------


def test_shutdown(make_server: Any) -> None:
    server = make_server()
    client = server.client(socket_timeout=10)
    with pytest.raises(redis.ResponseError, match=err(NO_SHUTDOWN)):
        client.execute_command("SHUTDOWN", "ABORT")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        client.execute_command("SHUTDOWN", "NOSAVE", "SAVE")
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("MULTI")
    pipe.execute_command("SHUTDOWN")
    pipe.execute_command("DISCARD")
    replies = pipe.execute(raise_on_error=False)
    assert "not allowed inside a transaction" in str(replies[1])
    with pytest.raises(redis.ConnectionError):
        client.execute_command("SHUTDOWN", "NOSAVE")
    wait_until(lambda: not server._thread.is_alive(), what="the server thread to end")


# -- DEBUG -----------------------------------------------------------------------------------------


def test_debug_is_refused_by_default(r: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match=err(DEBUG_NOT_ALLOWED)):
        r.execute_command("DEBUG", "SLEEP", "0")


@pytest.mark.parametrize(("kind", "resp2", "resp3"), [
    ("string", b"$11\r\nHello World\r\n", b"$11\r\nHello World\r\n"),
    ("integer", b":12345\r\n", b":12345\r\n"),
    ("double", b"$5\r\n3.141\r\n", b",3.141\r\n"),
    ("bignum", b"$37\r\n1234567999999999999999999999999999999\r\n",
     b"(1234567999999999999999999999999999999\r\n"),
    ("null", b"$-1\r\n", b"_\r\n"),
    ("array", b"*3\r\n:0\r\n:1\r\n:2\r\n", b"*3\r\n:0\r\n:1\r\n:2\r\n"),
    ("set", b"*3\r\n:0\r\n:1\r\n:2\r\n", b"~3\r\n:0\r\n:1\r\n:2\r\n"),
    ("map", b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n", b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"),
    ("attrib", b"$39\r\nSome real reply following the attribute\r\n",
     b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
     b"$39\r\nSome real reply following the attribute\r\n"),
    ("push", b"-ERR RESP2 is not supported by this command\r\n",
     b"$40\r\nSome real reply following the push reply\r\n>2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"),
    ("verbatim", b"$25\r\nThis is a verbatim\nstring\r\n", b"=29\r\ntxt:This is a verbatim\nstring\r\n"),
    ("true", b":1\r\n", b"#t\r\n"),
    ("false", b":0\r\n", b"#f\r\n"),
])
def test_debug_protocol(admin: ThreadedServer, kind: str, resp2: bytes, resp3: bytes) -> None:
    for protocol, expected in ((2, resp2), (3, resp3)):
        client = RawClient(admin.port, protocol)
        try:
            # Read by length: an attribute, or a push followed by a reply, is not one reply.
            client.send_raw(b"*3\r\n$5\r\nDEBUG\r\n$8\r\nPROTOCOL\r\n$%d\r\n%s\r\n"
                            % (len(kind), kind.encode()))
            assert read_exactly(client.sock, expected)
        finally:
            client.close()


def test_debug_protocol_through_redis_py(admin: ThreadedServer) -> None:
    client = redis.Redis(port=admin.port, protocol=3)
    try:
        assert client.execute_command("DEBUG", "PROTOCOL", "map") == {0: False, 1: True, 2: False}
        assert client.execute_command("DEBUG", "PROTOCOL", "double") == 3.141
        assert client.execute_command("DEBUG", "PROTOCOL", "true") is True
    finally:
        client.close()


def test_debug_subcommands(ar: redis.Redis, admin: ThreadedServer) -> None:
    assert ar.execute_command("DEBUG", "LOG", "hello from a test") in (True, b"OK")
    assert ar.execute_command("DEBUG", "SLEEP", "0") in (True, b"OK")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE custom$"):
        ar.execute_command("DEBUG", "ERROR", "WRONGTYPE custom")
    with pytest.raises(redis.ResponseError, match="no such key"):
        ar.execute_command("DEBUG", "OBJECT", "nokey")
    ar.set("k", "12345")
    obj = _text(ar.execute_command("DEBUG", "OBJECT", "k"))
    assert re.match(rb"Value at:0x[0-9a-f]+ refcount:\d+ encoding:int serializedlength:\d+ "
                    rb"lru:\d+ lru_seconds_idle:\d+", obj)
    assert ar.execute_command("DEBUG", "POPULATE", "3", "p", "10") in (True, b"OK")
    assert ar.get("p:2") == b"value:2\x00\x00\x00"
    assert ar.execute_command("DEBUG", "POPULATE", "4") in (True, b"OK")
    assert ar.get("key:3") == b"value:3" and ar.get("k") == b"12345"
    run_id = ar.info("server")["run_id"]
    ar.execute_command("DEBUG", "CHANGE-REPL-ID")
    assert ar.info("server")["run_id"] != run_id
    with pytest.raises(redis.ResponseError, match="unknown subcommand or wrong number of "
                                                  "arguments for 'JMAP'. Try DEBUG HELP."):
        ar.execute_command("DEBUG", "JMAP")
    help_lines = ar.execute_command("DEBUG", "HELP")
    assert help_lines[0].startswith(b"DEBUG <subcommand>") and help_lines[-2] == b"HELP"


def _debug_field(r: redis.Redis, key: str, name: bytes) -> bytes:
    fields = dict(f.split(b":", 1) for f in _text(r.execute_command("DEBUG", "OBJECT", key))
                  .split(b" ")[1:] if b":" in f)
    return fields[name]


def test_debug_object_lru_is_the_keys_access_time(make_server: Any) -> None:
    """lru: is the key's own LRU clock word (it was the current time): a read under
    CLIENT NO-TOUCH leaves it, a plain read moves it (Tcl introspection-2's no-touch test)."""
    clock = FakeClock()
    s = make_server("enable-debug-command yes", clock=clock)
    r = s.client()
    r.set("foo", "bar")
    before = int(_debug_field(r, "foo", b"lru"))
    clock.advance(5_000)
    s.call(s.server.keyspace.update_lru_clock)  # what the cron does every tick
    r.client_no_touch("ON")
    r.get("foo")
    assert int(_debug_field(r, "foo", b"lru")) == before
    assert int(_debug_field(r, "foo", b"lru_seconds_idle")) == 5
    r.client_no_touch("OFF")
    r.get("foo")
    assert int(_debug_field(r, "foo", b"lru")) == before + 5


def test_debug_set_active_expire(admin: ThreadedServer) -> None:
    client = admin.client()
    server = admin.server
    assert server is not None
    clock = admin.clock
    try:
        client.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        client.set("gone", "v", px=10)
        clock.advance(1000)
        admin.call(server.cron)
        assert admin.call(lambda: b"gone" in server.keyspace[0].data)  # left alone
        client.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        admin.call(server.cron)
        assert not admin.call(lambda: b"gone" in server.keyspace[0].data)
    finally:
        client.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        client.close()


def test_debug_pause_cron(admin: ThreadedServer) -> None:
    """PAUSE-CRON 1: the cron still fires but does none of its work (Redis's pause_cron,
    which unit/querybuf and unit/client-eviction use to hold the cron still)."""
    client = admin.client()
    server = admin.server
    assert server is not None
    try:
        client.execute_command("DEBUG", "PAUSE-CRON", "1")
        loops = admin.call(lambda: server.cronloops)
        client.set("gone", "v", px=10)
        admin.clock.advance(1000)
        admin.call(server.cron)
        assert admin.call(lambda: b"gone" in server.keyspace[0].data)  # not expired
        assert admin.call(lambda: server.cronloops) == loops
        client.execute_command("DEBUG", "PAUSE-CRON", "0")
        admin.call(server.cron)
        assert not admin.call(lambda: b"gone" in server.keyspace[0].data)
        assert admin.call(lambda: server.cronloops) > loops
    finally:
        client.execute_command("DEBUG", "PAUSE-CRON", "0")
        client.close()


# -- scripting, and what is not a command ----------------------------------------------------------


def test_script_flush_modes(rr: redis.Redis) -> None:
    """Scripting itself is tested in test_scripting.py; the flush modes stay here."""
    assert rr.execute_command("SCRIPT", "FLUSH") in (True, b"OK")
    assert rr.execute_command("SCRIPT", "FLUSH", "ASYNC") in (True, b"OK")
    assert rr.execute_command("FUNCTION", "FLUSH", "SYNC") in (True, b"OK")
    with pytest.raises(redis.ResponseError, match="only support SYNC|ASYNC"):
        rr.execute_command("SCRIPT", "FLUSH", "bogus")


@pytest.mark.parametrize("request_bytes", [
    b"PING\r\nPOST / HTTP/1.1\r\nHost: example\r\n\r\n",
    b"*1\r\n$5\r\nhost:\r\n",
])
def test_http_request_closes_the_connection_silently(sluice: ThreadedServer,
                                                     request_bytes: bytes) -> None:
    sock = socket.create_connection(("127.0.0.1", sluice.port), timeout=10)
    sock.sendall(request_bytes)
    assert sock.recv(100) == b""  # closed, and even the PING before it got no reply
    sock.close()


def test_unknown_commands_just_error(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="unknown command 'DPING'"):
        rr.execute_command("DPING")
    assert rr.ping()
