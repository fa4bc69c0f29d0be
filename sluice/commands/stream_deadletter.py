"""Dead-lettering (Sluice, opt-in): moving poison entries out of a consumer group.

Role: the command side of a group's dead-letter policy (``SLUICE.XPOLICY DEADLETTER``,
``storage.stream_group.DeadLetter``). The delivery paths of the storage layer (XREADGROUP
history reads and CLAIM, XCLAIM, XAUTOCLAIM) do not deliver an entry that was already
delivered ``max_deliveries`` times: they leave it pending and list it in ``group.due``. XNACK
``FATAL`` lists the entries it released. ``dead_letter`` then, in the same command, for each:

1. adds an entry to the dead-letter stream (created if missing, in the same database) with
   the origin first: ``origin-stream``, ``origin-group``, ``origin-id``, ``delivery-count``,
   ``last-consumer`` (``""`` for a NACKed entry), ``reason`` (``max-deliveries`` or
   ``fatal``), then the entry's own fields and values (none if it was deleted meanwhile);
2. acknowledges it in the source group.

Invariants:

- Atomic and deterministic in the AOF: the command's log gets ``XADD <dlq> <the ID made>
  <fields>`` and ``XACK <key> <group> <id>`` per entry, and dispatch wraps the whole log
  of the command in ``MULTI`` / ``EXEC`` (unless it already runs inside EXEC), so a torn tail
  is dropped whole on load (``aof-load-truncated``) and replay needs no policy: it replays
  what happened. Nothing here runs while the AOF is replayed (``ctx.kind == "aof"``); the
  replayed XCLAIM records always carry RETRYCOUNT and JUSTID, which never count as a
  delivery, so the storage never finds anything due then either.
- A dead-letter key holding another type (or a dead-letter stream whose last ID is the
  largest there is): nothing is moved, the entries stay pending (and are not delivered),
  ``stats["sluice_dead_letter_errors"]`` counts them.
- The dead-letter stream is written like XADD writes: ``ctx.modified`` wakes its readers and
  invalidates WATCH and caches, and the "xadd" keyspace event fires.

Mirrors nothing in Redis (redis/redis#7386 asks for it); the commands it writes are Redis's.
"""

from __future__ import annotations

from sluice.storage.stream import Stream, StreamError
from sluice.storage.stream_group import ConsumerGroup
from sluice.storage.streamid import format_id

from .context import Context
from .stream_common import new_stream

__all__ = ["FATAL", "MAX_DELIVERIES", "dead_letter", "drain"]

MAX_DELIVERIES = b"max-deliveries"  # reason: the policy's delivery limit was reached
FATAL = b"fatal"  # reason: XNACK ... FATAL


def dead_letter(ctx: Context, key: bytes, group: ConsumerGroup, ids: list[int], reason: bytes,
                log: list[list[bytes]]) -> int:
    """Dead-letter ``ids`` (pending in ``group`` of the stream at ``key``) under the group's
    policy; returns how many moved. Appends the commands that redo it to ``log``."""
    dl = group.dead_letter
    if dl is None or not ids or ctx.kind == "aof":
        return 0
    db = ctx.db
    target = db.get(dl.key)
    stats = ctx.server.stats
    if target is not None and type(target) is not Stream:
        stats["sluice_dead_letter_errors"] += len(ids)
        return 0
    created = target is None
    if created:
        target = new_stream(ctx)
    stream = group.stream
    cfg = ctx.server.config
    now = ctx.now_ms()
    moved = 0
    for sid in ids:
        pe = group.pel.get(sid)
        if pe is None:
            continue
        fields = [b"origin-stream", key, b"origin-group", group.name, b"origin-id",
                  format_id(sid), b"delivery-count", b"%d" % pe.delivery_count,
                  b"last-consumer", b"" if pe.consumer is None else pe.consumer.name,
                  b"reason", reason, *(stream.get(sid) or ())]
        try:
            new_id = target.append(None, fields, now, node_max_bytes=cfg.stream_node_max_bytes,
                                   node_max_entries=cfg.stream_node_max_entries)
        except StreamError:  # the dead-letter stream is full (its last ID is the largest)
            stats["sluice_dead_letter_errors"] += 1
            continue
        group.drop_pending(sid)
        log.append([b"XADD", dl.key, format_id(new_id), *fields])
        log.append([b"XACK", key, group.name, format_id(sid)])
        moved += 1
    if moved:
        if created:
            db.add(dl.key, target)
        # A dead letter is an XADD to the dead-letter stream (one "xadd" event per call, as
        # for one XADD); the acknowledgement is a group change, as XACK's (no event).
        ctx.notify(b"xadd", dl.key)
        ctx.modified(dl.key, changes=moved)  # the new entries: readers wake, WATCH fails
        ctx.server.dirty += moved  # the acknowledgements (group changes, not key writes)
        stats["sluice_dead_lettered"] += moved
    return moved


def drain(ctx: Context, key: bytes, group: ConsumerGroup, log: list[list[bytes]]) -> int:
    """Dead-letter what the last storage call found due (``group.due``), if anything."""
    due = group.due
    if not due:
        return 0
    group.due = []
    return dead_letter(ctx, key, group, due, MAX_DELIVERIES, log)
