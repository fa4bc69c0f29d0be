"""A hostile-client battery: malformed frames, oversize requests, unauthenticated floods, slow
readers that never read, connection storms up to maxclients, idle timeouts, keepalive.

Every test asserts the same three things: the server stays up, other clients keep getting
prompt answers, and no acknowledged write is lost. Waiting is on server state (INFO, the
server's own structures via ``ThreadedServer.call``), never on sleeps.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sluice.commands.errors import MAX_CLIENTS, NOAUTH
from tests.support import ProcessServer, ThreadedServer, require_redis_server, wait_until

pytestmark = pytest.mark.timeout(60)

Make = Callable[..., ThreadedServer]
PING = b"*1\r\n$4\r\nPING\r\n"
PROBE = b"*2\r\n$4\r\nECHO\r\n$15\r\nend-of-exchange\r\n"
PROBE_REPLY = b"$15\r\nend-of-exchange\r\n"
ONE_READ = 16384  # redis-server's read size (PROTO_IOBUF_LEN)
ANSWER_TIMEOUT = 20.0  # an exchange that gets an answer gets it at once; this is for load


def client(s: ThreadedServer, **kw: object) -> redis.Redis:
    return redis.Redis(port=s.port, retry=Retry(NoBackoff(), 0), socket_timeout=10, **kw)


def exchange(port: int, payload: bytes, timeout: float = 2.0) -> bytes:
    """Send ``payload`` then an ECHO probe; return everything read until EOF (or '<open>' +
    data when the connection is still open after the probe's answer). The probe's answer
    can't be mistaken for a reply to the payload (a payload may hold a PING of its own)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if len(payload) < ONE_READ:
            # One write, so that the server reads payload and probe in one read: how a server
            # answers may depend on where a read ends (for ``*2147483647\r\n$1\r\nx\r\n``
            # redis-server 8.6.3 answers the probe's '*' with "expected '$'" when it comes in
            # the same read, and nothing when it comes in a later one), and two writes make
            # that a race.
            s.sendall(payload + PROBE)
        else:
            s.sendall(payload)
            try:
                s.sendall(PROBE)
            except OSError:
                pass
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:  # closed with our probe unread: a reset, not a FIN
                return out + b"<EOF>"
            except TimeoutError:
                break
            if not chunk:
                return out + b"<EOF>"
            out += chunk
            if out.endswith(PROBE_REPLY):
                return out + b"<open>"
        return out + b"<timeout>"
    finally:
        s.close()


def assert_healthy(s: ThreadedServer, key: str = "canary") -> None:
    """Another client gets a prompt answer, and the canary write is still there."""
    r = client(s)
    start = time.monotonic()
    assert r.ping()
    assert r.incr(key) >= 1
    assert time.monotonic() - start < 1.0


# -- malformed frames and oversize requests ---------------------------------------------------

MALFORMED = [
    b"*abc\r\n", b"*1\r\n:1\r\n", b"*2\r\n$3\r\nGET\r\n$-1\r\n",
    # Over proto-max-bulk-len: refused as soon as the header arrives, with or without data.
    b"*1\r\n$99999999999\r\n" + b"x" * 70000, b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n",
    b'"unbalanced\r\n', b"*3000000000\r\n", b"*2147483647\r\n$1\r\nx\r\n",
    b"*1\r\n*4000000000\r\n", b"*-1\r\n*0\r\n",
    b"*1_0\r\n", b"* 1\r\n", b"*+1\r\n", b"*1\r\n$04\r\nPING\r\n", b"*1\r\n$4\r\nPINGxx",
    # Over 64 KB without a line end, by far: the probe after it must not arrive in the same read
    # as the 64 KB mark, or Redis (which reads 16 KB at a time) takes it as the line's end.
    b"*1\r\n" + b"$" + b"9" * 200000 + b"\r\n", b"*" + b"1" * 200000 + b"\r\n",
    b"GET " + b"x" * 200000, b"*1\r\n$600000000\r\n" + b"x" * 70000, b"\r\n\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: example\r\n\r\n", b"*2\r\n$4\r\nECHO\r\n$1\r\nab\r\n",
    b"*1\r\n$-5\r\n", b"*1\r\n$\r\n", b"*\r\n",
]


# Also hostile, but not compared with Redis: Redis echoes the raw bytes in "unknown command",
# Sluice's message text is UTF-8 with replacement characters; and Redis's inline parser
# stops at a NUL byte (it waits for more input), where Sluice reads the whole line.
ODD = [b"\xff garbage\r\n", b"\x00\xff garbage\r\n"]


@pytest.mark.parametrize("payload", MALFORMED + ODD, ids=[repr(p[:24]) for p in MALFORMED + ODD])
def test_malformed_frames_close_only_that_client(make_server: Make, payload: bytes) -> None:
    s = make_server()
    got = exchange(s.port, payload)
    assert got.endswith((b"<EOF>", b"<open>")), got[:200]
    assert_healthy(s)


@pytest.mark.differential
def test_malformed_frames_as_redis(make_server: Make) -> None:
    """The same replies, and the same decision to close, as redis-server for each frame."""
    require_redis_server()
    s = make_server()
    ref = ProcessServer("redis").start()
    try:
        for payload in MALFORMED:
            # Every answer is prompt; the long wait is only for a loaded machine (the whole
            # suite on 2 cores), and not where redis-server is known to send nothing.
            silent = payload.startswith(b"*1\r\n$99999999999999999999")
            ours = exchange(s.port, payload, ANSWER_TIMEOUT)
            theirs = exchange(ref.port, payload, 2.0 if silent else ANSWER_TIMEOUT)
            if silent:
                # A known difference, not traced to its cause: for a 200,000-digit bulk length
                # redis-server 8.6.3 sends nothing and keeps the connection open (7.0 sent
                # "too big bulk count string" and closed it); Sluice still does what 7.0 did.
                assert theirs == b"<timeout>" and ours.startswith(b"-ERR Protocol error")
                continue
            assert ours == theirs, (payload[:40], ours[:300], theirs[:300])
    finally:
        ref.stop()


def test_query_buffer_limit(make_server: Make) -> None:
    s = make_server("client-query-buffer-limit 1mb")
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10000000\r\n")
    try:
        for _ in range(40):  # 2.5 MB of a 10 MB bulk: over the 1 MB query buffer limit
            sock.sendall(b"x" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.settimeout(10)
    try:
        assert sock.recv(100) == b""
    except ConnectionResetError:
        pass
    assert_healthy(s)
    assert client(s).exists("k") == 0


# -- unauthenticated floods -------------------------------------------------------------------


def test_unauthenticated_flood(make_server: Make) -> None:
    s = make_server("requirepass pw")
    noauth = b"-" + NOAUTH.encode() + b"\r\n"
    socks = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(40)]
    for i, sock in enumerate(socks):
        if i % 4 == 0:  # over the pre-auth limits: closed with the protocol error
            sock.sendall(b"*11\r\n")
        else:
            # 400 NOAUTH errors: within the 16 KB an unauthenticated client may hold
            # (test_output_limits_diff.py checks the limit itself)
            sock.sendall(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" * 400)
    admin = client(s, password="pw")
    for i, sock in enumerate(socks):
        if i % 4 == 0:
            assert sock.recv(1000) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
            continue
        data = b""
        while len(data) < 400 * len(noauth):
            data += sock.recv(65536)
        assert data == noauth * 400
    assert admin.ping() and admin.incr("c") == 1
    for sock in socks:
        sock.close()


# -- slow readers -----------------------------------------------------------------------------


def _client_buffers(s: ThreadedServer, name: str) -> int:
    """Bytes the server holds for the client called ``name``: unsent replies + transport."""

    def measure() -> int:
        assert s.server is not None
        for c in s.server.clients.values():
            if c.name == name.encode() and c.transport is not None:
                return len(c.out) + c.transport.get_write_buffer_size() + c.reader.pending()
        return -1

    return int(s.call(measure))


def test_slow_reader_is_paused_not_buffered(make_server: Make) -> None:
    s = make_server()
    big = b"v" * 100_000
    client(s).set("big", big)
    slow = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    slow.sendall(b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$4\r\nslow\r\n")
    assert slow.recv(100) == b"+OK\r\n"
    n = 3000  # 300 MB of replies if the server buffered them all
    request = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * n
    sender = threading.Thread(target=slow.sendall, args=(request,), daemon=True)
    sender.start()
    wait_until(lambda: s.call(lambda: any(
        c.paused_reading for c in s.server.clients.values())), what="the slow client paused")
    held = _client_buffers(s, "slow")
    assert 0 < held < 8 * 1024 * 1024, held  # bounded: a few replies, not 300 MB
    assert_healthy(s)
    # Now it reads: every reply arrives, complete and in order.
    expected = b"$100000\r\n" + big + b"\r\n"
    total = 0
    buf = b""
    while total < n:
        chunk = slow.recv(1 << 20)
        assert chunk, "connection closed early"
        buf += chunk
        whole = len(buf) // len(expected)
        assert buf[: whole * len(expected)] == expected * whole
        buf = buf[whole * len(expected):]
        total += whole
    sender.join(10)
    assert buf == b""
    slow.close()


def test_output_buffer_hard_limit_closes_a_monitor(make_server: Make) -> None:
    s = make_server("client-output-buffer-limit normal 1mb 0 0")
    mon = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    mon.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    mon.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
    assert mon.recv(100) == b"+OK\r\n"
    writer = client(s)
    value = "x" * 50_000
    for i in range(200):  # ~10 MB of MONITOR lines that are never read
        assert writer.set(f"k{i}", value)
    wait_until(lambda: writer.info("clients")["connected_clients"] == 1,
               what="the monitor closed")
    assert writer.dbsize() == 200 and writer.get("k199") == value.encode()
    assert s.call(lambda: s.server.stats["client_output_buffer_limit_disconnections"]) == 1
    assert_healthy(s)


@pytest.mark.parametrize("command", [[b"XRANGE", b"s", b"-", b"+"], [b"GET", b"big"]])
def test_output_buffer_hard_limit_closes_a_pipelining_client_that_never_reads(
        make_server: Make, command: list[bytes]) -> None:
    """The limit set at run time, a client that pipelines large replies and reads none:
    Redis runs its commands and closes it at the hard limit. (Without a hard limit Sluice
    pauses such a client instead: test_slow_reader_is_paused_not_buffered.)"""
    s = make_server()
    admin = client(s)
    admin.set("big", "v" * 50_000)
    for i in range(100):
        admin.xadd("s", {"f": "x" * 500}, id=f"{i + 1}-0")
    assert admin.config_set("client-output-buffer-limit", "normal 1mb 1mb 0")
    hog = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    try:
        request = b"*%d\r\n" % len(command) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in command)
        sender = threading.Thread(target=lambda: _send_until_closed(hog, request * 400),
                                  daemon=True)
        sender.start()
        wait_until(lambda: admin.info("stats")["client_output_buffer_limit_disconnections"] == 1,
                   what="the client closed at the hard limit")
        wait_until(lambda: admin.info("clients")["connected_clients"] == 1,
                   what="only the admin client left")
        sender.join(10)
        assert_healthy(s)
    finally:
        hog.close()


def _send_until_closed(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass  # closed by the server: what the test waits for


def test_output_buffer_soft_limit(make_server: Make) -> None:
    s = make_server("client-output-buffer-limit normal 0 200kb 1")
    mon = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    mon.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    mon.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
    assert mon.recv(100) == b"+OK\r\n"
    writer = client(s)
    value = "x" * 20_000

    def over_soft_limit_for_long() -> bool:
        writer.set("k", value)  # keeps the monitor's buffer growing past the soft limit
        return writer.info("clients")["connected_clients"] == 1

    wait_until(over_soft_limit_for_long, timeout=15, what="the monitor closed by the soft limit")
    assert writer.get("k") == value.encode()


# -- connection storms, timeouts, keepalive ---------------------------------------------------


def test_connection_storm_up_to_maxclients(make_server: Make) -> None:
    s = make_server("maxclients 30")
    socks = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(45)]
    refused = 0
    for sock in socks:
        sock.sendall(PING)
        got = sock.recv(100)
        if got == b"-" + MAX_CLIENTS.encode() + b"\r\n":
            refused += 1
            assert sock.recv(100) == b""  # and closed
        else:
            assert got == b"+PONG\r\n"
    assert refused == 15
    for sock in socks:
        sock.close()
    wait_until(lambda: s.call(lambda: len(s.server.clients)) == 0, what="clients gone")
    assert_healthy(s)
    assert client(s).info("stats")["rejected_connections"] == 15


@pytest.fixture
def idle_socket() -> Iterator[list[socket.socket]]:
    held: list[socket.socket] = []
    yield held
    for sock in held:
        sock.close()


def test_timeout_closes_idle_clients(make_server: Make, idle_socket: list[socket.socket]) -> None:
    s = make_server("timeout 1")
    idle = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    idle_socket.append(idle)
    idle.sendall(PING)
    assert idle.recv(100) == b"+PONG\r\n"
    assert idle.recv(100) == b""  # closed by the server after a second of silence
    assert_healthy(s)


def test_tcp_keepalive_is_set(make_server: Make) -> None:
    s = make_server("tcp-keepalive 60")
    c = client(s)
    c.ping()

    def opts() -> list[tuple[int, int]]:
        assert s.server is not None
        out = []
        for cl in s.server.clients.values():
            sock = cl.transport.get_extra_info("socket")
            out.append((sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)))
        return out

    assert (1, 60) in s.call(opts)
