"""``from sluice import serve_in_background``: a server inside the caller's process that hands
back its URL and, on ``stop()``, leaves nothing running and nothing behind."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
import redis

import sluice
from sluice.server.config import ConfigError
from sluice.server.embedded import BackgroundServer
from tests.support import free_port

pytestmark = pytest.mark.timeout(60)


def ours() -> list[str]:
    return [t.name for t in threading.enumerate()
            if t.name.startswith(("sluice-server", "sluice-bio"))]


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_serve_returns_a_url_and_stop_leaves_no_thread_port_or_file() -> None:
    before = ours()
    server = sluice.serve_in_background(appendonly="yes")
    assert server.url == f"redis://127.0.0.1:{server.port}/0" and server.port
    r = redis.Redis.from_url(server.url)
    r.xadd("s", {"f": "v"})
    assert r.xlen("s") == 1 and r.config_get("appendonly") == {"appendonly": "yes"}
    assert ours() != before  # the loop thread and the AOF's background thread
    data = server.dir
    assert os.path.isdir(os.path.join(data, "appendonlydir"))
    r.close()
    server.stop()
    assert ours() == before
    assert refused(server.port)
    assert not os.path.exists(data)  # a private directory, removed


def test_a_given_directory_is_kept_and_loaded_again(tmp_path: Path) -> None:
    with sluice.serve_in_background(dir=str(tmp_path), save="3600 1") as first:
        redis.Redis.from_url(first.url).set("k", "v")
    assert (tmp_path / "dump.rdb").exists()  # the final save of an orderly stop
    with sluice.serve_in_background(dir=str(tmp_path)) as second:
        assert redis.Redis.from_url(second.url).get("k") == b"v"


def test_credentials_go_into_the_url() -> None:
    with sluice.serve_in_background(requirepass="p@ss word") as server:
        assert server.url.startswith("redis://:p%40ss%20word@127.0.0.1:")
        assert redis.Redis.from_url(server.url).ping()
    lines = ["user bob on >secret ~* +@all", "user default off"]
    with sluice.serve_in_background(*lines, username="bob", password="secret") as server:
        assert redis.Redis.from_url(server.url).acl_whoami() == "bob"


def test_flushall_needs_no_permission_and_wakes_nobody_wrongly() -> None:
    lines = ["user app on >pw ~* +@read +@write -flushall", "user default off"]
    with BackgroundServer(*lines, username="app", password="pw") as server:
        r = redis.Redis.from_url(server.url)
        r.set("a", "1")
        with pytest.raises(redis.exceptions.NoPermissionError):
            r.flushall()
        server.flushall()
        assert r.dbsize() == 0
        assert server.call(lambda s: len(s.clients)) == 1  # no client left behind


def test_start_errors_are_raised_in_the_caller() -> None:
    with pytest.raises(ConfigError, match="Bad directive"):
        BackgroundServer("no-such-directive 1")
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(OSError):
            sluice.serve_in_background(port=port)
    assert not [n for n in ours() if n.endswith(str(port))]


def test_a_fixed_port_and_a_second_stop_are_fine() -> None:
    port = free_port()
    server = sluice.serve_in_background(port=port)
    assert server.port == port and redis.Redis(port=port).ping()
    server.stop()
    server.stop()
    assert refused(port)
