"""MULTI/EXEC/DISCARD/WATCH/UNWATCH against redis-server: replies compared byte for byte, one
command at a time and as whole pipelines (the way clients send transactions), with a second
connection writing to watched keys."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import hiredis
import pytest

from tests.support import ProcessServer, RawClient, resp_frame_end

pytestmark = pytest.mark.differential

SEQUENCES: dict[str, list[list[str]]] = {
    "basic": [
        ["MULTI"], ["SET", "a", "1"], ["INCR", "a"], ["GET", "a"], ["EXEC"], ["GET", "a"],
    ],
    "empty": [["MULTI"], ["EXEC"], ["MULTI"], ["DISCARD"]],
    "without-multi": [["EXEC"], ["DISCARD"], ["EXEC", "x"], ["MULTI", "x"], ["UNWATCH", "x"]],
    "nested-and-watch-inside": [
        ["MULTI"], ["MULTI"], ["WATCH", "k"], ["SET", "k", "1"], ["EXEC"], ["GET", "k"],
    ],
    "queue-errors-abort": [
        ["MULTI"], ["SET", "a", "1"], ["NOSUCH"], ["SET", "b", "2"], ["EXEC"], ["EXISTS", "a"],
        ["MULTI"], ["GET"], ["EXEC"], ["MULTI"], ["SET", "a"], ["DISCARD"], ["EXISTS", "a"],
    ],
    "runtime-errors-do-not-abort": [
        ["SET", "s", "text"], ["RPUSH", "l", "x"], ["MULTI"], ["INCR", "s"], ["GET", "l"],
        ["SET", "ok", "1"], ["INCRBYFLOAT", "ok", "0.5"], ["SET", "k", "v", "EX", "0"],
        ["EXPIRE", "ok", "10", "NX", "XX"], ["EXEC"], ["GET", "ok"],
    ],
    "reply-types": [
        ["MULTI"], ["PING"], ["ECHO", "x"], ["SET", "k", "v", "GET"], ["GET", "nope"],
        ["MGET", "k", "nope"], ["TYPE", "k"], ["OBJECT", "ENCODING", "k"], ["TTL", "k"],
        ["INCRBYFLOAT", "f", "1.5"], ["LCS", "k", "k", "IDX"], ["EXEC"],
    ],
    "watch-own-write": [
        ["SET", "w", "1"], ["WATCH", "w"], ["SET", "w", "2"], ["MULTI"], ["GET", "w"], ["EXEC"],
        ["WATCH", "w"], ["GET", "w"], ["MULTI"], ["GET", "w"], ["EXEC"],
    ],
    "watch-missing-key-then-created": [
        ["WATCH", "w"], ["SET", "w", "1"], ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-unwatch": [
        ["WATCH", "w", "x"], ["SET", "w", "1"], ["UNWATCH"], ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-discard": [
        ["WATCH", "w"], ["MULTI"], ["DISCARD"], ["SET", "w", "1"], ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-flushdb": [
        ["SET", "w", "1"], ["WATCH", "w"], ["FLUSHDB"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "w"], ["FLUSHDB"], ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-flushall-other-db": [
        ["SELECT", "2"], ["SET", "w", "1"], ["WATCH", "w"], ["SELECT", "0"], ["FLUSHALL"],
        ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-swapdb": [
        ["SET", "w", "1"], ["WATCH", "w"], ["SWAPDB", "0", "3"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "w"], ["SWAPDB", "0", "3"], ["MULTI"], ["PING"], ["EXEC"], ["WATCH", "zz"],
        ["SWAPDB", "0", "3"], ["MULTI"], ["PING"], ["EXEC"], ["FLUSHALL"],
    ],
    "watch-expired-deleted": [
        ["SET", "w", "1"], ["WATCH", "w"], ["PEXPIREAT", "w", "1"], ["MULTI"], ["PING"], ["EXEC"],
    ],
    "watch-many-keys-and-dbs": [
        ["WATCH", "a", "b", "a"], ["SELECT", "1"], ["WATCH", "a"], ["SET", "a", "x"],
        ["SELECT", "0"], ["MULTI"], ["PING"], ["EXEC"], ["WATCH", "a", "b"], ["SELECT", "1"],
        ["SET", "b", "y"], ["SELECT", "0"], ["MULTI"], ["PING"], ["EXEC"], ["SELECT", "1"],
        ["FLUSHDB"], ["SELECT", "0"],
    ],
    "select-inside-multi": [
        ["MULTI"], ["SELECT", "4"], ["SET", "k", "in4"], ["EXEC"], ["GET", "k"], ["SELECT", "0"],
        ["GET", "k"], ["SELECT", "4"], ["FLUSHDB"], ["SELECT", "0"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair, name: str) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = raw_pair
    try:
        for command in SEQUENCES[name]:
            assert ours.call(*command) == theirs.call(*command), command
    finally:
        for c in (ours, theirs):
            c.call("RESET")


def _encode(*args: str) -> bytes:
    parts = [a.encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def _pipeline(port: int, commands: list[list[str]], protocol: int) -> bytes:
    """Send every command in one write; return the bytes of all replies."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        if protocol == 3:
            commands = [["HELLO", "3"], *commands]
        sock.sendall(b"".join(_encode(*c) for c in commands))
        reader = hiredis.Reader()
        raw = bytearray()
        replies = 0
        while replies < len(commands):
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            raw += chunk
            reader.feed(chunk)
            while reader.gets() is not False:
                replies += 1
        return bytes(raw)


PIPELINES: dict[str, list[list[str]]] = {
    "redis-py-transaction": [["MULTI"], ["SET", "a", "1"], ["INCRBY", "a", "5"], ["GET", "a"],
                             ["EXEC"]],
    "aborted": [["MULTI"], ["SET", "a", "1"], ["INCR"], ["EXEC"], ["GET", "a"]],
    "watch-then-write-in-pipeline": [["WATCH", "k"], ["SET", "k", "1"], ["MULTI"], ["GET", "k"],
                                     ["EXEC"], ["MULTI"], ["GET", "k"], ["EXEC"]],
    "exec-discard-errors": [["EXEC"], ["MULTI"], ["MULTI"], ["DISCARD"], ["DISCARD"]],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(PIPELINES))
def test_pipelined_transactions(sluice, reference, name: str, protocol: int) -> None:  # type: ignore[no-untyped-def]
    try:
        ours = _pipeline(sluice.port, PIPELINES[name], protocol)
        theirs = _pipeline(reference.port, PIPELINES[name], protocol)
        if protocol == 3:  # the HELLO maps differ (server name, version, id): skip them
            ours, theirs = (r[resp_frame_end(r, 0) :] for r in (ours, theirs))
        assert ours == theirs
    finally:
        for port in (sluice.port, reference.port):
            RawClient(port).call("FLUSHALL")


@pytest.fixture
def writers(sluice, reference) -> Iterator[tuple[RawClient, RawClient]]:  # type: ignore[no-untyped-def]
    """Second connections to each server, to write under a transaction."""
    a, b = RawClient(sluice.port), RawClient(reference.port)
    yield a, b
    a.close()
    b.close()


# (setup on the watcher's connection, writes from the other connection)
CROSS: dict[str, tuple[list[list[str]], list[list[str]]]] = {
    "set": ([["SET", "w", "1"]], [["SET", "w", "1"]]),
    "del": ([["SET", "w", "1"]], [["DEL", "w"]]),
    "rename": ([["SET", "x", "1"]], [["RENAME", "x", "w"]]),
    "move-away": ([["SET", "w", "1"]], [["MOVE", "w", "5"]]),
    "expire": ([["SET", "w", "1"]], [["EXPIRE", "w", "1000"]]),
    "failed-nx": ([["SET", "w", "1"]], [["SET", "w", "2", "NX"]]),
    "other-key": ([["SET", "w", "1"]], [["SET", "v", "2"]]),
    "read": ([["SET", "w", "1"]], [["GET", "w"], ["TTL", "w"]]),
    "incr": ([], [["INCR", "w"]]),
}


@pytest.mark.parametrize("name", list(CROSS))
def test_writes_from_another_connection(raw_pair, writers, name: str) -> None:  # type: ignore[no-untyped-def]
    setup, writes = CROSS[name]
    for watcher, writer in zip(raw_pair, writers, strict=True):
        for command in setup:
            watcher.call(*command)
        watcher.call("WATCH", "w")
        for command in writes:
            writer.call(*command)
        watcher.call("MULTI")
        watcher.call("SET", "done", "1")
    ours, theirs = raw_pair
    assert ours.call("EXEC") == theirs.call("EXEC")
    assert ours.call("EXISTS", "done") == theirs.call("EXISTS", "done")
    for w in writers:
        w.call("FLUSHALL")


@pytest.mark.parametrize("queued", [["GET", "k"], ["SET", "k", "v"], ["CLIENT", "ID"]])
def test_last_command_after_exec_is_exec(raw_pair, writers, queued: list[str]) -> None:  # type: ignore[no-untyped-def]
    """CLIENT LIST's cmd= for a client whose last command was EXEC: Redis's list units wait
    for ``cmd=exec`` to know a transaction has run."""
    seen = []
    for client, other in zip(raw_pair, writers, strict=True):
        client_id = hiredis.Reader()
        client_id.feed(client.call("CLIENT", "ID"))
        client.call("MULTI")
        client.call(*queued)
        client.call("EXEC")
        line = other.call("CLIENT", "LIST", "ID", str(client_id.gets()))
        seen.append(line.split(b" cmd=")[1].split(b" ")[0])
    assert seen == [b"exec", b"exec"]


@pytest.fixture(scope="module")
def debug_pair() -> Iterator[tuple[RawClient, RawClient]]:
    """Both servers with DEBUG enabled (redis-server's default refuses it)."""
    servers = [ProcessServer(kind, ["--enable-debug-command", "yes"]).start()
               for kind in ("sluice", "redis")]
    try:
        yield RawClient(servers[0].port), RawClient(servers[1].port)
    finally:
        for server in servers:
            server.stop()


def test_a_transaction_sees_the_time_it_started(debug_pair) -> None:  # type: ignore[no-untyped-def]
    """EXEC is one execution unit (Redis 7's command time snapshot): a key set to expire in
    1 ms is still there after a 20 ms DEBUG SLEEP inside the same transaction, its PTTL is
    still 1, a script inside sees the same time, and TIME repeats itself. Sluice used to
    let the clock run inside EXEC and answered nil."""
    transaction = [["MULTI"], ["SET", "k", "v", "PX", "1"], ["DEBUG", "SLEEP", "0.02"],
                   ["GET", "k"], ["PTTL", "k"], ["EVAL", "return redis.call('PTTL', KEYS[1])",
                                                 "1", "k"],
                   ["TIME"], ["DEBUG", "SLEEP", "0.002"], ["TIME"]]
    results = []
    for client in debug_pair:
        for command in transaction:
            client.call(*command)
        results.append(hiredis_parse(client.call("EXEC")))
    for result in results:
        assert result[2:5] == [b"v", 1, 1], result
        assert result[5] == result[7]  # TIME, 2 ms apart, inside one transaction
    assert results[0][:5] == results[1][:5]
    for client in debug_pair:
        client.call("FLUSHALL")


def hiredis_parse(raw: bytes) -> list:  # type: ignore[type-arg]
    reader = hiredis.Reader()
    reader.feed(raw)
    reply = reader.gets()
    assert isinstance(reply, list), reply
    return reply
