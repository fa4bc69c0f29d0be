"""The deterministic-ID sink path without Spark: retries skip, conflicts fail loudly."""

from __future__ import annotations

import pyarrow as pa
import pytest
import redis

from tests.pipeline.conftest import ServerHandle

pytest.importorskip("pyspark")

from sluice.pipeline.idempotency import ConflictError, reserve_base  # noqa: E402
from sluice.pipeline.options import WriteOptions  # noqa: E402
from sluice.pipeline.writer import PartitionWriter  # noqa: E402


def batch(values: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"v": pa.array(values, type=pa.string())})


def writer(server: ServerHandle, stream: str, epoch: str, partition: int = 0) -> PartitionWriter:
    opts = WriteOptions.from_options({"url": server.url, "stream": stream, "batchSize": "3"})
    w = PartitionWriter(opts, "ids", "test", epoch)
    w.partition = partition
    return w


def test_retry_skips_what_the_failed_attempt_wrote(
    server: ServerHandle, r: redis.Redis, key: str
) -> None:
    first = writer(server, key, "e1").write(iter([batch(["a", "b", "c", "d"])]))
    assert (first.written, first.skipped) == (4, 0)
    again = writer(server, key, "e1").write(iter([batch(["a", "b", "c", "d", "e"])]))
    assert (again.written, again.skipped) == (1, 4)
    assert [f["v"] for _, f in r.xrange(key)] == ["a", "b", "c", "d", "e"]


def test_partitions_writing_one_stream_one_after_the_other_are_fine(
    server: ServerHandle, r: redis.Redis, key: str
) -> None:
    writer(server, key, "e4", partition=1).write(iter([batch(["p1"])]))
    writer(server, key, "e4", partition=0).write(iter([batch(["p0"])]))
    writer(server, key, "e4", partition=1).write(iter([batch(["p1"])]))  # a retry
    assert [f["v"] for _, f in r.xrange(key)] == ["p1", "p0"]


def test_interleaved_partitions_on_one_stream_are_a_conflict(
    server: ServerHandle, r: redis.Redis, key: str
) -> None:
    client = redis.Redis(port=server.port, decode_responses=True)
    reserve_base(client, "test", "e2", 0, key)  # partition 0 started first...
    writer(server, key, "e2", partition=1).write(iter([batch(["late"])]))  # ...1 wrote first
    with pytest.raises(ConflictError, match="repartition by stream"):
        writer(server, key, "e2", partition=0).write(iter([batch(["early"])]))


def test_same_id_with_other_fields_is_a_conflict(
    server: ServerHandle, r: redis.Redis, key: str
) -> None:
    writer(server, key, "e3").write(iter([batch(["a"])]))
    with pytest.raises(ConflictError, match="different fields"):
        writer(server, key, "e3").write(iter([batch(["b"])]))
