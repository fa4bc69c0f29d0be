"""XREADGROUP: reading a stream as a consumer of a group, blocking when there is nothing new.

Role: parse the command in Redis's order (``xreadCommand`` with GROUP), serve what can be
served now through ``ConsumerGroup.deliver_new_spans`` / ``read_history`` / ``claim_idle``,
or block with ``ctx.block(..., unblock_on_nokey=True)``.

Semantics mirrored from ``t_stream.c`` (current Redis, 7.2+, where it differs from 7.0):

- ``>`` serves a stream only when its last live ID is past the group's last-delivered ID;
  any other ID reads the consumer's own pending entries (history), always served, deleted
  entries as ``[id, nil]``. The ID ``18446744073709551615-18446744073709551615`` *is* ``>``
  (Redis encodes ``>`` as that ID). ``$`` and ``+`` are refused with Redis's texts.
- The consumer is created on first use for every named stream, even when the command then
  blocks (7.2+; 7.0 created it only when serving), and its seen-time is refreshed.
- Only streams that are served appear in the reply; nothing served and no BLOCK (or inside
  MULTI) gives a null array. BLOCK re-runs the whole command when a key is signalled (XADD,
  XGROUP DESTROY, the key created, deleted or replaced), keeping the original deadline
  (Redis 7.2's reprocessing of blocked commands): every blocked reader of the key, so each
  one's consumer is seen again, and each that gets nothing blocks again at the back.
  ``ready_check`` does that much without the re-run when nothing else could happen (another
  reader took the new entries), as in 8.6.3, where 7.0 left such readers in place, unseen.
  A group destroyed meanwhile, or a key deleted or retyped, re-runs the command, which
  answers its own NOGROUP / WRONGTYPE (7.2+; 7.0 sent "UNBLOCKED the stream key no longer
  exists").
- ``CLAIM min-idle-time`` (Redis 8.4, per the redis.io XREADGROUP page): with ``>``, pending
  entries idle for at least that long are claimed first, most idle first, each reported as
  ``[id, fields, idle-ms, earlier deliveries]``; then new entries fill what is left of COUNT,
  reported as ``[id, fields, 0, 0]`` so every entry of a CLAIM reply has the same shape.
  NOACK does not apply to claimed entries. A negative min-idle-time is an error (8.6.3).
  A blocked CLAIM reader is also woken when a pending entry becomes idle enough (8.4+).
- Effects are logged, not the command (``preventCommandPropagation``): XGROUP CREATECONSUMER
  for a new consumer, one XCLAIM ... FORCE JUSTID per entry added to or moved in the PEL, and
  XGROUP SETID ... ENTRIESREAD when the group's last ID moved.
- ``MAXCOUNT`` / ``MAXSIZE`` (Redis 8.10, from the redis.io page; no 8.10 server here): caps
  on the whole reply across streams (``stream_common.ReplyBudget``), for ``>`` and history
  reads alike, checked before each entry is delivered, so an entry that does not fit is not
  added to the PEL. Once the budget is spent the later streams are not served (their
  consumer is still created and seen, as for a stream with nothing to serve).
- NACKed entries (XNACK, Redis 8.8) are served by ``>`` only with CLAIM, first, in the order
  they were released: the XREADGROUP page's ordering guarantees for CLAIM.
- Dead letters (Sluice, opt-in): an entry a history read or CLAIM would deliver past its
  group's dead-letter policy goes to the dead-letter stream instead
  (``stream_deadletter.py``); the command's log is then one MULTI/EXEC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sluice.protocol import NULL_ARRAY, Map, Raw, encode
from sluice.storage.keyspace import Database
from sluice.storage.stream import Stream, span_entries
from sluice.storage.stream_group import Consumer, ConsumerGroup
from sluice.storage.streamid import MAX_ID, format_id, parse_strict_id

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    CLAIM_IDLE_NEGATIVE,
    CLAIM_IDLE_NOT_INTEGER,
    MAXCOUNT_BELOW_COUNT,
    MAXCOUNT_NOT_POSITIVE,
    MAXSIZE_NOT_POSITIVE,
    NOGROUP_XREADGROUP,
    SYNTAX,
    XREADGROUP_DOLLAR,
    XREADGROUP_MISSING_GROUP,
    XREADGROUP_PLUS,
    XREADGROUP_UNBALANCED,
    CommandError,
)
from .spec import ACCESS, BLOCKING, RO, WRITE, A, cmd, keys_after
from .stream_common import (
    LLONG_MAX,
    ReplyBudget,
    entries_reply,
    parse_block_timeout,
    parse_reply_cap,
    render_entries,
)
from .stream_deadletter import drain
from .stream_groups import (
    claim_argv,
    createconsumer_argv,
    group_dirty,
    lookup_group,
    setid_argv,
)


@dataclass(slots=True)
class ReadGroupArgs:
    """XREADGROUP's parsed arguments; ``ids`` holds MAX_ID for ``>``. Never changed after
    parsing (a blocked reader's re-runs share it)."""

    group: bytes
    consumer: bytes
    count: int  # 0: no limit
    block_ms: int | None  # None: no BLOCK; 0: forever
    claim: int | None  # CLAIM min-idle-time, None when absent
    maxcount: int  # MAXCOUNT (8.10), 0 when absent
    maxsize: int  # MAXSIZE (8.10), 0 when absent
    noack: bool
    keys: list[bytes]
    ids: list[int]


# Parsed options are reused rather than parsed again, since only the key and group lookups
# can give another answer: a blocked XREADGROUP keeps them in its block state (``memo``) for
# its re-runs (every write to the key may re-run it, Redis 7.2's reprocessing), and the
# connection keeps its last parse (``parse_memo``) for a request equal to it, which is what
# a consumer loop sends.


def parse_xreadgroup(ctx: Context, now: int) -> tuple[ReadGroupArgs, list[ConsumerGroup]]:
    """Options left to right as Redis reads them, then per stream: type, group, ID.

    Returns the arguments and the group of each key, looked up while parsing."""
    argv = ctx.argv
    state = ctx.bstate
    cached = state.memo if state is not None else ctx.parse_memo
    if isinstance(cached, tuple) and (cached[0] is argv or cached[0] == argv):
        a: ReadGroupArgs = cached[1]  # our own memo, (argv, parse), stored below
        # The one check that depends on the clock: BLOCK's deadline must fit in 64 bits.
        if not a.block_ms or a.block_ms <= LLONG_MAX - now:
            return a, [lookup_group(ctx, key, a.group, NOGROUP_XREADGROUP)[1]
                       for key in a.keys]
    argc = len(argv)
    count = maxcount = maxsize = 0
    block: int | None = None
    claim: int | None = None
    noack = False
    group = consumer = None
    streams_at = 0
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = argv[i].upper()
        if opt == b"BLOCK" and more:
            i += 1
            block = parse_block_timeout(argv[i], now)
        elif opt == b"COUNT" and more:
            i += 1
            count = max(0, parse_int(argv[i]))
        elif opt == b"MAXCOUNT" and more:  # Redis 8.10
            i += 1
            maxcount = parse_reply_cap(argv[i], MAXCOUNT_NOT_POSITIVE)
        elif opt == b"MAXSIZE" and more:  # Redis 8.10
            i += 1
            maxsize = parse_reply_cap(argv[i], MAXSIZE_NOT_POSITIVE)
        elif opt == b"CLAIM" and more:
            i += 1
            claim = parse_int(argv[i], CLAIM_IDLE_NOT_INTEGER)
            if claim < 0:
                raise CommandError(CLAIM_IDLE_NEGATIVE)
        elif opt == b"STREAMS" and more:
            streams_at = i + 1
            if (argc - streams_at) % 2:
                raise CommandError(XREADGROUP_UNBALANCED)
            break
        elif opt == b"GROUP" and more >= 2:
            group, consumer = argv[i + 1], argv[i + 2]
            i += 2
        elif opt == b"NOACK":
            noack = True
        else:
            raise CommandError(SYNTAX)
        i += 1
    if not streams_at:
        raise CommandError(SYNTAX)
    if group is None or consumer is None:
        raise CommandError(XREADGROUP_MISSING_GROUP)
    if maxcount and count and maxcount < count:
        raise CommandError(MAXCOUNT_BELOW_COUNT)
    n = (argc - streams_at) // 2
    keys = argv[streams_at : streams_at + n]
    ids: list[int] = []
    groups: list[ConsumerGroup] = []
    for key, raw in zip(keys, argv[streams_at + n :], strict=True):
        groups.append(lookup_group(ctx, key, group, NOGROUP_XREADGROUP)[1])  # WRONGTYPE first
        if raw == b">":
            ids.append(MAX_ID)
        elif raw == b"$":
            raise CommandError(XREADGROUP_DOLLAR)
        elif raw == b"+":
            raise CommandError(XREADGROUP_PLUS)
        else:
            ids.append(parse_strict_id(raw))
    a = ReadGroupArgs(group, consumer, count, block, claim, maxcount, maxsize, noack, keys, ids)
    ctx.parse_memo = (argv, a)
    return a, groups


def _serve_new(ctx: Context, key: bytes, group: ConsumerGroup, consumer: Consumer,
               a: ReadGroupArgs, now: int, log: list[list[bytes]] | None,
               budget: ReplyBudget | None, count: int) -> tuple[Any, int, int]:
    """``>`` for one stream: claimed entries (CLAIM), then new ones; None if nothing.

    Returns the entries, how many changes Redis would propagate and how many entries were
    dead-lettered; their XCLAIM / XGROUP SETID records are built into ``log`` only when there
    is an AOF to feed. ``count`` is COUNT under what is left of MAXCOUNT (0: no limit).
    """
    stream = group.stream
    out: list[Any] = []
    changes = dead = 0
    left = count
    if a.claim is not None:
        fits = None if budget is None else (
            lambda sid, fields: budget.fits(sid, fields, 24))  # + idle and count integers
        claimed = group.claim_idle(consumer, a.claim, count, now, fits)
        if group.due:  # past the dead-letter policy: moved rather than claimed
            dl_log: list[list[bytes]] = []
            dead = drain(ctx, key, group, dl_log)
            changes += dead
            if log is not None:
                log += dl_log
        changes += len(claimed)
        for sid, fields, idle, delivered in claimed:
            out.append([format_id(sid), fields, idle, delivered])
        if log is not None:
            log += [claim_argv(key, group.name, sid, group.pel[sid], consumer.name,
                               group.last_id) for sid, _, _, _ in claimed]
        if count:
            left = count - len(claimed)
    # Nothing new: the group is at the stream's last ID (or past its last live entry).
    if (count and left <= 0) or group.last_id >= stream.last_id or not stream.length \
            or stream.last_live_id() <= group.last_id or (budget is not None and budget.closed):
        return out or None, changes, dead
    if budget is not None:
        # Checked before delivering: what does not fit stays out of the PEL (8.10 page).
        left = budget.fitting(stream.spans(group.last_id + 1, MAX_ID, left))
        if not left:
            return out or None, changes, dead
    old_last = group.last_id
    spans, ids = group.deliver_new_spans(consumer, left, now, a.noack)
    if not a.noack:
        changes += len(ids)
        if log is not None:
            pel = group.pel
            log += [claim_argv(key, group.name, sid, pel[sid], consumer.name,
                               max(sid, old_last)) for sid in ids]
    if group.last_id != old_last:
        changes += 1
        if log is not None:
            log.append(setid_argv(key, group))
    if a.claim is None:
        # Rendered from the nodes (as XRANGE's reply), no list per entry.
        return (render_entries(spans) if ids else None), changes, dead
    out += [[format_id(sid), fields, 0, 0] for sid, fields in span_entries(spans)]
    return out or None, changes, dead


def xreadgroup(ctx: Context, args: Args) -> Reply:
    now = ctx.now_ms()
    a, groups = parse_xreadgroup(ctx, now)
    served: list[tuple[bytes, Any]] = []
    log: list[list[bytes]] | None = [] if ctx.server.aof is not None else None
    changes = 0
    dead = 0  # entries dead-lettered (Sluice): the log must then be one transaction
    budget = ReplyBudget(a.maxcount, a.maxsize) if a.maxcount or a.maxsize else None
    for key, sid, group in zip(a.keys, a.ids, groups, strict=True):
        consumer, created = group.get_or_create_consumer(a.consumer, now)
        if created:
            ctx.notify(b"xgroup-createconsumer", key)
            changes += 1
            if log is not None:
                log.append(createconsumer_argv(key, a.group, a.consumer))
        count = a.count
        if budget is not None:
            count = budget.per_stream(a.count)
            if count < 0:  # MAXCOUNT / MAXSIZE spent: this stream is not served
                consumer.seen_time = now
                continue
            budget.begin_stream(key)
        if sid != MAX_ID:
            # History: BLOCK, NOACK and CLAIM are ignored; nothing to propagate (but dead
            # letters, when a policy moves an entry instead of delivering it again).
            fits = None if budget is None else budget.fits
            history = group.read_history(consumer, sid, count, now, fits)
            if group.due:
                dl_log: list[list[bytes]] = []
                n = drain(ctx, key, group, dl_log)
                dead += n
                if log is not None:
                    log += dl_log
            served.append((key, entries_reply(history)))
            continue
        consumer.seen_time = now
        entries, n, moved = _serve_new(ctx, key, group, consumer, a, now, log, budget, count)
        dead += moved
        changes += n > 0  # Redis counts one change per stream it propagates anything for
        if entries is not None:
            served.append((key, entries))
    for key in a.keys:  # consumers were seen: each stream counts as modified (LRM), quietly
        group_dirty(ctx, 0, key)
    if changes or dead:
        group_dirty(ctx, changes)
        if log:
            ctx.rewrite_argv(*log)
    if served:
        return _streams_reply(ctx, served)
    if a.block_ms is not None:
        # Inside MULTI this answers at once with the timeout reply, as Redis does.
        reply = ctx.block(a.keys, a.block_ms, NULL_ARRAY, unblock_on_nokey=True,
                          memo=(ctx.argv, a))
        if a.claim is not None and reply is not NULL_ARRAY:
            # Woken also when a pending entry becomes claimable (Redis 8.4): at min-idle-time
            # after the oldest delivery among the streams' groups, or from now if none.
            oldest = [t for t in (g.oldest_delivery() for g in groups) if t is not None]
            ctx.server.blocking.wake_when_claimable(ctx.db, a.keys,
                                                    a.claim + (min(oldest) if oldest else now))
        return reply
    return NULL_ARRAY


def ready_check(client: Context, db: Database, key: bytes, notes: dict[Any, Any]) -> bool:
    """Must this blocked XREADGROUP run again now that ``key`` was signalled? (blocking.py)

    Redis re-runs every blocked reader of a signalled stream. A re-run that finds nothing new
    on any of its streams, with its group and consumer in place on each, only sees the
    consumer again and blocks again; then this does the seeing and answers False. Anything
    else (something new to read, CLAIM, a missing group, consumer or stream) needs the
    re-run. ``notes`` keeps each (stream, group)'s answer for the other readers of the pass.
    """
    state = client.bstate
    cached = state.memo if state is not None else None
    if not isinstance(cached, tuple) or state is None or cached[0] is not state.argv:
        return True
    a: ReadGroupArgs = cached[1]  # our own memo, (argv, parse): see xreadgroup
    if a.claim is not None:
        return True
    consumers = []
    for k in a.keys:
        group = notes.get((k, a.group))
        if group is None:
            group = _idle_group(db, k, a.group)
            notes[k, a.group] = group
        if group is False:
            return True
        consumer = group.consumers.get(a.consumer)
        if consumer is None:
            return True  # deleted meanwhile: the re-run creates it again
        consumers.append(consumer)
    now = notes.get(_NOW)
    if now is None:
        now = notes[_NOW] = client.now_ms()
    for consumer in consumers:
        consumer.seen_time = now
    return False


_NOW = object()  # ``notes``' entry for the time of the pass


def _idle_group(db: Database, key: bytes, name: bytes) -> ConsumerGroup | Literal[False]:
    """The group ``name`` of stream ``key`` if it has nothing new to deliver; else False.
    The key counts as read, as by the re-run this spares (OBJECT IDLETIME)."""
    stream = db.get(key)
    if type(stream) is not Stream:
        return False
    group = stream.groups.get(name)
    if group is None:
        return False
    if group.last_id >= stream.last_id or not stream.length \
            or stream.last_live_id() <= group.last_id:
        return group
    return False


def _streams_reply(ctx: Context, served: list[tuple[bytes, Any]]) -> Reply:
    """``[[key, entries], ...]`` in RESP2; a map in RESP3 (keys may repeat, as in Redis)."""
    if not ctx.resp3:
        return [[key, entries] for key, entries in served]
    if len({key for key, _ in served}) == len(served):
        return Map(served)
    # A key named twice: Redis sends both pairs in one map, which a dict cannot hold.
    body = b"".join(encode(key, True) + encode(entries, True) for key, entries in served)
    return Raw(b"%%%d\r\n" % len(served) + body)


COMMANDS: tuple[Command, ...] = (
    #   name         arity  flags             acl       keys                                handler
    cmd("xreadgroup",  -7,  WRITE | BLOCKING, A.STREAM, keys_after(b"STREAMS", 4, RO | ACCESS),
        xreadgroup,
        "Returns new or historical messages from a stream for a consumer in a group. Blocks "
        "until a message is available otherwise.", group="stream", since="5.0.0",
        complexity="For each stream mentioned: O(M) with M being the number of elements "
                   "returned. If M is constant (e.g. always asking for the first 10 elements "
                   "with COUNT), you can consider it O(1). On the other side when XREADGROUP "
                   "blocks, XADD will pay the O(N) time in order to serve the N clients "
                   "blocked on the stream getting new data.",
        syntax="GROUP group consumer [COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] "
               "[BLOCK milliseconds] [CLAIM min-idle-time] [NOACK] STREAMS key [key ...] id "
               "[id ...]", ready_check=ready_check, reads=True),
)
