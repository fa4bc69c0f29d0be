"""Batch reads: several streams x several partitions, bounds, typed fields, Arrow batches."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.pipeline.conftest import ServerHandle, produce

pytestmark = pytest.mark.spark


def read(spark: Any, server: ServerHandle, streams: str, **options: str) -> Any:
    reader = spark.read.format("sluice").option("url", server.url).option("streams", streams)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader


def test_several_streams_several_partitions_exact_and_ordered(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    a, b, c = f"{key}a", f"{key}b", f"{key}c"
    produced = {a: produce(r, a, 1000, per_ms=3), b: produce(r, b, 257), c: produce(r, c, 1)}
    df = read(
        spark, server, f"{a},{b},{c},{key}missing", partitionsPerStream="4", batchSize="50"
    ).load()
    assert df.rdd.getNumPartitions() == 4 + 4 + 1
    rows = df.collect()
    by_stream: dict[str, list[Any]] = {}
    for row in rows:
        by_stream.setdefault(row.stream, []).append(row)
    assert {s: len(v) for s, v in by_stream.items()} == {a: 1000, b: 257, c: 1}
    for stream, ids in produced.items():
        got = by_stream[stream]
        assert [row.id for row in got] == ids  # every row once, in (ms, seq) order
        assert [(row.ms, row.seq) for row in got] == sorted((row.ms, row.seq) for row in got)
        assert got[0].fields == {"n": "0", "tag": "t0", "payload": ""}
    assert by_stream[a][4].fields == {"n": "4", "tag": "t1", "payload": "xxxx"}


def test_bounds_inclusive_exclusive_and_incomplete(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    ids = produce(r, key, 20, start_ms=5000, per_ms=2)  # 5000-0 .. 5009-1

    def got(**bounds: str) -> list[str]:
        return [row.id for row in read(spark, server, key, **bounds).load().collect()]

    assert got(**{"from": "5002-1", "to": "5004-0"}) == ids[5:9]
    assert got(**{"from": "(5002-1", "to": "(5004-0"}) == ids[6:8]
    assert got(**{"from": "5008"}) == ids[16:]  # incomplete start: 5008-0
    assert got(**{"to": "5001"}) == ids[:4]  # incomplete end: 5001-max
    assert got(**{"to": "(5001"}) == ids[:4]  # Redis: (5001 as an end is 5001-(max-1)
    assert got(**{"from": "9999"}) == []


def test_typed_user_schema(spark: Any, server: ServerHandle, r: redis.Redis, key: str) -> None:
    r.xadd(key, {"price": "1.5", "qty": "3", "ok": "true", "day": "2024-02-29", "x": "y"})
    r.xadd(key, {"price": "2", "qty": "4", "ok": "0"})
    schema = "id string, price double, qty int, ok boolean, day date, missing string"
    rows = read(spark, server, key).schema(schema).load().collect()
    assert [(x.price, x.qty, x.ok, str(x.day), x.missing) for x in rows] == [
        (1.5, 3, True, "2024-02-29", None),
        (2.0, 4, False, "None", None),
    ]


def test_typed_field_error_names_stream_entry_field_and_value(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    r.xadd(key, {"qty": "3"})
    bad = r.xadd(key, {"qty": "three"})
    df = read(spark, server, key).schema("id string, qty int").load()
    with pytest.raises(Exception) as caught:
        df.collect()
    message = str(caught.value)
    assert f"stream '{key}' entry {bad}: field 'qty' value 'three' is not a valid int" in message
    assert "parseErrors=null" in message
    lenient = read(spark, server, key, parseErrors="null").schema("id string, qty int").load()
    assert [row.qty for row in lenient.collect()] == [3, None]


def test_bad_options_fail_on_the_driver_with_the_option_named(
    spark: Any, server: ServerHandle
) -> None:
    with pytest.raises(Exception, match="partitionsPerStream"):
        read(spark, server, "a", partitionsPerStream="0").load().collect()
    with pytest.raises(Exception, match="metadata"):
        read(spark, server, "a").schema("ms string").load().collect()


def test_ids_beyond_spark_long_keep_the_exact_id(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str
) -> None:
    r.xadd(key, {"f": "v"}, id="5-18446744073709551615")
    r.xadd(key, {"f": "v"}, id="18446744073709551615-0")
    rows = read(spark, server, key).load().collect()
    assert [(x.id, x.ms, x.seq) for x in rows] == [
        ("5-18446744073709551615", 5, None),
        ("18446744073709551615-0", None, 0),
    ]
