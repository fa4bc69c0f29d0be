"""Connection commands over a real socket with redis-py, RESP2 and RESP3."""

from __future__ import annotations

import pytest
import redis

from sluice.commands.errors import DB_INDEX_OUT_OF_RANGE


def test_ping_echo(rr: redis.Redis) -> None:
    assert rr.ping() is True
    assert rr.echo("hello") == b"hello"


def test_select_out_of_range(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match=DB_INDEX_OUT_OF_RANGE.removeprefix("ERR ")):
        rr.execute_command("SELECT", 16)


def test_hello_reports_protocol(r3: redis.Redis) -> None:
    info = r3.execute_command("HELLO", "3")
    assert info[b"proto"] == 3
    assert info[b"server"] == b"redis"


def test_unknown_command_keeps_connection(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="unknown command 'NOSUCH'"):
        rr.execute_command("NOSUCH", "a")
    assert rr.ping()


def test_client_id_is_distinct(sluice) -> None:  # type: ignore[no-untyped-def]
    a, b = sluice.client(), sluice.client()
    assert a.client_id() != b.client_id()


def test_idle_timeout_closes_a_client_inside_multi(make_server) -> None:  # type: ignore[no-untyped-def]
    """Redis's clientsCronHandleTimeout spares blocked clients, not ones idling in MULTI."""
    from tests.support import wait_until

    server = make_server("timeout 1")
    idle, watcher = server.client(), server.client()
    idle.execute_command("MULTI")
    wait_until(lambda: watcher.info("clients")["connected_clients"] == 1, timeout=10,
               what="the idle MULTI client to be closed")
    # redis-py reconnects; the transaction died with the old connection.
    with pytest.raises(redis.ResponseError, match="EXEC without MULTI"):
        idle.execute_command("EXEC")
