"""What RESTORE logs to the AOF, Sluice against redis-server 8.6.3 (Tcl expire's "All TTL in
commands are propagated as absolute timestamp in milliseconds in AOF"): a relative TTL becomes
the deadline with ``ABSTTL`` appended; otherwise the command is logged as it was given, its
options (REPLACE, a lower-case ``absttl``, IDLETIME) untouched."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.differential.test_set_propagation_diff import AofSide
from tests.support import require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AofSide, AofSide]]:
    require_redis_server()
    tmp = tmp_path_factory.mktemp("restore")
    pair = AofSide("sluice", tmp), AofSide("redis", tmp)
    yield pair
    for side in pair:
        side.close()


def _payloads(sides: tuple[AofSide, AofSide]) -> list[bytes]:
    payloads = []
    for side in sides:
        side.client.call("SET", "src", "bar")
        payload = side.client.call("DUMP", "src")
        payloads.append(payload.split(b"\r\n", 1)[1][:-2])  # the bulk string's bytes
        side.logged()
    return payloads


def test_restore_logs_as_redis(sides: tuple[AofSide, AofSide]) -> None:
    payloads = _payloads(sides)
    later = str(int(time.time() * 1000) + 100_000)
    cases: list[tuple[str, ...]] = [
        ("RESTORE", "k0", "0", "{p}"),
        ("RESTORE", "k1", "100000", "{p}"),
        ("RESTORE", "k2", later, "{p}", "absttl"),
        ("restore", "k1", "50000", "{p}", "replace", "idletime", "5"),
        ("RESTORE", "k0", "0", "{p}", "REPLACE", "FREQ", "3"),
    ]
    for case in cases:
        logged = []
        for side, payload in zip(sides, payloads, strict=True):
            argv = [payload if a == "{p}" else a for a in case]
            assert side.client.call(*argv) == b"+OK\r\n", case
            logged.append(side.logged())
        ours, theirs = logged
        if case[2] not in ("0", later):  # a relative TTL: the deadlines are each server's own
            assert len(ours) == len(theirs) == 1, case
            deadline = int(ours[0][2])
            assert abs(deadline - int(theirs[0][2])) < 10_000, case
            ours[0][2] = theirs[0][2] = b"*"
        ours = [[payloads[1] if a == payloads[0] else a for a in c] for c in ours]
        assert ours == theirs, case
