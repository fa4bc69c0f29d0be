"""Structured Streaming reader: ``(start, end]`` XRANGE micro-batches over ``{stream: id}``.

Spark keeps this object alive in one planner process on the driver for the whole query, and
calls, per trigger: ``latestOffset(start, limit)`` -> ``partitions(start, end)`` -> tasks run
``read(partition)`` on executors -> later ``commit(end)`` (only when the *next* batch is
planned). Offsets are written to the checkpoint before the batch runs, so after a crash Spark
replays the same ``(start, end]`` and, since stream IDs only grow, reads the same rows.

Invariants:
- ``end`` never passes an ID the server had already generated when ``latestOffset`` ran, so
  every row of a planned interval exists when the interval is read.
- With ``Trigger.AvailableNow`` the target is frozen in ``prepareForTriggerAvailableNow``;
  later entries wait for the next run.
- ``maxRecordsPerTrigger`` (Spark's ``ReadMaxRows``) bounds the rows of a micro-batch across all
  streams, shared fairly (:func:`sluice.pipeline.offsets.limited_end`).
- A checkpoint whose history was trimmed away fails the query (``failOnDataLoss=true``, the
  default) or is skipped with a warning (``false``): :mod:`sluice.pipeline.dataloss`.
- ``commit()`` never trims. With option ``group`` it mirrors progress into a consumer group
  (``XGROUP CREATE`` or ``XGROUP SETID``) so ``XINFO GROUPS`` shows how far Spark has got;
  the group is informational: Spark's checkpoint, not the group, is the source of truth.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
import redis
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from sluice.pipeline import client as rc
from sluice.pipeline.dataloss import DataLossError, check_data_loss
from sluice.pipeline.ids import StreamID
from sluice.pipeline.offsets import (
    EARLIEST,
    LATEST,
    Offsets,
    limited_end,
    normalize,
    parse_starting_offsets,
)
from sluice.pipeline.options import ReadOptions
from sluice.pipeline.reader import RangePartition, plan_stream_slices, read_partition
from sluice.pipeline.schema import Layout

log = logging.getLogger(__name__)


class SluiceStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("sluice")``."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.layout = Layout.build(schema, opts.null_on_parse_error)
        self._target: Offsets | None = None  # frozen end for Trigger.AvailableNow

    # -- offsets -------------------------------------------------------------------------
    def initialOffset(self) -> Offsets:
        starting = parse_starting_offsets(self.opts.starting_offsets, self.opts.streams)
        if starting == EARLIEST:
            return normalize(self.opts.streams, {})
        latest = self._server_positions()
        if starting == LATEST:
            return latest
        assert isinstance(starting, dict)
        resolved = {}
        for stream, value in starting.items():
            if value in ("-", EARLIEST):
                continue
            resolved[stream] = latest[stream] if value in ("$", LATEST) else value
        return normalize(self.opts.streams, resolved)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_records_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.opts.max_records_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._server_positions()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        start = normalize(self.opts.streams, start)
        latest = self._server_positions()
        if self._target is not None:
            latest = {s: _min_id(latest[s], self._target[s]) for s in latest}
        latest = {s: _max_id(latest[s], start[s]) for s in latest}
        if isinstance(limit, ReadMaxRows):
            client = rc.connect(self.opts.conn)
            try:

                def fetch(stream: str, after: str, until: str, count: int) -> list[str]:
                    return rc.ids_after(client, stream, after, until, count)

                return limited_end(start, latest, limit.max_rows, fetch)
            finally:
                client.close()
        return latest

    def reportLatestOffset(self) -> Offsets:
        return self._server_positions()

    def _server_positions(self) -> Offsets:
        """Last generated ID per stream (0-0 for a stream that does not exist yet)."""
        client = rc.connect(self.opts.conn)
        try:
            positions = {}
            for stream in self.opts.streams:
                bounds = rc.stream_bounds(client, stream)
                if bounds is not None:
                    positions[stream] = str(bounds.last_generated)
            return normalize(self.opts.streams, positions)
        finally:
            client.close()

    # -- planning and reading ------------------------------------------------------------
    def partitions(self, start: Offsets, end: Offsets) -> list[RangePartition]:
        start = normalize(self.opts.streams, start)
        end = normalize(self.opts.streams, end)
        self._check_data_loss(start)
        planned: list[RangePartition] = []
        for stream in self.opts.streams:
            lo, hi = StreamID.parse(start[stream]), StreamID.parse(end[stream])
            if hi > lo:
                planned.extend(
                    plan_stream_slices(stream, lo.next(), hi, self.opts.partitions_per_stream)
                )
        return planned

    def _check_data_loss(self, start: Offsets) -> None:
        """failOnDataLoss: has the history after a checkpointed offset been trimmed away?"""
        checked = [s for s in self.opts.streams if start[s] != "0-0"]
        if not checked:
            return
        client = rc.connect(self.opts.conn)
        try:
            for stream in checked:
                problem = check_data_loss(stream, StreamID.parse(start[stream]),
                                          rc.stream_bounds(client, stream))
                if problem is None:
                    continue
                if self.opts.fail_on_data_loss:
                    raise DataLossError(f"{problem}. Set the option failOnDataLoss=false to "
                                        f"go on from the entries that are left.")
                log.warning("%s; going on from the entries that are left "
                            "(failOnDataLoss=false)", problem)
        finally:
            client.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_partition(self.opts.conn, partition, self.layout, self.opts.batch_size)

    # -- progress ------------------------------------------------------------------------
    def commit(self, end: Offsets) -> None:
        if self.opts.group is None:
            return
        client = rc.connect(self.opts.conn)
        try:
            for stream, last_id in normalize(self.opts.streams, end).items():
                if last_id != "0-0":
                    mirror_group(client, stream, self.opts.group, last_id)
        finally:
            client.close()


def mirror_group(client: redis.Redis, stream: str, group: str, last_id: str) -> None:
    """Point ``group``'s last-delivered ID at ``last_id``, creating the group if needed.

    ``ENTRIESREAD`` is passed only when ``last_id`` is the stream's last generated ID (then it
    is exactly ``entries-added``), so ``XINFO GROUPS`` lag is exact there and otherwise left
    for the server to estimate, never made up.
    """
    bounds = rc.stream_bounds(client, stream)
    if bounds is None:
        return
    entries_read = None
    if StreamID.parse(last_id) == bounds.last_generated and bounds.entries_added is not None:
        entries_read = bounds.entries_added
    try:
        client.xgroup_create(stream, group, id=last_id, entries_read=entries_read)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
        client.xgroup_setid(stream, group, last_id, entries_read=entries_read)
    log.debug("group %s on %s now at %s", group, stream, last_id)


def _min_id(a: str, b: str) -> str:
    return a if StreamID.parse(a) <= StreamID.parse(b) else b


def _max_id(a: str, b: str) -> str:
    return a if StreamID.parse(a) >= StreamID.parse(b) else b
