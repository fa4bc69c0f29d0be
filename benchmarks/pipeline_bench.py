"""Benchmark: stream entries -> Parquet, three ways, against a running server (not in CI).

    .venv/bin/python benchmarks/pipeline_bench.py --url redis://127.0.0.1:6379/0

Loads ``--streams`` x ``--entries`` entries (default 4 x 250,000, three small fields) into
keys ``pipebench:<i>`` (deleted first; ``--skip-load`` reuses them), then measures, each as
the median of ``--runs`` timed runs after one warm-up run:

- ``baseline``: one Python process, XRANGE pages -> pyarrow -> one Parquet file per stream;
- ``batch``: ``spark.read.format("sluice")`` -> Parquet on ``--master`` (default local[2]);
- ``available-now``: ``readStream ... trigger(availableNow=True)`` -> Parquet file sink.

Prints rows/s for each and a JSON line for scripts. Run it once against Sluice and once
against redis-server to compare servers; the data source code is the same.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FIELDS_PER_ENTRY = 3
PAGE = 10_000


def load(client: redis.Redis, keys: list[str], entries: int) -> float:
    started = time.perf_counter()
    client.delete(*keys)
    for key in keys:
        pipe = client.pipeline(transaction=False)
        for i in range(entries):
            pipe.xadd(key, {"user": f"u{i % 1000}", "action": "click", "value": str(i % 97)})
            if len(pipe) >= 5_000:
                pipe.execute()
        pipe.execute()
    return time.perf_counter() - started


def baseline(url: str, keys: list[str], out: Path) -> int:
    """The single-process reference: what a careful script without Spark would do."""
    client = redis.Redis.from_url(url, decode_responses=True)
    client.set_response_callback("XRANGE", lambda r, **_: r)
    map_type = pa.map_(pa.field("key", pa.string(), nullable=False), pa.string())
    schema = pa.schema(
        [
            ("stream", pa.string()),
            ("id", pa.string()),
            ("ms", pa.int64()),
            ("seq", pa.int64()),
            ("fields", map_type),
        ]
    )
    rows = 0
    for key in keys:
        with pq.ParquetWriter(out / f"{key.replace(':', '_')}.parquet", schema) as writer:
            start = "-"
            while True:
                page = client.execute_command("XRANGE", key, start, "+", "COUNT", PAGE)
                if not page:
                    break
                writer.write_batch(_page_batch(key, page, schema, map_type))
                rows += len(page)
                if len(page) < PAGE:
                    break
                start = "(" + page[-1][0]
    client.close()
    return rows


def _page_batch(key: str, page: list[Any], schema: pa.Schema, map_type: pa.DataType) -> Any:
    ids = [e[0] for e in page]
    split = [i.split("-") for i in ids]
    offsets, keys, values = [0], [], []
    for entry in page:
        keys.extend(entry[1][::2])
        values.extend(entry[1][1::2])
        offsets.append(len(keys))
    fields = pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, pa.string()),
        pa.array(values, pa.string()),
        type=map_type,
    )
    return pa.RecordBatch.from_arrays(
        [
            pa.array([key] * len(page), pa.string()),
            pa.array(ids, pa.string()),
            pa.array([int(m) for m, _ in split], pa.int64()),
            pa.array([int(s) for _, s in split], pa.int64()),
            fields,
        ],
        schema=schema,
    )


def spark_batch(spark: Any, url: str, keys: list[str], out: Path, parts: int) -> int:
    df = (
        spark.read.format("sluice")
        .option("url", url)
        .option("streams", ",".join(keys))
        .option("partitionsPerStream", str(parts))
        .load()
    )
    df.write.mode("overwrite").parquet(str(out / "batch"))
    return -1  # counted from the Parquet footers, outside the timed section


def spark_available_now(spark: Any, url: str, keys: list[str], out: Path, parts: int) -> int:
    query = (
        spark.readStream.format("sluice")
        .option("url", url)
        .option("streams", ",".join(keys))
        .option("partitionsPerStream", str(parts))
        .load()
        .writeStream.format("parquet")
        .option("path", str(out / "stream"))
        .option("checkpointLocation", str(out / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return sum(int(p["numInputRows"]) for p in query.recentProgress)


def footer_rows(out: Path) -> int:
    files = [p for p in out.rglob("*.parquet") if "_spark_metadata" not in p.parts]
    return sum(pq.ParquetFile(p).metadata.num_rows for p in files)


def server_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info.get("used_cpu_user", 0.0)) + float(info.get("used_cpu_sys", 0.0))


def measure(
    name: str, runs: int, expected: int, job: Callable[[Path], int], client: redis.Redis
) -> dict[str, Any]:
    timings, cpu = [], []
    for attempt in range(runs + 1):  # the first run warms up (JVM, workers, caches)
        scratch = Path(tempfile.mkdtemp(prefix="pipebench-"))
        try:
            cpu_before, started = server_cpu(client), time.perf_counter()
            rows = job(scratch)
            elapsed = time.perf_counter() - started
            cpu_used = server_cpu(client) - cpu_before
            if rows < 0:
                rows = footer_rows(scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if rows != expected:
            raise RuntimeError(f"{name}: wrote {rows} rows, expected {expected}")
        if attempt:
            timings.append(elapsed)
            cpu.append(cpu_used)
        print(
            f"  {name} run {attempt}{' (warm-up)' if not attempt else ''}: "
            f"{elapsed:.2f} s, {rows / elapsed:,.0f} rows/s, server CPU {cpu_used:.2f} s",
            flush=True,
        )
    median = statistics.median(timings)
    return {
        "name": name,
        "median_s": round(median, 3),
        "rows_per_s": round(expected / median),
        "server_cpu_s": round(statistics.median(cpu), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--entries", type=int, default=250_000, help="entries per stream")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions-per-stream", type=int, default=2)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--only", choices=["baseline", "batch", "available-now"], nargs="*")
    args = parser.parse_args()

    keys = [f"pipebench:{i}" for i in range(args.streams)]
    expected = args.streams * args.entries
    client = redis.Redis.from_url(args.url, decode_responses=True)
    server = client.info("server")
    print(
        f"server: {server.get('redis_version')} at {args.url}; {expected:,} entries "
        f"({args.streams} x {args.entries:,}, {FIELDS_PER_ENTRY} fields)"
    )
    if not args.skip_load:
        seconds = load(client, keys, args.entries)
        print(f"  load: {seconds:.1f} s, {expected / seconds:,.0f} XADD/s (pipelined)")
    wanted = set(args.only or ["baseline", "batch", "available-now"])
    results = []
    if "baseline" in wanted:
        results.append(
            measure(
                "baseline", args.runs, expected, lambda out: baseline(args.url, keys, out), client
            )
        )
    if wanted & {"batch", "available-now"}:
        from sluice.pipeline.session import local_session

        spark = local_session(master=args.master, app_name="pipeline-bench", ui=False)
        parts = args.partitions_per_stream
        if "batch" in wanted:
            results.append(
                measure(
                    "batch",
                    args.runs,
                    expected,
                    lambda out: spark_batch(spark, args.url, keys, out, parts),
                    client,
                )
            )
        if "available-now" in wanted:
            results.append(
                measure(
                    "available-now",
                    args.runs,
                    expected,
                    lambda out: spark_available_now(spark, args.url, keys, out, parts),
                    client,
                )
            )
        spark.stop()
    for result in results:
        print(
            f"{result['name']:>14}: {result['rows_per_s']:>10,} rows/s "
            f"(median {result['median_s']} s, server CPU {result['server_cpu_s']} s)"
        )
    print(
        json.dumps(
            {
                "server": server.get("redis_version"),
                "master": args.master,
                "rows": expected,
                "results": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
