"""Example job: stream entries from Sluice into Parquet, exactly once, restartable.

    python -m sluice.pipeline.stream_job --url redis://127.0.0.1:6379/0 --streams a,b \\
        --out /data/events --checkpoint /data/events-ckpt [--available-now]

Exactly once end to end: the source replays a micro-batch's ``(start, end]`` ranges exactly
(offsets are in the checkpoint before the batch runs), and Spark's file sink commits each
batch's files in ``<out>/_spark_metadata`` only once; readers that go through Spark
(``spark.read.parquet(out)``) see every committed row once, however often the job was killed
and restarted. Kill it with ``kill -9`` at any moment and start it again with the same
arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def build_query(
    spark: Any,
    url: str,
    streams: str,
    out: str,
    checkpoint: str,
    available_now: bool = False,
    max_records_per_trigger: int | None = None,
    trigger_seconds: float = 1.0,
    group: str | None = None,
) -> Any:
    """Start the query (returns the StreamingQuery)."""
    reader = spark.readStream.format("sluice").option("url", url).option("streams", streams)
    if max_records_per_trigger is not None:
        reader = reader.option("maxRecordsPerTrigger", str(max_records_per_trigger))
    if group is not None:
        reader = reader.option("group", group)
    writer = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .partitionBy("stream")
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{trigger_seconds} seconds")
    return writer.start()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sluice.pipeline.stream_job")
    parser.add_argument("--url", required=True)
    parser.add_argument("--streams", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--max-records-per-trigger", type=int)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--group", help="mirror progress into this consumer group")
    args = parser.parse_args(argv)

    from sluice.pipeline.session import local_session

    spark = local_session(app_name="sluice-stream-job", ui=False)
    query = build_query(
        spark,
        args.url,
        args.streams,
        args.out,
        args.checkpoint,
        available_now=args.available_now,
        max_records_per_trigger=args.max_records_per_trigger,
        trigger_seconds=args.trigger_seconds,
        group=args.group,
    )
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
