"""Sink: ``df.write.format("sluice")`` and ``writeStream.format("sluice")`` append entries.

Rows arrive as Arrow record batches. Columns:
- ``stream`` (string): target stream; optional when option ``stream`` names the target.
- ``id`` (string): explicit entry ID; optional, null or absent means ``*``.
- ``fields`` (map<string,string>): entry fields; optional.
- any other column is a field of that name, its value cast to text (nulls are left out);
  ``ms`` and ``seq`` are ignored, so a DataFrame read from Sluice can be written back.

XADDs are pipelined, ``batchSize`` per round trip, without MULTI (one connection per task keeps
them in order). With option ``idempotent`` (see :mod:`sluice.pipeline.idempotency`) a retried
task or a replayed micro-batch does not append its rows twice.

The writer objects are created on the driver and pickled to executors: settings only.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from sluice.pipeline import client as rc
from sluice.pipeline import idempotency as idem
from sluice.pipeline.options import WriteOptions

log = logging.getLogger(__name__)

IGNORED_COLUMNS = frozenset({"ms", "seq"})
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # set by Spark's MicroBatchExecution

Row = tuple[str, str | None, list[str]]  # stream, explicit id, flat [f, v, ...]


@dataclass
class WriteStats(WriterCommitMessage):
    written: int
    skipped: int  # already written by an earlier attempt (idempotent modes)


def resolve_mode(opts: WriteOptions) -> str:
    """Driver side: turn ``auto`` into ``idmp`` or ``ids`` by asking the server."""
    if opts.idempotent != "auto":
        return opts.idempotent
    client = rc.connect(opts.conn)
    try:
        return "idmp" if rc.supports_idmp(client) else "ids"
    finally:
        client.close()


def encode_rows(batch: pa.RecordBatch, default_stream: str | None) -> Iterator[Row]:
    names = batch.schema.names
    n = batch.num_rows
    if "stream" in names:
        streams = batch.column("stream").to_pylist()
    elif default_stream is not None:
        streams = [default_stream] * n
    else:
        raise ValueError("the sink needs a 'stream' column or option stream=<key>")
    ids = batch.column("id").to_pylist() if "id" in names else [None] * n
    maps = batch.column("fields").to_pylist() if "fields" in names else None
    extra = [c for c in names if c not in ("stream", "id", "fields") and c not in IGNORED_COLUMNS]
    texts = {c: _as_text(batch.column(c)).to_pylist() for c in extra}
    for i in range(n):
        flat: list[str] = []
        for key, value in (maps[i] or []) if maps is not None else ():
            if value is not None:
                flat += (key, value)
        for column in extra:
            value = texts[column][i]
            if value is not None:
                flat += (column, value)
        if streams[i] is None:
            raise ValueError(f"row {i} has a null 'stream'")
        if not flat:
            raise ValueError(f"row {i} for stream {streams[i]!r} has no non-null fields")
        yield streams[i], ids[i], flat


def _as_text(column: pa.Array) -> pa.Array:
    return column if pa.types.is_string(column.type) else pc.cast(column, pa.string())


class PartitionWriter:
    """Executor side: one task's XADDs; retries of the same task write the same commands."""

    def __init__(self, opts: WriteOptions, mode: str, producer: str, epoch: str) -> None:
        self.opts, self.mode, self.producer, self.epoch = opts, mode, producer, epoch
        context = TaskContext.get()
        self.partition = context.partitionId() if context else 0
        self.attempt = context.attemptNumber() if context else 0
        self.client = rc.connect(opts.conn)
        self.pipe = self.client.pipeline(transaction=False)
        self.pending: list[tuple[str, str | None, list[str]]] = []
        self.bases: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self.row = 0
        self.stats = WriteStats(0, 0)

    def write(self, batches: Iterator[pa.RecordBatch]) -> WriteStats:
        fail_after = self._fault_injection()
        try:
            for batch in batches:
                for stream, entry_id, flat in encode_rows(batch, self.opts.stream):
                    self._add(stream, entry_id, flat)
                    if fail_after is not None and self.row == fail_after:
                        self._flush()
                        raise RuntimeError(f"injected failure after {self.row} rows (test hook)")
            self._flush()
        finally:
            self.client.close()
        return self.stats

    def _fault_injection(self) -> int | None:
        first = self.attempt == 0 and self.partition == 0
        return self.opts.fail_first_attempt_after if first else None

    def _add(self, stream: str, entry_id: str | None, flat: list[str]) -> None:
        args: list[str] = ["XADD", stream]
        if entry_id is None and self.mode == "ids":
            entry_id = self._next_id(stream)
        if entry_id is None and self.mode == "idmp":
            args += ["IDMP", self.producer, idem.idmp_iid(self.epoch, self.partition, self.row)]
        args.append(entry_id or "*")
        self.pipe.execute_command(*args, *flat)
        self.pending.append((stream, entry_id, flat))
        self.row += 1
        if len(self.pending) >= self.opts.batch_size:
            self._flush()

    def _next_id(self, stream: str) -> str:
        if stream not in self.bases:
            self.bases[stream] = idem.reserve_base(
                self.client, self.producer, self.epoch, self.partition, stream
            )
        n = self.counters.get(stream, 0)
        self.counters[stream] = n + 1
        return idem.deterministic_id(self.bases[stream], self.partition, n)

    def _flush(self) -> None:
        if not self.pending:
            return
        results = self.pipe.execute(raise_on_error=False)
        refused: dict[str, dict[str, list[str]]] = {}
        for (stream, entry_id, flat), result in zip(self.pending, results, strict=True):
            if not isinstance(result, Exception):
                self.stats.written += 1
            elif (
                self.mode != "off" and entry_id is not None and idem.EQUAL_OR_SMALLER in str(result)
            ):
                refused.setdefault(stream, {})[entry_id] = flat
            else:
                raise result
        self.pending.clear()
        for stream, entries in refused.items():
            idem.verify_refused(self.client, stream, entries)
            self.stats.skipped += len(entries)


def _summarise(messages: list[WriterCommitMessage | None], what: str) -> None:
    stats = [m for m in messages if isinstance(m, WriteStats)]
    log.info(
        "%s: %d entries appended, %d already present",
        what,
        sum(s.written for s in stats),
        sum(s.skipped for s in stats),
    )


class SluiceBatchWriter(DataSourceArrowWriter):
    """One batch write job is one epoch; its token is fixed here, on the driver."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.mode = resolve_mode(opts)
        self.producer = opts.producer_id or "sluice-spark"
        self.epoch = uuid.uuid4().hex[:16]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteStats:
        return PartitionWriter(self.opts, self.mode, self.producer, self.epoch).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        _summarise(messages, f"sluice write {self.epoch}")


class SluiceStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch is one epoch, named by its batchId (reused when Spark replays it)."""

    def __init__(self, opts: WriteOptions) -> None:
        if opts.idempotent != "off" and not opts.producer_id:
            raise ValueError(
                "a streaming sink with idempotent mode needs option producerId, unique per "
                "checkpoint (change it whenever you start from a new checkpoint)"
            )
        self.opts = opts
        self.mode = resolve_mode(opts)
        self.producer = opts.producer_id or "sluice-spark"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteStats:
        context = TaskContext.get()
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if batch_id is None and self.mode != "off":
            raise RuntimeError("streaming batch id unavailable: cannot write idempotently")
        epoch = f"b{batch_id}"
        return PartitionWriter(self.opts, self.mode, self.producer, epoch).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _summarise(messages, f"sluice stream write batch {batchId}")
