"""Blocking list commands over real sockets: fairness, timeouts, CLIENT UNBLOCK, disconnects,
MULTI, pipelines, keys changing under a blocked client, and a stress run.

A blocked client is a raw connection (``Conn``) that sends its command and reads the reply
later, so exact reply bytes are checked (RESP2 ``*-1`` vs RESP3 ``_``). The test waits for
``INFO clients: blocked_clients`` to reach the expected count before triggering; no sleeps.
Every test runs in RESP2 and RESP3 (the ``rr`` fixture's protocol is used for all
connections). ``Conn`` is also used by ``tests/differential/test_lists_diff.py``.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from sluice.commands import errors
from tests.support import ThreadedServer, wait_blocked

pytestmark = pytest.mark.timeout(20)


def _end_of_reply(buf: bytes, pos: int) -> int | None:
    """Index just past the RESP2/RESP3 reply starting at ``pos``; None while incomplete."""
    line_end = buf.find(b"\r\n", pos)
    if line_end < 0:
        return None
    kind, head, after = buf[pos:pos + 1], buf[pos + 1:line_end], line_end + 2
    if kind in b"$!=":
        n = int(head)
        if n < 0:
            return after
        return after + n + 2 if len(buf) >= after + n + 2 else None
    if kind in b"*~>%|":
        n = int(head)
        if kind in b"%|":
            n *= 2
        for _ in range(max(n, 0)):
            end = _end_of_reply(buf, after)
            if end is None:
                return None
            after = end
        if kind == b"|":  # an attribute precedes the real reply
            return _end_of_reply(buf, after)
        return after
    return after  # + - : _ , # ( line types


def encode(*args: Any) -> bytes:
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class Conn:
    """A raw connection: send commands without waiting, read each reply's exact bytes."""

    def __init__(self, port: int, protocol: int = 2) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.buf = b""
        if protocol == 3:
            assert self.call("HELLO", "3").startswith(b"%")

    def send(self, *commands: tuple[Any, ...]) -> None:
        """Several commands in one write (a pipeline)."""
        self.sock.sendall(b"".join(encode(*c) for c in commands))

    def read(self) -> bytes:
        while True:
            if self.buf:
                end = _end_of_reply(self.buf, 0)
                if end is not None:
                    reply, self.buf = self.buf[:end], self.buf[end:]
                    return reply
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk

    def read_many(self, n: int) -> list[bytes]:
        return [self.read() for _ in range(n)]

    def call(self, *args: Any) -> bytes:
        self.send(args)
        return self.read()

    def client_id(self) -> int:
        return int(self.call("CLIENT", "ID")[1:-2])

    def close(self) -> None:
        self.sock.close()


def protocol_of(r: redis.Redis) -> int:
    return int(r.connection_pool.connection_kwargs.get("protocol") or 2)


def null_array(protocol: int) -> bytes:
    return b"_\r\n" if protocol == 3 else b"*-1\r\n"


def null_bulk(protocol: int) -> bytes:
    return b"_\r\n" if protocol == 3 else b"$-1\r\n"


def bulk_pair(key: str, value: str) -> bytes:
    return encode(key, value)  # a two-element array of bulks looks like a request


@pytest.fixture
def conns(sluice: ThreadedServer, rr: redis.Redis) -> Iterator[Callable[[], Conn]]:
    """Make raw connections with ``rr``'s protocol; all closed after the test."""
    made: list[Conn] = []

    def make() -> Conn:
        c = Conn(sluice.port, protocol_of(rr))
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
    wait_blocked(rr, 0)


def block(rr: redis.Redis, conn: Conn, *args: Any, blocked: int) -> None:
    """Send a blocking command and wait until the server counts ``blocked`` blocked clients."""
    conn.send(args)
    wait_blocked(rr, blocked)


# -- fairness ------------------------------------------------------------------------------


def test_first_blocked_first_served(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    waiters = [conns() for _ in range(3)]
    for i, w in enumerate(waiters):
        block(rr, w, "BRPOP", "q", "0", blocked=i + 1)
    for i, w in enumerate(waiters):
        assert rr.lpush("q", f"job{i}") == 1
        assert w.read() == bulk_pair("q", f"job{i}")
        wait_blocked(rr, 2 - i)
    assert rr.exists("q") == 0


def test_one_push_of_three_serves_three_in_order(rr: redis.Redis,
                                                 conns: Callable[[], Conn]) -> None:
    waiters = [conns() for _ in range(3)]
    for i, w in enumerate(waiters):
        block(rr, w, "BLPOP", "q", "0", blocked=i + 1)
    assert rr.lpush("q", "a", "b", "c") == 3  # the reply counts the elements pushed
    assert [w.read() for w in waiters] == [bulk_pair("q", "c"), bulk_pair("q", "b"),
                                           bulk_pair("q", "a")]
    assert rr.llen("q") == 0
    assert rr.info("clients")["blocked_clients"] == 0


def test_waiter_on_several_keys_is_served_from_the_pushed_one(
        rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    w = conns()
    block(rr, w, "BLPOP", "k1", "k2", "k3", "0", blocked=1)
    rr.rpush("k3", "v")
    assert w.read() == bulk_pair("k3", "v")


# -- timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ("BLPOP", "none", "0.1"),
    ("BRPOP", "none", "other", "0.1"),
    ("BLMPOP", "0.1", "1", "none", "LEFT", "COUNT", "2"),
    # Also a null array, as Redis replies on a timeout (a null bulk only inside MULTI).
    ("BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.1"),
    ("BRPOPLPUSH", "none", "dst", "0.1"),
])
def test_timeout_reply_after_the_timeout(rr: redis.Redis, conns: Callable[[], Conn],
                                         argv: tuple[str, ...]) -> None:
    c = conns()
    start = time.monotonic()
    reply = c.call(*argv)
    elapsed = time.monotonic() - start
    assert reply == null_array(protocol_of(rr))
    assert 0.099 <= elapsed < 0.5, elapsed
    assert c.call("PING") == b"+PONG\r\n"


def test_timeout_has_ms_precision(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    short, longer = conns(), conns()
    longer.send(("BLPOP", "k", "0.06"))
    short.send(("BLPOP", "k", "0.02"))
    start = time.monotonic()
    assert short.read() == null_array(protocol_of(rr))
    t_short = time.monotonic() - start
    assert longer.read() == null_array(protocol_of(rr))
    t_long = time.monotonic() - start
    assert 0.015 <= t_short < t_long and t_long >= 0.055, (t_short, t_long)


def test_zero_timeout_waits_past_other_timeouts(rr: redis.Redis,
                                                conns: Callable[[], Conn]) -> None:
    forever, brief = conns(), conns()
    block(rr, forever, "BLPOP", "k", "0", blocked=1)
    assert brief.call("BLPOP", "k", "0.05") == null_array(protocol_of(rr))
    assert rr.info("clients")["blocked_clients"] == 1
    rr.rpush("k", "late")
    assert forever.read() == bulk_pair("k", "late")


@pytest.mark.parametrize(("timeout", "error"), [
    ("abc", errors.TIMEOUT_NOT_FLOAT), ("-1", errors.NOT_POSITIVE_TIMEOUT),
    ("inf", errors.TIMEOUT_OUT_OF_RANGE),
])
def test_bad_timeouts(rr: redis.Redis, timeout: str, error: str) -> None:
    for argv in (("BLPOP", "k", timeout), ("BRPOPLPUSH", "a", "b", timeout),
                 ("BLMPOP", timeout, "1", "k", "LEFT")):
        with pytest.raises(redis.ResponseError, match=f"^{error.removeprefix('ERR ')}$"):
            rr.execute_command(*argv)


# -- CLIENT UNBLOCK ------------------------------------------------------------------------


def test_client_unblock_docs_pattern(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    """The example of the CLIENT UNBLOCK docs: stop a BRPOP to add a key, block again."""
    a, b = conns(), conns()
    a_id = a.client_id()
    block(rr, a, "BRPOP", "key1", "key2", "key3", "0", blocked=1)
    assert b.call("CLIENT", "UNBLOCK", a_id) == b":1\r\n"
    assert a.read() == null_array(protocol_of(rr))  # as if the timeout was reached
    block(rr, a, "BRPOP", "key1", "key2", "key3", "key4", "0", blocked=1)
    b.call("RPUSH", "key4", "new")
    assert a.read() == bulk_pair("key4", "new")


def test_client_unblock_error_and_not_blocked(rr: redis.Redis,
                                              conns: Callable[[], Conn]) -> None:
    a, control = conns(), conns()
    a_id = a.client_id()
    assert control.call("CLIENT", "UNBLOCK", a_id) == b":0\r\n"  # not blocked
    block(rr, a, "BLMOVE", "src", "dst", "LEFT", "LEFT", "0", blocked=1)
    assert control.call("CLIENT", "UNBLOCK", a_id, "ERROR") == b":1\r\n"
    assert a.read() == b"-" + errors.UNBLOCKED.encode() + b"\r\n"
    assert control.call("CLIENT", "UNBLOCK", a_id, "ERROR") == b":0\r\n"
    assert control.call("CLIENT", "UNBLOCK", "999999") == b":0\r\n"
    assert a.call("PING") == b"+PONG\r\n"


def test_client_unblock_resumes_pipelined_commands(rr: redis.Redis,
                                                   conns: Callable[[], Conn]) -> None:
    a = conns()
    a_id = a.client_id()
    a.send(("BLPOP", "k", "0"), ("RPUSH", "after", "1"), ("ECHO", "done"))
    wait_blocked(rr, 1)
    rr.client_unblock(a_id)
    assert a.read_many(3) == [null_array(protocol_of(rr)), b":1\r\n", b"$4\r\ndone\r\n"]


# -- disconnects ---------------------------------------------------------------------------


def test_disconnect_while_blocked_releases_everything(rr: redis.Redis,
                                                      conns: Callable[[], Conn]) -> None:
    gone, stays = conns(), conns()
    block(rr, gone, "BLPOP", "k", "other", "0", blocked=1)
    block(rr, stays, "BLPOP", "k", "0", blocked=2)
    gone.close()
    wait_blocked(rr, 1)
    assert rr.rpush("k", "v") == 1
    assert stays.read() == bulk_pair("k", "v")  # nothing went to the closed client
    assert rr.llen("k") == 0
    wait_blocked(rr, 0)
    rr.rpush("other", "kept")
    assert rr.lrange("other", 0, -1) == [b"kept"]


# -- MULTI, pipelines, keys changing under a waiter ------------------------------------------


def test_multi_never_blocks(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    c = conns()
    proto = protocol_of(rr)
    c.send(("MULTI",), ("BLPOP", "none", "0"), ("BRPOPLPUSH", "none", "x", "0"),
           ("BLMPOP", "0", "1", "none", "LEFT"), ("BLMOVE", "none", "x", "LEFT", "LEFT", "0"),
           ("EXEC",))
    replies = c.read_many(6)
    assert replies[:5] == [b"+OK\r\n"] + [b"+QUEUED\r\n"] * 4
    assert replies[5] == (b"*4\r\n" + null_array(proto) + null_bulk(proto) + null_array(proto)
                          + null_bulk(proto))
    assert rr.info("clients")["blocked_clients"] == 0


def test_multi_push_wakes_waiter_after_exec(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    waiter, pusher = conns(), conns()
    block(rr, waiter, "BLPOP", "m", "0", blocked=1)
    pusher.send(("MULTI",), ("LPUSH", "m", "x"), ("LLEN", "m"), ("EXEC",), ("LLEN", "m"))
    # Inside EXEC the element is still there; right after EXEC the waiter has taken it.
    assert pusher.read_many(5)[3:] == [b"*2\r\n:1\r\n:1\r\n", b":0\r\n"]
    assert waiter.read() == bulk_pair("m", "x")


def test_pipelined_llen_sees_the_element_taken(rr: redis.Redis,
                                               conns: Callable[[], Conn]) -> None:
    waiter, pusher = conns(), conns()
    block(rr, waiter, "BLPOP", "k", "0", blocked=1)
    pusher.send(("LPUSH", "k", "a"), ("LLEN", "k"), ("LPUSH", "k", "b"), ("LLEN", "k"))
    assert pusher.read_many(4) == [b":1\r\n", b":0\r\n", b":1\r\n", b":1\r\n"]
    assert waiter.read() == bulk_pair("k", "a")
    assert rr.lrange("k", 0, -1) == [b"b"]


def test_woken_client_runs_its_pipeline_right_after(rr: redis.Redis,
                                                    conns: Callable[[], Conn]) -> None:
    waiter, pusher = conns(), conns()
    waiter.send(("BLPOP", "k", "0"), ("LLEN", "k2"), ("RPUSH", "k2", "w"), ("PING",))
    wait_blocked(rr, 1)
    pusher.send(("RPUSH", "k", "v"), ("LLEN", "k2"))
    assert pusher.read_many(2) == [b":1\r\n", b":0\r\n"]
    assert waiter.read_many(4) == [bulk_pair("k", "v"), b":0\r\n", b":1\r\n", b"+PONG\r\n"]


def test_del_flush_and_type_change_keep_waiter_blocked(rr: redis.Redis,
                                                       conns: Callable[[], Conn]) -> None:
    waiter, other = conns(), conns()
    block(rr, waiter, "BLPOP", "k", "0", blocked=1)
    rr.set("k", "a string")
    rr.delete("k")
    rr.set("k", "again")
    rr.flushall()
    pipe = rr.pipeline(transaction=True)  # a list that exists only inside one transaction
    pipe.rpush("k", "gone").delete("k").execute()
    assert rr.info("clients")["blocked_clients"] == 1
    block(rr, other, "BLPOP", "k", "0", blocked=2)
    rr.rpush("k", "first", "second")
    assert waiter.read() == bulk_pair("k", "first")  # still first in line
    assert other.read() == bulk_pair("k", "second")


def test_blmove_served_by_push_chains_to_destination_waiters(
        rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    mover, popper = conns(), conns()
    block(rr, mover, "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0", blocked=1)
    block(rr, popper, "BRPOPLPUSH", "dst", "final", "0", blocked=2)
    assert rr.rpush("src", "v") == 1
    assert mover.read() == b"$1\r\nv\r\n"
    assert popper.read() == b"$1\r\nv\r\n"
    assert (rr.exists("src", "dst"), rr.lrange("final", 0, -1)) == (0, [b"v"])


def test_blmove_to_wrong_type_destination(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    mover = conns()
    rr.set("dst", "string")
    block(rr, mover, "BLMOVE", "src", "dst", "LEFT", "LEFT", "0", blocked=1)
    rr.rpush("src", "v")
    assert mover.read() == b"-" + errors.WRONGTYPE.encode() + b"\r\n"
    assert rr.lrange("src", 0, -1) == [b"v"]


def test_blmpop_served_with_count(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    w = conns()
    block(rr, w, "BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2", blocked=1)
    rr.rpush("b", "1", "2", "3")
    assert w.read() == b"*2\r\n$1\r\nb\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n"
    assert rr.lrange("b", 0, -1) == [b"1"]


# -- with redis-py as the blocked client -----------------------------------------------------


def test_redis_py_blocking_calls(rr: redis.Redis, sluice: ThreadedServer) -> None:
    other = sluice.client(protocol=protocol_of(rr), socket_timeout=15)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(other.blpop(["a", "b"], timeout=0)))
    thread.start()
    wait_blocked(rr, 1)
    rr.rpush("b", "x")
    thread.join(10)
    assert not thread.is_alive() and list(results[0]) == [b"b", b"x"]
    assert other.brpop("nothing", timeout=0.01) is None
    assert other.blmove("nothing", "d", 0.01) is None
    other.close()


# -- stress --------------------------------------------------------------------------------


def test_stress_pipelined_brpop_every_element_once(rr: redis.Redis,
                                                   conns: Callable[[], Conn]) -> None:
    """20 clients, 4 per key on 5 keys, each with 10 BRPOPs pipelined; 200 elements pushed."""
    keys = [f"stress{i}" for i in range(5)]
    clients = [conns() for _ in range(20)]
    for i, c in enumerate(clients):
        c.send(*[("BRPOP", keys[i % 5], "0")] * 10)
    wait_blocked(rr, 20)
    rng = random.Random(7)
    pushed: list[str] = []
    pusher = conns()
    per_key = {k: 0 for k in keys}
    batch: list[tuple[str, ...]] = []
    while len(pushed) < 200:
        key = rng.choice([k for k in keys if per_key[k] < 40])
        n = min(rng.choice([1, 1, 3]), 40 - per_key[key])
        values = [f"v{len(pushed) + j}" for j in range(n)]
        batch.append((rng.choice(["LPUSH", "RPUSH"]), key, *values))
        pushed.extend(values)
        per_key[key] += n
        if len(batch) == 8:
            pusher.send(*batch)
            pusher.read_many(len(batch))
            batch = []
    if batch:
        pusher.send(*batch)
        pusher.read_many(len(batch))
    received: Counter[str] = Counter()
    for i, c in enumerate(clients):
        for reply in c.read_many(10):
            assert reply.startswith(b"*2\r\n$%d\r\n%s\r\n" % (len(keys[i % 5]), keys[i % 5].encode()))
            received[reply.split(b"\r\n")[4].decode()] += 1
    assert received == Counter(pushed)
    assert rr.exists(*keys) == 0
    assert rr.info("clients")["blocked_clients"] == 0


def test_stress_threads_brpop_every_element_once(rr: redis.Redis, sluice: ThreadedServer) -> None:
    """20 redis-py clients in threads looping on BRPOP while 200 elements are pushed."""
    keys = [f"t{i}" for i in range(5)]
    got: list[list[bytes]] = [[] for _ in range(20)]

    def worker(i: int) -> None:
        client = sluice.client(protocol=protocol_of(rr), socket_timeout=15)
        try:
            while True:
                _, value = client.brpop([keys[i % 5]], timeout=0)
                if value == b"stop":
                    return
                got[i].append(value)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    wait_blocked(rr, 20)
    pushed = [f"e{n}".encode() for n in range(200)]
    pipe = rr.pipeline(transaction=False)
    for n, value in enumerate(pushed):
        pipe.lpush(keys[n % 5], value)
        if n % 10 == 9:
            pipe.execute()
    for key in keys:
        rr.lpush(key, *[b"stop"] * 4)  # after every element: each worker stops exactly once
    for t in threads:
        t.join(15)
    assert not any(t.is_alive() for t in threads)
    assert sorted(v for values in got for v in values) == sorted(pushed)
    assert rr.exists(*keys) == 0


def test_timed_out_command_is_in_the_slow_log_once(r: redis.Redis) -> None:
    """Done by its timeout: counted and slow-logged then, once (Redis 7.2+ updateStatsOnUnblock;
    7.0.15 leaves it out of the slow log)."""
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        r.config_resetstat()
        assert r.blpop(["nothing-here"], timeout=0.01) is None
        logged = [e["command"] for e in r.slowlog_get(10)]
        assert logged.count(b"BLPOP nothing-here 0.01") == 1
        assert r.info("commandstats")["cmdstat_blpop"]["calls"] == 1
    finally:
        r.config_set("slowlog-log-slower-than", 10000)
