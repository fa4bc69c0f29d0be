"""Idempotent appends: the same retried write task must not add its rows twice.

Two strategies, chosen per write job (option ``idempotent``: ``auto`` picks the first the
server supports):

``idmp`` -- Redis 8.6+ idempotent XADD (``XADD key IDMP <producer> <iid> * ...``). The server
  remembers recent ``(producer, iid)`` pairs per stream and answers a repeated pair with the
  original entry's ID instead of appending. We derive ``iid = <epoch>:<partition>:<row>``,
  so a retried task, which sees the same rows in the same order, repeats the same iids.

``ids`` -- deterministic explicit IDs, for servers without IDMP (Redis 7.x).
  Every row gets ``<base_ms>-<seq>`` with ``seq = partition << 32 | n``, ``n`` counting the
  rows of that partition going to that stream. ``base_ms`` is fixed per epoch (per batch
  job, or per streaming micro-batch) and is above every ID in the target streams when the
  epoch starts. A retried task therefore writes the same IDs in the same order; the prefix
  its failed attempt already appended is refused with "The ID specified in XADD is equal or
  smaller than the target stream top item". We do not take that error on trust: the refused
  IDs are looked up (one ``XRANGE`` per stream per pipeline chunk) and must exist *with the
  same fields*; anything else -- another writer got in between, or a second partition of the
  same epoch wrote to the same stream first -- is a :class:`ConflictError`, never a silent
  skip. Stream IDs must grow, so in this mode each target stream must be fed by one task per
  epoch (``df.repartition("stream")``, or ``coalesce(1)`` for a single stream); the sink must
  also be the only writer of its target streams.

An *epoch* is what a retry repeats: a batch write job (token chosen on the driver), or one
micro-batch of a streaming query (its ``batchId``, which Spark reuses when it replays the
batch after a restart). The base of each (epoch, partition, stream) is kept in a reservation
key, ``sluice:sink:<producer>:<epoch>:<partition>:<stream>`` (``SET NX``, 1-day TTL), so a retry
or a replay after a crash reuses the base the first attempt chose. For a streaming query the
epoch is the batchId, so ``producerId`` must be unique per checkpoint: a new checkpoint with an
old producerId would meet the old reservations (``ids``: refused with a
:class:`ConflictError`) or the server's remembered iids (``idmp``: its rows would be taken as
duplicates and dropped) -- so change it with the checkpoint; the streaming sink refuses to
run idempotently without one.

Both require a deterministic row order within a partition for retries (true for a scan of a
source partition and for ``sortWithinPartitions``; not guaranteed right after a shuffle).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from sluice.pipeline import client as rc
from sluice.pipeline.ids import U64_MAX, StreamID

RESERVATION_TTL_S = 24 * 3600
EQUAL_OR_SMALLER = "equal or smaller"


class ConflictError(RuntimeError):
    """A deterministic ID was refused and is not ours: refusing to skip or duplicate."""


def deterministic_id(base_ms: int, partition: int, n: int) -> str:
    if not 0 <= partition < (1 << 32) or not 0 <= n < (1 << 32):
        raise ValueError("deterministic IDs allow 2^32 partitions and 2^32 rows per stream")
    return f"{base_ms}-{(partition << 32) | n}"


def idmp_iid(epoch: str, partition: int, row: int) -> str:
    return f"{epoch}:{partition}:{row}"


def base_after(client: redis.Redis, streams: Sequence[str]) -> int:
    """A millisecond above every existing ID of ``streams`` and not before server time."""
    base = rc.server_time_ms(client)
    for stream in streams:
        bounds = rc.stream_bounds(client, stream)
        if bounds is not None:
            base = max(base, bounds.last_generated.ms + 1)
    if base >= U64_MAX:
        raise ValueError("target stream IDs leave no room for deterministic IDs")
    return base


def reserve_base(
    client: redis.Redis, producer: str, epoch: str, partition: int, stream: str
) -> int:
    """The base ms for one (epoch, partition, stream): chosen once, then reused by retries.

    The first attempt picks :func:`base_after` and stores it with ``SET NX``; every later
    attempt, and a concurrent one that lost the race, reads the stored value.
    """
    key = f"sluice:sink:{producer}:{epoch}:{partition}:{stream}"
    existing = client.get(key)
    if existing is None:
        client.set(key, base_after(client, [stream]), nx=True, ex=RESERVATION_TTL_S)
        existing = client.get(key)
    if existing is None:
        raise RuntimeError(f"reservation {key} vanished right after SET NX (evicted?)")
    return int(existing)


def verify_refused(client: redis.Redis, stream: str, refused: dict[str, list[str]]) -> None:
    """Check that every refused ID exists in ``stream`` with the fields we meant to write.

    ``refused`` maps ID -> flat ``[f, v, ...]``. Raises :class:`ConflictError` otherwise.
    """
    ordered = sorted(refused, key=StreamID.parse)
    present: dict[str, list[str]] = {}
    for page in rc.xrange_pages(
        client, stream, StreamID.parse(ordered[0]), StreamID.parse(ordered[-1]), 10_000
    ):
        present.update((entry[0], entry[1]) for entry in page)
    for entry_id in ordered:
        if entry_id not in present:
            raise ConflictError(
                f"stream {stream!r}: deterministic ID {entry_id} was refused but does not "
                "exist: another writer, or another partition of this write, appended a larger "
                "ID first. In idempotent 'ids' mode each stream must be written by one task "
                "at a time: repartition by stream (df.repartition('stream')) and make the "
                "sink the only writer, or use a server with idempotent XADD (IDMP)."
            )
        if present[entry_id] != refused[entry_id]:
            raise ConflictError(
                f"stream {stream!r}: entry {entry_id} exists with different fields; "
                "refusing to treat it as already written"
            )
