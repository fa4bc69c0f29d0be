"""Shared fixtures.

* ``sluice``: one in-process Sluice server for the session (port 0); ``r`` / ``r3`` are
  redis-py clients in RESP2 / RESP3, ``rr`` is parametrized over both. The keyspace is
  flushed after every test.
* ``reference``: a real redis-server (Debian's) for differential tests; ``rr_pair`` gives
  (sluice client, redis client) with the same protocol.
* ``make_server``: a fresh in-process server with its own config lines, stopped after the test.
* ``loop_port``: a Sluice port on each event loop, asyncio (the session's in-process server)
  and uvloop (a server process of its own).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from hypothesis import settings

from tests.support import ProcessServer, ThreadedServer, require_redis_server

# CI must not go red on a case no one ran before the push: there, every property test
# draws the same examples each run (and keeps no example database). Locally they explore.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def sluice() -> Iterator[ThreadedServer]:
    server = ThreadedServer().start()
    yield server
    server.stop()


@pytest.fixture(params=["asyncio", "uvloop"])
def loop_port(request: pytest.FixtureRequest, sluice: ThreadedServer) -> Iterator[int]:
    if request.param == "asyncio":
        yield sluice.port
        return
    server = ProcessServer("sluice").start()
    try:
        yield server.port
    finally:
        server.stop()


def _client(port: int, protocol: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, protocol=protocol, socket_timeout=20)


@pytest.fixture
def r(sluice: ThreadedServer) -> Iterator[redis.Redis]:
    client = _client(sluice.port, 2)
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def r3(sluice: ThreadedServer) -> Iterator[redis.Redis]:
    client = _client(sluice.port, 3)
    yield client
    client.flushall()
    client.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def rr(request: pytest.FixtureRequest, sluice: ThreadedServer) -> Iterator[redis.Redis]:
    client = _client(sluice.port, request.param)
    yield client
    client.flushall()
    client.close()


@pytest.fixture(scope="session")
def reference() -> Iterator[ProcessServer]:
    require_redis_server()
    server = ProcessServer("redis").start()
    yield server
    server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair(request: pytest.FixtureRequest, sluice: ThreadedServer,
         reference: ProcessServer) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    """(sluice, redis) clients speaking the same protocol, both flushed afterwards."""
    a = _client(sluice.port, request.param)
    b = _client(reference.port, request.param)
    yield a, b
    for c in (a, b):
        c.flushall()
        c.close()


@pytest.fixture
def make_server() -> Iterator[Callable[..., ThreadedServer]]:
    started: list[ThreadedServer] = []

    def factory(*config_lines: str, clock: Any = None) -> ThreadedServer:
        server = ThreadedServer(list(config_lines), clock=clock).start()
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def raw_pair(request: pytest.FixtureRequest, sluice: ThreadedServer,
             reference: ProcessServer) -> Iterator[tuple[Any, Any]]:
    """(sluice, redis) byte-level clients with the same protocol; both flushed afterwards."""
    from tests.support import RawClient

    a, b = RawClient(sluice.port, request.param), RawClient(reference.port, request.param)
    yield a, b
    for c in (a, b):
        c.call("FLUSHALL")
        c.close()
