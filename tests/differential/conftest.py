"""Fixtures of the stream differential tests."""

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
