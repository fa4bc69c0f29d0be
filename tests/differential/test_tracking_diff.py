"""Client-side caching against redis-server 8.6.3, byte for byte: what a RESP3 tracking
client is told when scripts read and write, and the null after a FLUSHALL run by a script.

Redis tracks the keys a script's commands read, for the client that ran the script (not
the keys EVAL or EVAL_RO name, nor those a script only writes), and a script's write
invalidates the keys others cached, the caller's own after its reply.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ProcessServer, RawClient, ThreadedServer, require_redis_server

pytestmark = pytest.mark.differential


@pytest.fixture(scope="module")
def ports() -> Iterator[tuple[int, int]]:
    require_redis_server()
    ours = ThreadedServer().start()
    theirs = ProcessServer("redis").start()
    yield ours.port, theirs.port
    ours.stop()
    theirs.stop()


def _session(port: int) -> list[bytes]:
    r = RawClient(port, protocol=3)
    other = RawClient(port)
    out: list[bytes] = []

    def both(*command: str) -> None:
        r.send(*command)
        out.append(r.read_reply())

    def settle() -> None:  # everything pushed so far, then PING's reply
        r.send("PING")
        while True:
            frame = r.read_reply()
            out.append(frame)
            if frame == b"+PONG\r\n":
                return

    other.call("FLUSHALL")
    both("CLIENT", "TRACKING", "ON")
    other.call("MSET", "key1", "1", "key2", "1", "key3", "1")
    both("EVAL", "redis.call('set', 'key3', 'bar')", "2", "key1", "key2")  # writes only
    other.call("MSET", "key1", "2", "key2", "2", "key3", "2")
    settle()
    both("EVAL", "return redis.call('get', 'key2')", "2", "key1", "key2")  # reads key2
    other.call("MSET", "key1", "3", "key2", "3")
    settle()
    both("EVAL_RO", "return redis.call('get', KEYS[1])", "2", "key3", "key1")
    other.call("MSET", "key1", "4", "key3", "4")
    settle()
    both("GET", "key1")
    both("EVAL", "return redis.call('incr', 'key1')", "0")  # its own cached key
    settle()
    both("GET", "key2")
    other.call("EVAL", "return redis.call('del', 'key2')", "0")  # another client's script
    settle()
    both("GET", "key3")
    other.call("EVAL", "return redis.call('flushall')", "0")
    settle()
    r.close()
    other.close()
    return out


def test_script_reads_and_writes_invalidate_as_redis(ports: tuple[int, int]) -> None:
    ours, theirs = (_session(p) for p in ports)
    assert ours == theirs
    assert b">2\r\n$10\r\ninvalidate\r\n_\r\n" in ours  # FLUSHALL's null


def test_flushall_in_a_script_is_not_counted_as_lazy_free(ports: tuple[int, int]) -> None:
    got = []
    for port in ports:
        c = RawClient(port)
        c.call("CONFIG", "RESETSTAT")
        c.call("MSET", "a", "1", "b", "2")
        c.call("EVAL", "return redis.call('flushall')", "0")
        info = c.call("INFO", "memory")
        got.append(int(info.split(b"lazyfreed_objects:")[1].split(b"\r")[0]))
        c.close()
    assert got[0] == got[1] == 0


def test_tracking_table_limit_applies_before_a_queued_command() -> None:
    """tracking-table-max-keys lowered while the cron is paused: the next command of the
    tracking client (queued in MULTI) first trims the table, so the invalidation comes
    before QUEUED, as Redis's processCommand trims before running anything (Tcl tracking
    "Regression test for #11715"). The same bytes from both servers."""
    require_redis_server()
    servers = (ThreadedServer(["enable-debug-command yes"]).start(),
               ProcessServer("redis", ["--enable-debug-command", "yes"]).start())
    got = []
    try:
        for server in servers:
            r, rd = RawClient(server.port), RawClient(server.port, 3)
            r.call("CONFIG", "SET", "tracking-table-max-keys", "2")
            r.call("DEBUG", "PAUSE-CRON", "1")
            rd.call("CLIENT", "TRACKING", "on")
            rd.call("MGET", "1{tag}", "2{tag}")
            rd.call("MULTI")
            r.call("CONFIG", "SET", "tracking-table-max-keys", "1")
            rd.send("PING")
            rd.send("EXEC")
            frames = [rd.read_reply() for _ in range(3)]
            # which of the two keys goes is a random pick on both servers (raxRandomWalk)
            assert frames[0].count(b"1{tag}") + frames[0].count(b"2{tag}") == 1
            frames[0] = frames[0].replace(b"1{tag}", b"K{tag}").replace(b"2{tag}", b"K{tag}")
            got.append(frames)
            r.call("DEBUG", "PAUSE-CRON", "0")
    finally:
        for server in servers:
            server.stop()
    assert got[0] == got[1]
    assert got[0][0].startswith(b">2\r\n$10\r\ninvalidate\r\n") and got[0][1] == b"+QUEUED\r\n"
