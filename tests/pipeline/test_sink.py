"""Sink: DataFrames written as stream entries, read back equal; retries never duplicate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from tests.pipeline.conftest import ServerHandle, produce

pytestmark = pytest.mark.spark


def write(df: Any, server: ServerHandle, **options: str) -> None:
    writer = df.write.format("sluice").mode("append").option("url", server.url)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save()


def test_dataframe_written_and_read_back_is_equal(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    rows = [(key, i, f"name{i}", i * 0.5) for i in range(200)]
    df = spark.createDataFrame(rows, "stream string, n int, name string, score double")
    write(df, server, batchSize="64")
    back = (
        spark.read.format("sluice")
        .option("url", server.url)
        .option("streams", key)
        .schema("stream string, n int, name string, score double")
        .load()
    )
    assert sorted(back.collect()) == sorted(df.collect())


def test_fields_map_round_trip_keeps_order_and_explicit_ids(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    source, copy = f"{key}src", f"{key}copy"
    produce(r, source, 300, per_ms=2)
    df = spark.read.format("sluice").option("url", server.url).option("streams", source).load()
    write(df.selectExpr(f"'{copy}' as stream", "id", "fields").coalesce(1), server)
    assert r.xrange(copy) == r.xrange(source)  # same IDs, same fields, same order


def test_retried_task_does_not_duplicate_in_ids_mode(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    df = spark.range(0, 500).selectExpr("cast(id as string) as n").coalesce(1)
    # Control: without idempotency the retried task appends its first 123 rows again.
    write(df, server, stream=f"{key}off", failFirstAttemptAfterRows="123")
    assert r.xlen(f"{key}off") == 623
    write(
        df,
        server,
        stream=f"{key}ids",
        idempotent="ids",
        failFirstAttemptAfterRows="123",
        batchSize="50",
    )
    values = [fields["n"] for _, fields in r.xrange(f"{key}ids")]
    assert values == [str(i) for i in range(500)]


def test_auto_mode_uses_idmp_or_deterministic_ids_and_never_duplicates(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    from sluice.pipeline.client import connect, supports_idmp
    from sluice.pipeline.options import ConnectionOptions

    client = connect(ConnectionOptions(server.url, 5.0))
    has_idmp = supports_idmp(client)
    client.close()
    df = spark.range(0, 10).selectExpr("cast(id as string) as n").coalesce(1)
    write(df, server, stream=key, idempotent="auto", failFirstAttemptAfterRows="4")
    assert r.xlen(key) == 10
    # Sluice has IDMP (the retry is deduplicated by the server); Redis 7.x does not, and the
    # IDs are then <base_ms>-<partition << 32 | row>.
    if not has_idmp:
        assert [entry_id.split("-")[1] for entry_id, _ in r.xrange(key)] == [
            str(i) for i in range(10)
        ]


def test_streaming_sink_is_idempotent_across_replays(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    source, target = f"{key}src", f"{key}dst"
    produce(r, source, 250)

    def run() -> int:
        query = (
            spark.readStream.format("sluice")
            .option("url", server.url)
            .option("streams", source)
            .option("maxRecordsPerTrigger", "100")
            .load()
            .selectExpr(f"'{target}' as stream", "fields")
            .writeStream.format("sluice")
            .option("url", server.url)
            .option("idempotent", "true")
            .option("producerId", f"{key}-q1")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        assert query.exception() is None
        return sum(p["numInputRows"] for p in query.recentProgress)

    assert run() == 250
    # Forget that the last batch was committed: Spark replays it with the same batchId.
    commits = sorted((tmp_path / "ckpt" / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    assert run() == 50  # the last micro-batch (100 + 100 + 50) ran again...
    got = [fields for _, fields in r.xrange(target)]
    assert got == [fields for _, fields in r.xrange(source)]  # ...and appended nothing twice


def test_streaming_sink_requires_producer_id_when_idempotent(
    spark: Any, server: ServerHandle, key: str, tmp_path: Path
) -> None:
    df = spark.readStream.format("sluice").option("url", server.url).option("streams", key).load()
    with pytest.raises(Exception, match="producerId"):
        (
            df.writeStream.format("sluice")
            .option("url", server.url)
            .option("stream", key)
            .option("idempotent", "ids")
            .option("checkpointLocation", str(tmp_path))
            .trigger(availableNow=True)
            .start()
            .awaitTermination(60)
        )
