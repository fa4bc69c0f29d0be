"""Example job: stream entries from Sluice into Parquet, exactly once, restartable.

    python -m sluice.pipeline.stream_job --url redis://127.0.0.1:6379/0 --streams a,b \\
        --out /data/events --checkpoint /data/events-ckpt [--available-now]

Exactly once end to end: the source replays a micro-batch's ``(start, end]`` ranges exactly
(offsets are in the checkpoint before the batch runs), and Spark's file sink commits each
batch's files in ``<out>/_spark_metadata`` only once; readers that go through Spark
(``spark.read.parquet(out)``) see every committed row once, however often the job was killed
and restarted. Kill it with ``kill -9`` at any moment and start it again with the same
arguments.

What it prints: one line per micro-batch (:func:`batch_line`: rows, rows/s, and per stream
the batch's end offset and how many entries it is behind the stream's newest), from a
``StreamingQueryListener``. Ctrl-C or SIGTERM stops the query between two checks (once a
second) and ends with status 0: the checkpoint holds every committed batch, and the same
command resumes. Failures are one line (see :mod:`sluice.pipeline.errors`); ``--debug``
shows the traceback and Spark's warnings.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any, TextIO

from sluice.pipeline.errors import Parser, run_cli


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


LAG_COUNT = 1000  # entries counted behind a batch's end, at most (then "more than")


def lag_ms(end_id: str | None, newest_id: str | None) -> int | None:
    """How far a batch's end offset is behind the stream's newest ID, in the IDs' ms."""
    if not end_id or not newest_id:
        return None
    return max(0, int(newest_id.split("-")[0]) - int(end_id.split("-")[0]))


def batch_line(batch_id: int, rows: int, rows_per_s: float, ends: dict[str, str],
               newest: dict[str, str | None], behind: dict[str, int | None]) -> str:
    """``batch 7  500 rows  4,210 rows/s  orders ..1700000000123-0 lag 12 entries (3 ms)``:
    per stream, the batch's end offset and the entries after it (counted up to LAG_COUNT)."""
    parts = [f"batch {batch_id}", f"{rows:,} rows", f"{rows_per_s:,.0f} rows/s"]
    for stream, end in ends.items():
        count = behind.get(stream)
        ms = lag_ms(end, newest.get(stream))
        if count == 0:
            lag = "caught up"
        elif count is None:
            lag = "lag ?"
        else:
            more = "more than " if count > LAG_COUNT else ""
            lag = f"lag {more}{min(count, LAG_COUNT):,} entries"
            if ms is not None:
                lag += f" ({ms:,} ms)"
        parts.append(f"{stream} ..{end} {lag}")
    return "  ".join(parts)


class BatchPrinter:
    """A ``StreamingQueryListener`` (built by :func:`make_listener`): prints one line per
    micro-batch that read rows, with each stream's lag read from the server."""

    def __init__(self, url: str, out: TextIO) -> None:
        self.url, self.out = url, out
        self.seen: set[int] = set()
        self._client: Any = None
        self._lock = threading.Lock()

    def lag(self, ends: dict[str, str]) -> tuple[dict[str, str | None], dict[str, int | None]]:
        """Per stream: the newest ID, and the entries after the batch's end (at most
        LAG_COUNT + 1 are read, so a long lag costs no more than a short one)."""
        from sluice.pipeline import client as rc
        from sluice.pipeline.options import ConnectionOptions

        newest: dict[str, str | None] = dict.fromkeys(ends)
        behind: dict[str, int | None] = dict.fromkeys(ends)
        try:
            if self._client is None:
                self._client = rc.connect(ConnectionOptions(self.url, 5.0))
            for stream, end in ends.items():
                bounds = rc.stream_bounds(self._client, stream)
                newest[stream] = str(bounds.last_generated) if bounds else None
                after = rc.ids_after(self._client, stream, end, "+", LAG_COUNT + 1)
                behind[stream] = len(after)
        except Exception:  # noqa: BLE001 - the line is informational; the query reports errors
            pass
        return newest, behind

    def on_progress(self, progress: Any) -> None:
        with self._lock:
            if progress.batchId in self.seen or not progress.numInputRows:
                return
            self.seen.add(progress.batchId)
            ends: dict[str, str] = {}
            for source in progress.sources:
                try:
                    ends.update(json.loads(source.endOffset or "{}"))
                except (TypeError, ValueError):
                    continue
            newest, behind = self.lag(ends)
            line = batch_line(progress.batchId, progress.numInputRows,
                              progress.processedRowsPerSecond or 0.0, ends, newest, behind)
            print(line, file=self.out, flush=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def make_listener(printer: BatchPrinter) -> Any:
    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            printer.on_progress(event.progress)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return Listener()


def run_until_stopped(query: Any, stop: threading.Event, poll_seconds: float = 1.0) -> bool:
    """Wait for the query to end, or for ``stop`` (a signal); returns True if stopped."""
    while not query.awaitTermination(poll_seconds):
        if stop.is_set():
            query.stop()
            return True
    return False


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m sluice.pipeline.stream_job",
        description="Stream entries of Redis streams into Parquet, exactly once.")
    parser.add_argument("--url", required=True, help="redis://[user:password@]host:port/db")
    parser.add_argument("--streams", required=True, help="comma-separated stream keys")
    parser.add_argument("--out", required=True, help="Parquet output directory")
    parser.add_argument("--checkpoint", required=True, help="Spark checkpoint directory")
    parser.add_argument("--available-now", action="store_true",
                        help="process what is there, then stop")
    parser.add_argument("--max-records-per-trigger", type=int)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--group", help="mirror progress into this consumer group")
    parser.add_argument("--quiet", action="store_true", help="no line per micro-batch")
    return parser


def _main(args: argparse.Namespace) -> int:
    from sluice.pipeline import client as rc
    from sluice.pipeline.options import ConnectionOptions, parse_streams

    streams = parse_streams(args.streams)
    client = rc.connect(ConnectionOptions(args.url, 10.0))
    try:
        rc.check_streams(client, streams)  # server, login and key types, before the JVM
    finally:
        client.close()

    from sluice.pipeline.session import local_session

    spark = local_session(app_name="sluice-stream-job", ui=False,
                          log_level="WARN" if args.debug else "OFF")
    printer = BatchPrinter(args.url, sys.stdout)
    if not args.quiet:
        spark.streams.addListener(make_listener(printer))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        query = build_query(
            spark, args.url, args.streams, args.out, args.checkpoint,
            available_now=args.available_now,
            max_records_per_trigger=args.max_records_per_trigger,
            trigger_seconds=args.trigger_seconds, group=args.group,
        )
        stopped = run_until_stopped(query, stop)
        if stopped:
            print(f"stopped after {len(printer.seen)} batch(es) with rows; the checkpoint "
                  f"{args.checkpoint} has every committed batch: the same command resumes",
                  file=sys.stderr)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        printer.close()
        spark.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("sluice.pipeline.stream_job", build_parser(), _main, argv)


if __name__ == "__main__":
    sys.exit(main())
