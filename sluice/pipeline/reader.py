"""Batch reader: streams split into ID/time slices, each slice read by one Spark task.

Planning (driver, ``partitions()``): for each stream, ``XINFO STREAM`` gives the first and
last entry; the requested ``[from, to]`` bounds are clipped to them and the result is cut into
``partitionsPerStream`` slices at millisecond boundaries. Clipping to the *last entry seen at
planning time* freezes the read: entries appended while the job runs are not half-read by
some tasks and missed by others, and a retried task reads exactly the rows the first attempt
read.

Reading (executor, ``read()``): ``XRANGE lo hi COUNT batchSize`` pages, each converted to one
Arrow record batch. Rows of a slice come in ID order, i.e. by ``(ms, seq)``; slices are listed
stream by stream in ID order, so ``collect()`` of a plain scan is ordered per stream too.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from sluice.pipeline import client as rc
from sluice.pipeline.ids import StreamID, split_time_range
from sluice.pipeline.options import ConnectionOptions, ReadOptions
from sluice.pipeline.schema import Layout, page_to_batch


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """Inclusive ``[lo, hi]`` of one stream (IDs as text, to keep the pickle trivial)."""

    stream: str
    lo: str
    hi: str


def plan_stream_slices(stream: str, lo: StreamID, hi: StreamID, parts: int) -> list[RangePartition]:
    return [RangePartition(stream, str(a), str(b)) for a, b in split_time_range(lo, hi, parts)]


def read_partition(
    conn: ConnectionOptions,
    partition: RangePartition,
    layout: Layout,
    batch_size: int,
    progress: tuple[str, int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Executor side: stream one slice as record batches (connection opened here).

    With ``progress`` (the driver's address), the size of every page read is sent there in
    one UDP datagram: fire and forget, so a lost datagram or an absent listener never slows
    or fails the read (sluice-archive shows live rows/s from them)."""
    arrow_schema = layout.arrow_schema()
    client = rc.connect(conn)
    report = _progress_sender(progress)
    try:
        lo, hi = StreamID.parse(partition.lo), StreamID.parse(partition.hi)
        for page in rc.xrange_pages(client, partition.stream, lo, hi, batch_size):
            report(len(page))
            yield page_to_batch(partition.stream, page, layout, arrow_schema)
    finally:
        client.close()
        report(0)


def _progress_sender(address: tuple[str, int] | None) -> Callable[[int], None]:
    if address is None:
        return lambda rows: None
    try:
        family = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_DGRAM)[0][0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.setblocking(False)
    except OSError:
        return lambda rows: None

    def send(rows: int) -> None:
        if rows == 0:  # end of the slice
            sock.close()
            return
        with contextlib.suppress(OSError):
            sock.sendto(b"%d" % rows, address)

    return send


class SluiceBatchReader(DataSourceReader):
    """``spark.read.format("sluice")``; holds settings only (it is pickled to executors)."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.layout = Layout.build(schema, opts.null_on_parse_error)

    def partitions(self) -> list[RangePartition]:
        client = rc.connect(self.opts.conn)
        try:
            planned: list[RangePartition] = []
            for stream in self.opts.streams:
                bounds = rc.stream_bounds(client, stream)
                if bounds is None or bounds.first is None or bounds.last is None:
                    continue  # missing or empty stream: nothing to read
                lo = max(self.opts.start, bounds.first)
                hi = min(self.opts.end, bounds.last)
                planned.extend(plan_stream_slices(stream, lo, hi, self.opts.partitions_per_stream))
        finally:
            client.close()
        # Spark needs at least one partition to run a scan; an empty slice reads no rows.
        return planned or [RangePartition(self.opts.streams[0], "1-0", "0-1")]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_partition(
            self.opts.conn, partition, self.layout, self.opts.batch_size, self.opts.progress
        )
