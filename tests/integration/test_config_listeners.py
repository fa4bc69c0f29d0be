"""CONFIG SET port / bind move the TCP listeners at run time, and a CONFIG SET whose apply
fails is rolled back whole (Redis's ``changeListener`` and ``restoreBackupConfig``; the
scenario of Redis's introspection unit, "CONFIG SET rollback on apply error")."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
import redis

from tests.support import ThreadedServer, answers, free_port, wait_until

Factory = Callable[..., ThreadedServer]


def test_config_set_port_moves_the_listener(make_server: Factory) -> None:
    server = make_server()
    old = server.port
    r = server.client()
    new = free_port()
    assert r.config_set("port", new)
    wait_until(lambda: answers(new))
    assert not answers(old)
    moved = redis.Redis(port=new)
    assert moved.config_get("port") == {"port": str(new)}
    assert moved.info("server")["listener0"]["port"] == new
    assert r.ping()  # a connection made before the move stays
    moved.config_set("port", 0)  # no TCP listener at all
    assert not answers(new)


def test_a_failed_apply_rolls_the_whole_config_set_back(make_server: Factory) -> None:
    server = make_server()
    r = server.client()
    names = ["maxmemory", "port", "client-query-buffer-limit"]
    before = {n: r.config_get(n)[n] for n in names}
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("CONFIG", "SET", "maxmemory", "10000001",
                              "port", busy.getsockname()[1], "client-query-buffer-limit", "10m")
        assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'port') - "
                                "Unable to listen on this port. Check server logs.")
        assert {n: r.config_get(n)[n] for n in names} == before
        wait_until(lambda: answers(server.port))  # listening again where it was
    finally:
        busy.close()


def test_config_set_bind_to_an_address_that_cannot_be_bound(make_server: Factory) -> None:
    server = make_server()
    r = server.client()
    with pytest.raises(redis.ResponseError, match="Failed to bind to specified addresses."):
        r.config_set("bind", "192.0.2.1")  # TEST-NET-1: no interface here has it
    assert r.config_get("bind") == {"bind": "127.0.0.1 -::1"}
    wait_until(lambda: answers(server.port))
    assert r.config_set("bind", "127.0.0.1")
    wait_until(lambda: answers(server.port))
