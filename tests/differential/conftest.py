"""Fixtures of the differential tests: fresh servers, and the stream tests' small nodes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ProcessServer, RawClient, ThreadedServer, require_redis_server


@pytest.fixture(scope="module")
def small_nodes() -> Iterator[tuple[RawClient, RawClient]]:
    """Sluice and redis-server with 4-entry / 200-byte macro nodes, so node boundaries (and
    ``~`` trims, which drop whole nodes) matter everywhere. One pair per test module."""
    require_redis_server()
    ours = ThreadedServer(["stream-node-max-entries 4", "stream-node-max-bytes 200"]).start()
    theirs = ProcessServer("redis", ["--stream-node-max-entries", "4",
                                     "--stream-node-max-bytes", "200"]).start()
    a, b = RawClient(ours.port), RawClient(theirs.port)
    yield a, b
    a.close()
    b.close()
    ours.stop()
    theirs.stop()


@pytest.fixture
def fresh_servers() -> Iterator[tuple[ThreadedServer, ProcessServer]]:
    """A Sluice and a redis-server of the test's own, for tests that change settings or
    close clients."""
    require_redis_server()
    ours, theirs = ThreadedServer().start(), ProcessServer("redis").start()
    yield ours, theirs
    ours.stop()
    theirs.stop()
