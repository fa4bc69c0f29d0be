"""redis-benchmark's default tests, for the commands Sluice has, complete without an error.

This is a compatibility test, not a measurement (``make bench`` measures): a short run
(``-n 2000``, 50 connections) of every default test whose commands Sluice implements, once
unpipelined and once with ``-P 16``, plus the stream commands the benchmarks use as custom
commands. redis-benchmark stops with "Error from server: ..." and exit status 1 at the first
error reply, which the last test checks so that a failure here can be seen.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import redis

from tests.support import ThreadedServer

pytestmark = pytest.mark.timeout(120)

REDIS_BENCHMARK = shutil.which("redis-benchmark") or ""
# Default tests of redis-benchmark 7.0 whose commands Sluice implements (it has no sets,
# hashes or sorted sets yet: SADD, HSET, SPOP, ZADD, ZPOPMIN are left out).
DEFAULT_TESTS = {
    "ping_inline": "PING_INLINE", "ping_mbulk": "PING_MBULK", "set": "SET", "get": "GET",
    "incr": "INCR", "lpush": "LPUSH", "rpush": "RPUSH", "lpop": "LPOP", "rpop": "RPOP",
    "lrange_100": "LRANGE_100 (first 100 elements)",
    "lrange_300": "LRANGE_300 (first 300 elements)", "mset": "MSET (10 keys)",
}
STREAM_COMMANDS = [
    ["XADD", "s", "*", "sensor-id", "1234", "temperature", "19.8", "ts", "1700000000000"],
    ["XRANGE", "s", "-", "+", "COUNT", "10"],
    ["XLEN", "s"],
]


@pytest.fixture(scope="module", autouse=True)
def _need_redis_benchmark() -> None:
    if not REDIS_BENCHMARK:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-benchmark is required (make test installs redis-tools)")
        pytest.skip("redis-benchmark not installed")


@pytest.fixture
def port(sluice: ThreadedServer) -> Iterator[int]:
    yield sluice.port
    redis.Redis(port=sluice.port).flushall()


def benchmark(port: int, *args: str) -> tuple[int, dict[str, float], str]:
    """Run redis-benchmark --csv; returns (exit status, {test: requests/s}, stderr)."""
    done = subprocess.run([REDIS_BENCHMARK, "-p", str(port), "--csv", "-n", "2000", *args],
                          capture_output=True, text=True, timeout=90)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    return done.returncode, {row["test"]: float(row["rps"]) for row in rows}, done.stderr


@pytest.mark.parametrize("pipeline", ["1", "16"], ids=["unpipelined", "P16"])
def test_default_tests_complete(port: int, pipeline: str) -> None:
    status, results, err = benchmark(port, "-P", pipeline, "-t", ",".join(DEFAULT_TESTS))
    assert (status, err) == (0, "")
    # Every test ran to its summary line (LRANGE's tests also fill the list with LPUSH first).
    assert set(results) == set(DEFAULT_TESTS.values()) | {"LPUSH (needed to benchmark LRANGE)"}
    assert all(rps > 0 for rps in results.values()), results
    r = redis.Redis(port=port)
    assert r.llen("mylist") > 0  # redis-benchmark's own keys
    assert r.get("key:__rand_int__") == b"VXK"  # SET's value (no -r: one fixed key)


@pytest.mark.parametrize("pipeline", ["1", "16"], ids=["unpipelined", "P16"])
@pytest.mark.parametrize("command", STREAM_COMMANDS, ids=lambda c: c[0])
def test_stream_commands_complete(port: int, command: list[str], pipeline: str) -> None:
    redis.Redis(port=port).xadd("s", {"seed": "1"})
    status, results, err = benchmark(port, "-P", pipeline, *command)
    assert (status, err) == (0, "")
    assert list(results) == [" ".join(command)]
    if command[0] == "XADD":
        assert redis.Redis(port=port).xlen("s") == 2001


def test_an_error_reply_fails_the_run(port: int) -> None:
    # The check above can fail: one error reply stops redis-benchmark with status 1.
    status, results, err = benchmark(port, "NOSUCHCOMMAND", "x")
    assert status == 1
    assert "Error from server: ERR unknown command 'NOSUCHCOMMAND'" in err
    assert results == {}
