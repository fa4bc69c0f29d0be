"""WAIT, WAITAOF, min-replicas-to-write and the replication settings over a real socket,
with a real AOF under each fsync policy (RESP2 and RESP3).

Sluice is a master with no replicas: WAIT counts 0 replicas; WAITAOF's local count says
whether the AOF is fsynced past the connection's last write, and a blocked WAITAOF is
answered by the fsync itself (``always``: in the loop iteration of the write; ``everysec``:
the background fsync; ``no``: never, so the timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from sluice.commands import errors
from tests.support import ThreadedServer, wait_blocked

pytestmark = pytest.mark.timeout(60)
Factory = Callable[..., ThreadedServer]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def aof_server(make_server: Factory, tmp_path: Path) -> ThreadedServer:
    return make_server(f"dir {tmp_path}", "appendonly yes", "appendfsync always")


@pytest.fixture
def clients(aof_server: ThreadedServer, protocol: int) -> Iterator[Callable[[], redis.Redis]]:
    made: list[redis.Redis] = []

    def new() -> redis.Redis:
        c = aof_server.client(protocol=protocol, socket_timeout=20)
        made.append(c)
        return c

    yield new
    for c in made:
        c.close()


def test_waitaof_with_appendfsync_always_answers_at_once(clients: Callable[[], redis.Redis]) -> None:
    r = clients()
    assert r.waitaof(1, 0, 0) == [1, 0]  # nothing written yet
    r.incr("n")
    assert r.waitaof(1, 0, 0) == [1, 0]
    with r.pipeline(transaction=False) as p:  # write and WAITAOF in one loop iteration
        p.incr("n").waitaof(1, 0, 0)
        assert p.execute() == [2, [1, 0]]
    # two INCRs, and the REPLCONF GETACK Redis sends (to no replica) when a WAITAOF blocks
    assert r.info("replication")["master_repl_offset"] == 3


def test_waitaof_with_everysec_waits_for_the_background_fsync(
        clients: Callable[[], redis.Redis]) -> None:
    r = clients()
    r.config_set("appendfsync", "everysec")
    r.incr("n")
    assert r.waitaof(1, 0, 0) == [1, 0]  # within about a second, woken by the fsync


def test_waitaof_with_appendfsync_no_times_out(clients: Callable[[], redis.Redis]) -> None:
    r = clients()
    r.config_set("appendfsync", "no")
    r.incr("n")
    assert r.waitaof(1, 0, 50) == [0, 0]
    assert r.waitaof(0, 0, 0) == [0, 0]  # asks for nothing: answers the count at once


def test_a_blocked_waitaof_is_answered_when_fsyncs_resume(
        clients: Callable[[], redis.Redis]) -> None:
    r, admin = clients(), clients()
    r.config_set("appendfsync", "no")
    r.incr("n")
    r.connection = r.connection_pool.get_connection()  # one connection for send/read
    r.connection.send_command("WAITAOF", "1", "0", "0")
    wait_blocked(admin, 1)
    admin.config_set("appendfsync", "everysec")  # the cron fsyncs within a second
    assert r.connection.read_response() == [1, 0]
    wait_blocked(admin, 0)


def test_switching_the_aof_off_errors_a_local_waiter(clients: Callable[[], redis.Redis]) -> None:
    r, admin = clients(), clients()
    r.config_set("appendfsync", "no")
    r.incr("n")
    r.connection = r.connection_pool.get_connection()
    r.connection.send_command("WAITAOF", "1", "0", "0")
    wait_blocked(admin, 1)
    admin.config_set("appendonly", "no")
    with pytest.raises(redis.ResponseError) as e:
        r.connection.read_response()
    assert str(e.value) == errors.WAITAOF_APPENDONLY_OFF.removeprefix("ERR ")
    with pytest.raises(redis.ResponseError, match="appendonly is disabled"):
        admin.waitaof(1, 0, 0)


def test_wait_and_waitaof_end_by_client_unblock(clients: Callable[[], redis.Redis]) -> None:
    r, admin = clients(), clients()
    my_id = r.client_id()
    r.connection = r.connection_pool.get_connection()
    r.connection.send_command("WAIT", "1", "0")
    wait_blocked(admin, 1)
    assert admin.client_unblock(my_id) == 1
    assert r.connection.read_response() == 0
    r.connection.send_command("WAITAOF", "0", "1", "0")
    wait_blocked(admin, 1)
    assert admin.client_unblock(my_id, error=True) == 1
    with pytest.raises(redis.ResponseError, match="UNBLOCKED"):
        r.connection.read_response()
    r.connection.send_command("WAIT", "2", "30")  # a timeout answers 0 replicas
    assert r.connection.read_response() == 0


def test_scripts_and_transactions_do_not_block(clients: Callable[[], redis.Redis]) -> None:
    r = clients()
    assert r.eval("return redis.pcall('wait', '1', '0')", 0) == 0
    assert r.eval("return redis.pcall('waitaof', '0', '1', '0')", 0) == [1, 0]
    with r.pipeline() as p:
        p.wait(5, 0).waitaof(0, 3, 0)
        assert p.execute() == [0, [1, 0]]


def test_min_replicas_to_write(make_server: Factory, protocol: int) -> None:
    s = make_server("min-slaves-to-write 2")  # the alias, from the config file
    r = s.client(protocol=protocol)
    assert r.config_get("min-replicas-*") == {"min-replicas-to-write": "2",
                                               "min-replicas-max-lag": "10"}
    assert r.info("replication")["min_slaves_good_slaves"] == 0
    with pytest.raises(redis.ResponseError) as e:
        r.set("k", "v")
    assert str(e.value) == errors.NOREPLICAS
    assert r.get("k") is None
    with pytest.raises(redis.ResponseError, match="NOREPLICAS"), r.pipeline() as p:
        p.set("k", "v").get("k").execute()  # refused when queued: EXECABORT
    assert r.eval("return redis.call('get', 'k')", 0) is None  # reads in scripts run
    assert r.eval("#!lua flags=no-writes\nreturn redis.call('get', 'k')", 0) is None
    with pytest.raises(redis.ResponseError, match="^NOREPLICAS"):
        r.eval("#!lua\nreturn redis.call('get', 'k')", 0)  # may write: refused up front
    with pytest.raises(redis.ResponseError, match="^NOREPLICAS"):
        r.eval("return redis.call('set', 'k', 'v')", 0)
    r.config_set("min-replicas-max-lag", "0")
    assert "min_slaves_good_slaves" not in r.info("replication")
    assert r.set("k", "v")
    r.close()


def test_repl_backlog_size(make_server: Factory, protocol: int) -> None:
    s = make_server("repl-backlog-size 100")  # a config file's value stands as given
    r = s.client(protocol=protocol)
    info = r.info("replication")
    assert (info["repl_backlog_size"], info["repl_backlog_active"]) == (100, 0)
    r.config_set("repl-backlog-size", "10mb")
    assert r.config_get("repl-backlog-size") == {"repl-backlog-size": str(10 << 20)}
    assert r.info("replication")["repl_backlog_size"] == 10 << 20
    r.config_set("repl-backlog-size", "100")  # at run time: at least 16 KB, as Redis
    assert r.config_get("repl-backlog-size") == {"repl-backlog-size": "16384"}
    with pytest.raises(redis.ResponseError, match="must be between 1 and"):
        r.config_set("repl-backlog-size", "0")
    r.close()
