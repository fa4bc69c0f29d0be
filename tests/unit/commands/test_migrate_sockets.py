"""MIGRATE's connection cache (``commands/migrate_sockets.py``) and its key finder, as pure
code over real local sockets: Redis's ``syncReadLine`` reading, ``atoi`` ports, the cache's
size limit and its 10 s expiry."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from sluice.commands.cluster import migrate_get_keys
from sluice.commands.migrate_sockets import (
    CACHE_ITEMS,
    CACHE_TTL_MS,
    LINE_MAX,
    ConnectError,
    MigrateSocket,
    MigrateSockets,
    _atoi,
)
from sluice.commands.spec import K

NOW = 1_700_000_000_000


@pytest.fixture
def pair() -> Iterator[tuple[MigrateSocket, socket.socket]]:
    a, b = socket.socketpair()
    cs = MigrateSocket(a, NOW)
    yield cs, b
    cs.close()
    b.close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(128)
    yield srv
    srv.close()


@pytest.mark.parametrize(("raw", "n"), [
    (b"6379", 6379), (b"  42x", 42), (b"+7", 7), (b"-1", -1), (b"badport", 0), (b"", 0),
    (b"0006379", 6379), (b"4294967297", 1), (b"99999999999999999999", -1),
])
def test_atoi_is_glibc_atoi(raw: bytes, n: int) -> None:
    assert _atoi(raw) == n


def test_read_line_strips_crlf_and_keeps_the_rest(pair: tuple[MigrateSocket, socket.socket]) -> None:
    cs, peer = pair
    peer.sendall(b"+OK\r\n-ERR no\r\n+PONG")
    assert cs.read_line(1000) == b"+OK"
    assert cs.read_line(1000) == b"-ERR no"
    peer.sendall(b"\r\n")
    assert cs.read_line(1000) == b"+PONG"


def test_read_line_cuts_long_lines_as_sync_read_line(
        pair: tuple[MigrateSocket, socket.socket]) -> None:
    cs, peer = pair
    peer.sendall(b"-" + b"x" * 2000 + b"\r\n")
    first = cs.read_line(1000)
    assert len(first) == LINE_MAX and first.startswith(b"-x")
    assert cs.read_line(1000) == b"x" * (2001 - LINE_MAX)  # the rest is the next "line"


def test_read_line_failures(pair: tuple[MigrateSocket, socket.socket]) -> None:
    cs, peer = pair
    with pytest.raises(TimeoutError):
        cs.read_line(50)
    peer.sendall(b"\n")  # syncReadLine returns 0 for an empty line: MIGRATE's failure
    with pytest.raises(OSError):
        cs.read_line(1000)
    peer.close()
    with pytest.raises(OSError) as info:
        cs.read_line(1000)
    assert not isinstance(info.value, TimeoutError)


def test_connect_errors() -> None:
    cache = MigrateSockets()
    with pytest.raises(ConnectError):
        cache.get(b"", b"6379", 500, NOW)  # no such host, without asking DNS
    with pytest.raises(ConnectError):
        cache.get(b"127.0.0.1", b"-1", 500, NOW)
    assert len(cache) == 0


def test_a_refused_connect_is_cached_and_fails_on_write() -> None:
    """As Redis's connSocketBlockingConnect: the connect is not checked, the write fails."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    cache = MigrateSockets()
    cs = cache.get(b"127.0.0.1", b"%d" % port, 500, NOW)
    with pytest.raises(OSError):
        cs.write(b"*1\r\n$4\r\nPING\r\n", 500)
        cs.read_line(500)
    cache.close_all()


def test_cache_reuses_by_name_and_expires(listener: socket.socket) -> None:
    port = b"%d" % listener.getsockname()[1]
    cache = MigrateSockets()
    a = cache.get(b"127.0.0.1", port, 1000, NOW)
    assert cache.get(b"127.0.0.1", port, 1000, NOW + 1) is a and a.last_use == NOW + 1
    b = cache.get(b"127.0.0.1", b"0" + port, 1000, NOW + 5000)  # another spelling: another entry
    assert b is not a and len(cache) == 2
    cache.close_timed_out(NOW + 1 + CACHE_TTL_MS)  # not more than 10 s: kept
    assert len(cache) == 2
    cache.close_timed_out(NOW + 2 + CACHE_TTL_MS)
    assert len(cache) == 1 and cache.get(b"127.0.0.1", b"0" + port, 1000, NOW) is b
    cache.close(b"127.0.0.1", b"0" + port)
    assert len(cache) == 0
    cache.close_all()


def test_cache_holds_at_most_64(listener: socket.socket) -> None:
    port = b"%d" % listener.getsockname()[1]
    cache = MigrateSockets()
    try:
        for i in range(CACHE_ITEMS + 3):
            cache.get(b"127.0.0.1", b"0" * i + port, 1000, NOW)
            assert len(cache) == min(i + 1, CACHE_ITEMS)
    finally:
        cache.close_all()


_RAD = K.RW | K.ACCESS | K.DELETE


@pytest.mark.parametrize(("argv", "keys"), [
    ([b"migrate", b"h", b"p", b"k", b"0", b"5"], [3]),
    ([b"migrate", b"h", b"p", b"", b"0", b"5", b"KEYS", b"a", b"b"], [7, 8]),
    ([b"migrate", b"h", b"p", b"", b"0", b"5", b"AUTH", b"keys", b"KEYS", b"a"], [9]),
    ([b"migrate", b"h", b"p", b"", b"0", b"5", b"auth2", b"u", b"keys", b"keys", b"a"], [10]),
    ([b"migrate", b"h", b"p", b"k", b"0", b"5", b"keys", b"a"], []),
    ([b"migrate", b"h", b"p", b"", b"0", b"5", b"COPY", b"REPLACE", b"keys"], []),
])
def test_migrate_key_finder(argv: list[bytes], keys: list[int]) -> None:
    assert migrate_get_keys(argv) == [(pos, _RAD) for pos in keys]
