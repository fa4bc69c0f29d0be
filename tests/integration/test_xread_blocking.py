"""XREAD BLOCK over real sockets, RESP2 and RESP3.

A blocked client runs in a thread on its own connection; the test waits until INFO clients
reports it blocked (never a sleep), then writes and reads the reply. Timing is measured only
to check that a timeout is honoured, never to synchronise.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from tests.support import RawClient, wait_blocked

pytestmark = pytest.mark.timeout(20)


def raw(r: redis.Redis, *args: Any) -> Any:
    """A reply without redis-py's per-command parsing."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


class Blocked:
    """A command sent on its own connection from a thread; ``reply()`` waits for the answer."""

    def __init__(self, r: redis.Redis, *args: Any) -> None:
        kw = r.connection_pool.connection_kwargs
        self.client = redis.Redis(host=kw["host"], port=kw["port"],
                                  protocol=kw.get("protocol", 2), socket_timeout=15)
        self.out: dict[str, Any] = {}
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, args=args, daemon=True)
        self.thread.start()

    def _run(self, *args: Any) -> None:
        try:
            self.out["reply"] = raw(self.client, *args)
        except Exception as e:  # noqa: BLE001 - handed to the test
            self.out["error"] = e
        self.out["elapsed"] = time.monotonic() - self.started

    def reply(self) -> Any:
        self.thread.join(15)
        assert not self.thread.is_alive(), "the blocked client was never answered"
        self.client.close()
        if "error" in self.out:
            raise self.out["error"]
        return self.out["reply"]

    @property
    def answered(self) -> bool:
        return not self.thread.is_alive()


def streams(reply: Any) -> list[tuple[bytes, list[bytes]]]:
    """XREAD's reply as [(key, [ids])], from a RESP2 array or a RESP3 map."""
    pairs = reply.items() if isinstance(reply, dict) else reply
    return [(k, [e[0] for e in v]) for k, v in pairs]


def test_block_waits_for_new_data(rr: redis.Redis) -> None:
    rr.xadd("s2", {"old": "abcd1234"}, id="1-0")
    b = Blocked(rr, "XREAD", "BLOCK", "20000", "STREAMS", "s1", "s2", "s3", "$", "$", "$")
    wait_blocked(rr, 1)
    rr.xadd("s2", {"new": "abcd1234"}, id="2-0")
    assert streams(b.reply()) == [(b"s2", [b"2-0"])]
    assert rr.info("clients")["blocked_clients"] == 0


def test_old_data_is_served_without_blocking(rr: redis.Redis) -> None:
    rr.xadd("s2", {"old": "x"}, id="1-0")
    assert streams(raw(rr, "XREAD", "BLOCK", "20000", "STREAMS", "s1", "s2", "$", "0-0")) == [
        (b"s2", [b"1-0"])]
    assert rr.info("clients")["blocked_clients"] == 0


def test_timeout_is_a_null_array(rr: redis.Redis) -> None:
    b = Blocked(rr, "XREAD", "BLOCK", "150", "STREAMS", "s", "$")
    assert b.reply() is None
    assert 0.14 <= b.out["elapsed"] < 5  # milliseconds, not seconds


@pytest.mark.parametrize("protocol", [2, 3])
def test_timeout_bytes(sluice: Any, protocol: int) -> None:
    c = RawClient(sluice.port, protocol)
    try:
        assert c.call("XREAD", "BLOCK", "30", "STREAMS", "s", "$") == (
            b"*-1\r\n" if protocol == 2 else b"_\r\n")
    finally:
        c.close()


def test_block_zero_waits_forever(rr: redis.Redis) -> None:
    b = Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    rr.xadd("other", {"f": "v"})
    rr.set("k", "v")
    assert rr.info("clients")["blocked_clients"] == 1 and not b.answered
    rr.xadd("s", {"f": "v"}, id="5-0")
    assert streams(b.reply()) == [(b"s", [b"5-0"])]


def test_count_is_honoured_when_served(rr: redis.Redis) -> None:
    b = Blocked(rr, "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    with rr.pipeline(transaction=True) as p:
        for i in (1, 2, 3):
            p.xadd("s", {"f": i}, id=f"{i}-0")
        p.execute()
    assert streams(b.reply()) == [(b"s", [b"1-0", b"2-0"])]


def test_a_transaction_wakes_once_with_everything(rr: redis.Redis) -> None:
    rr.xadd("s", {"old": "x"}, id="1-0")
    b = Blocked(rr, "XREAD", "BLOCK", "20000", "STREAMS", "s", "s", "s", "$", "$", "$")
    wait_blocked(rr, 1)
    with rr.pipeline(transaction=True) as p:
        for i in (2, 3, 4):
            p.xadd("s", {"f": i}, id=f"{i}-0")
        p.execute()
    got = streams(b.reply())
    assert got[0] == (b"s", [b"2-0", b"3-0", b"4-0"])


def test_served_right_after_the_command_that_woke_it(rr: redis.Redis, sluice: Any) -> None:
    # Redis serves ready keys after each command, so of two XADDs pipelined in one packet the
    # blocked XREAD sees only the first (checked against redis-server 7.0.15).
    b = Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    c = RawClient(sluice.port)
    try:
        req = b"".join(b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n%d-0\r\n$1\r\na\r\n$1\r\n%d\r\n"
                       % (i, i) for i in (1, 2))
        c.send_raw(req)
        want = b"$3\r\n1-0\r\n$3\r\n2-0\r\n"
        got = b""
        while len(got) < len(want):
            got += c.sock.recv(1024)
        assert got == want
    finally:
        c.close()
    assert streams(b.reply()) == [(b"s", [b"1-0"])]


def test_every_waiting_client_is_served(rr: redis.Redis) -> None:
    clients = [Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "s", "$") for _ in range(3)]
    wait_blocked(rr, 3)
    rr.xadd("s", {"f": "v"}, id="7-0")
    for b in clients:
        assert streams(b.reply()) == [(b"s", [b"7-0"])]


def test_deleting_the_key_does_not_wake_xread(rr: redis.Redis) -> None:
    rr.xadd("s", {"f": "v"}, id="1-0")
    b = Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    rr.delete("s")
    with rr.pipeline(transaction=True) as p:
        p.xadd("s", {"old": "x"}, id="2-0")
        p.delete("s")
        p.execute()
    assert rr.info("clients")["blocked_clients"] == 1 and not b.answered
    rr.xadd("s", {"new": "x"}, id="3-0")
    assert streams(b.reply()) == [(b"s", [b"3-0"])]


def test_another_type_under_the_key_does_not_wake_xread(rr: redis.Redis) -> None:
    b = Blocked(rr, "XREAD", "BLOCK", "20000", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    with rr.pipeline(transaction=True) as p:
        p.xadd("s", {"old": "x"}, id="1-0")
        p.delete("s")
        p.lpush("s", "foo", "bar")
        p.execute()
    assert rr.info("clients")["blocked_clients"] == 1 and not b.answered
    rr.delete("s")
    rr.xadd("s", {"new": "x"}, id="2-0")
    assert streams(b.reply()) == [(b"s", [b"2-0"])]


def test_entries_that_do_not_qualify_keep_it_blocked(rr: redis.Redis) -> None:
    # Redis's "XREAD streamID edge (blocking)": woken twice for nothing, served the third time.
    b = Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "x", "1-18446744073709551615")
    wait_blocked(rr, 1)
    rr.xadd("x", {"f": "v"}, id="1-1")
    rr.xadd("x", {"f": "v"}, id="1-18446744073709551615")
    assert rr.info("clients")["blocked_clients"] == 1
    rr.xadd("x", {"f": "v"}, id="2-1")
    assert streams(b.reply()) == [(b"x", [b"2-1"])]


def test_deleted_entries_never_give_an_empty_reply(rr: redis.Redis) -> None:
    rr.xadd("s1", {"f": "v"}, id="666-0")
    rr.xadd("s1", {"f2": "v2"}, id="667-0")
    rr.xdel("s1", "667-0")
    assert raw(rr, "XREAD", "BLOCK", "10", "STREAMS", "s1", "666") is None


def test_plus_blocks_on_an_empty_stream(rr: redis.Redis) -> None:
    # XREAD ... + is Redis 7.4+: on a missing key it blocks until the first entry arrives.
    b = Blocked(rr, "XREAD", "BLOCK", "20000", "STREAMS", "le", "+")
    wait_blocked(rr, 1)
    rr.xadd("le", {"k1": "v1"}, id="1-0")
    assert streams(b.reply()) == [(b"le", [b"1-0"])]
    rr.xadd("le", {"k2": "v2"}, id="2-0")
    assert streams(raw(rr, "XREAD", "BLOCK", "1000000", "STREAMS", "le", "+")) == [
        (b"le", [b"2-0"])]


def test_dollar_is_frozen_while_blocked(rr: redis.Redis) -> None:
    # "$" means the last ID when the client blocked: entries added by a transaction that also
    # deletes them must not move it (or the client would miss the next entry).
    rr.xadd("s", {"f": "v"}, id="1-0")
    b = Blocked(rr, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(rr, 1)
    with rr.pipeline(transaction=True) as p:
        p.xadd("s", {"f": "v"}, id="2-0")
        p.xdel("s", "2-0")
        p.execute()
    assert rr.info("clients")["blocked_clients"] == 1
    rr.xadd("s", {"f": "v"}, id="3-0")
    assert streams(b.reply()) == [(b"s", [b"3-0"])]


@pytest.mark.parametrize("protocol", [2, 3])
def test_never_blocks_inside_multi(sluice: Any, protocol: int) -> None:
    c = RawClient(sluice.port, protocol)
    try:
        assert c.call("MULTI") == b"+OK\r\n"
        assert c.call("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$") == b"+QUEUED\r\n"
        assert c.call("EXEC") == (b"*1\r\n*-1\r\n" if protocol == 2 else b"*1\r\n_\r\n")
    finally:
        c.close()
