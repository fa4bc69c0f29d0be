"""Pending-entries commands: XPENDING, XCLAIM and XAUTOCLAIM.

Role: parse in Redis's order (``xpendingCommand``, ``xclaimCommand``, ``xautoclaimCommand`` of
``t_stream.c``), let ``ConsumerGroup.pending_summary`` / ``pending_range`` / ``claim`` /
``autoclaim`` do the work, and build Redis's replies.

Invariants and Redis details kept:

- XPENDING parses IDLE, COUNT, start and end before looking the key up, so syntax errors win
  over NOGROUP; a negative COUNT is an empty reply; an unknown consumer is an empty reply.
  The summary's per-consumer counts are bulk strings (``addReplyBulkLongLong``), and an empty
  PEL answers ``[0, nil, nil, nil-array]``.
- XCLAIM reads IDs until the first argument that is not one, then options; an unparsable
  option value or an unknown option fails the whole command before anything is claimed.
  IDLE/TIME values in the future or negative mean "now". The claiming consumer is created
  even if nothing is claimed (7.2+; 7.0 created it only on a claim). Entries deleted from the
  stream are removed from the PEL and left out of the reply.
- XAUTOCLAIM's COUNT (default 100, 1 .. LONG_MAX/16) bounds the claims and, times 10, the PEL
  entries scanned; deleted entries found on the way are dropped, listed in the third reply
  element and count against COUNT. The cursor is the next PEL ID, ``0-0`` at the end.
- Effects are logged as XCLAIM ... FORCE JUSTID records (and XGROUP SETID for a LASTID that
  claimed nothing) instead of the command, as ``streamPropagateXCLAIM`` does.
- XPENDING shows a NACKed entry (XNACK, Redis 8.8) with owner ``""`` and idle ``-1``, as the
  XNACK page's example; the summary counts it but lists it under no consumer.
- Dead letters (Sluice, opt-in): an entry XCLAIM or XAUTOCLAIM would deliver past its group's
  dead-letter policy goes to the dead-letter stream instead and is left out of the reply
  (``stream_deadletter.py``); the command's log is then one MULTI/EXEC.
"""

from __future__ import annotations

from sluice.protocol import NULL_ARRAY
from sluice.storage.stream_errors import IdOverflowError, InvalidStreamID
from sluice.storage.streamid import (
    MAX_PART,
    decr_id,
    format_id,
    incr_id,
    parse_range_bound,
    parse_strict_id,
)

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    NOGROUP_KEY_OR_GROUP,
    SYNTAX,
    XAUTOCLAIM_COUNT,
    XAUTOCLAIM_MIN_IDLE,
    XCLAIM_IDLE,
    XCLAIM_MIN_IDLE,
    XCLAIM_RETRYCOUNT,
    XCLAIM_TIME,
    XCLAIM_UNKNOWN_OPTION,
    CommandError,
)
from .spec import ACCESS, DELETE, FAST, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at
from .stream_common import entries_reply
from .stream_deadletter import drain
from .stream_groups import (
    claim_argv,
    createconsumer_argv,
    drop_argv,
    group_dirty,
    lookup_group,
    setid_argv,
)

_LONG_MAX = (1 << 63) - 1
_AUTOCLAIM_MAX_COUNT = _LONG_MAX // 16  # LONG_MAX / max(sizeof(streamID), attempts factor)


def parse_interval(raw: bytes, end: bool) -> int:
    """An XPENDING / XAUTOCLAIM bound: ``-``, ``+``, IDs, and exclusive ``(id``."""
    sid, exclusive = parse_range_bound(raw, MAX_PART if end else 0)
    if exclusive:
        moved = decr_id(sid) if end else incr_id(sid)
        if moved is None:
            raise IdOverflowError("end" if end else "start")
        sid = moved
    return sid


# -- XPENDING -------------------------------------------------------------------------------


def xpending(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise CommandError(SYNTAX)
    key, name = argv[1], argv[2]
    min_idle = 0
    consumer: bytes | None = None
    if argc >= 6:
        at = 3
        if argv[3].upper() == b"IDLE":
            min_idle = parse_int(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            at = 5
        count = max(0, parse_int(argv[at + 2]))
        start = parse_interval(argv[at], end=False)
        end = parse_interval(argv[at + 1], end=True)
        if at + 3 < argc:
            consumer = argv[at + 3]  # anything after it is ignored, as in Redis
    _, group = lookup_group(ctx, key, name, NOGROUP_KEY_OR_GROUP)
    if argc == 3:
        total, first, last, per = group.pending_summary()
        if not total:
            return [0, None, None, NULL_ARRAY]
        return [total, format_id(first), format_id(last),  # type: ignore[arg-type]
                [[c, b"%d" % n] for c, n in per]]
    rows = group.pending_range(start, end, count, ctx.now_ms(), consumer, min_idle)
    return [[format_id(sid), owner, idle, times] for sid, owner, idle, times in rows]


# -- XCLAIM ---------------------------------------------------------------------------------


def _option_int(raw: bytes, error: str) -> int:
    return parse_int(raw, error)


def xclaim(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    key, name, owner = argv[1], argv[2], argv[3]
    _, group = lookup_group(ctx, key, name, NOGROUP_KEY_OR_GROUP)
    min_idle = max(0, parse_int(argv[4], XCLAIM_MIN_IDLE))
    ids: list[int] = []
    j = 5
    while j < len(argv):
        try:
            ids.append(parse_strict_id(argv[j]))
        except InvalidStreamID:
            break
        j += 1
    now = ctx.now_ms()
    delivery: int | None = None
    retrycount: int | None = None
    force = justid = False
    lastid = 0
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].upper()
        if opt == b"FORCE":
            force = True
        elif opt == b"JUSTID":
            justid = True
        elif opt == b"IDLE" and more:
            j += 1
            delivery = now - _option_int(argv[j], XCLAIM_IDLE)
        elif opt == b"TIME" and more:
            j += 1
            delivery = _option_int(argv[j], XCLAIM_TIME)
        elif opt == b"RETRYCOUNT" and more:
            j += 1
            retrycount = _option_int(argv[j], XCLAIM_RETRYCOUNT)
        elif opt == b"LASTID" and more:
            j += 1
            lastid = parse_strict_id(argv[j])
        else:
            raise CommandError(XCLAIM_UNKNOWN_OPTION % _c_str(argv[j]))
        j += 1
    old_last = group.last_id
    created = group.lookup_consumer(owner) is None
    if created:  # the claim creates it first (Redis's streamCreateConsumer notifies)
        ctx.notify(b"xgroup-createconsumer", key)
    pending_gone = [sid for sid in ids if sid in group.pel and not group.stream.exists(sid)]
    claimed = group.claim(owner, min_idle, ids, now, delivery_time=delivery,
                          retrycount=retrycount, force=force, justid=justid,
                          lastid=lastid or None)
    log = [drop_argv(key, name, sid, owner, now, group.last_id) for sid in pending_gone]
    log += [claim_argv(key, name, sid, group.pel[sid], owner, group.last_id)
            for sid, _ in claimed]
    dead = drain(ctx, key, group, log) if group.due else 0
    if not log and group.last_id != old_last:
        log.append(setid_argv(key, group))
    changes = len(log) + created  # Redis counts a new consumer as a change too
    if created and not (claimed or pending_gone):
        # No XCLAIM record names the new consumer (Redis counts it but logs nothing): log its
        # creation so the AOF keeps it.
        log.insert(0, createconsumer_argv(key, name, owner))
    if log:
        group_dirty(ctx, changes - 2 * dead, key)  # dead letters counted their own changes
        ctx.rewrite_argv(*log)
    if justid:
        return [format_id(sid) for sid, _ in claimed]
    return entries_reply(claimed)


def _c_str(arg: bytes) -> bytes:
    nul = arg.find(b"\x00")
    return arg if nul < 0 else arg[:nul]


# -- XAUTOCLAIM -----------------------------------------------------------------------------


def xautoclaim(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    key, name, owner = argv[1], argv[2], argv[3]
    min_idle = max(0, parse_int(argv[4], XAUTOCLAIM_MIN_IDLE))
    start = parse_interval(argv[5], end=False)
    count = 100
    justid = False
    j = 6
    while j < len(argv):
        opt = argv[j].upper()
        if opt == b"COUNT" and len(argv) - 1 - j:
            count = parse_int(argv[j + 1], XAUTOCLAIM_COUNT)
            if not 1 <= count <= _AUTOCLAIM_MAX_COUNT:
                raise CommandError(XAUTOCLAIM_COUNT)
            j += 1
        elif opt == b"JUSTID":
            justid = True
        else:
            raise CommandError(SYNTAX)
        j += 1
    _, group = lookup_group(ctx, key, name, NOGROUP_KEY_OR_GROUP)
    now = ctx.now_ms()
    created = group.lookup_consumer(owner) is None
    if created:
        ctx.notify(b"xgroup-createconsumer", key)
    cursor, claimed, deleted = group.autoclaim(owner, min_idle, start, count, now, justid)
    log = [drop_argv(key, name, sid, owner, now, group.last_id) for sid in deleted]
    log += [claim_argv(key, name, sid, group.pel[sid], owner, group.last_id)
            for sid, _ in claimed]
    changes = len(log) + created  # Redis counts a new consumer as a change too
    if group.due:
        drain(ctx, key, group, log)
    if not log and created:
        log.append(createconsumer_argv(key, name, owner))
    if log:
        group_dirty(ctx, changes, key)
        ctx.rewrite_argv(*log)
    body = [format_id(sid) for sid, _ in claimed] if justid else entries_reply(claimed)
    return [format_id(cursor), body, [format_id(sid) for sid in deleted]]


COMMANDS: tuple[Command, ...] = (
    #   name         arity flags         acl       keys                     handler
    cmd("xpending",    -3, READONLY,     A.STREAM, key_at(1, RO | ACCESS),  xpending,
        "Returns the information and entries from a stream consumer group's pending entries "
        "list.", group="stream", since="5.0.0",
        complexity="O(N) with N being the number of elements returned, so asking for a small "
                   "fixed number of entries per call is O(1). O(M), where M is the total "
                   "number of entries scanned when used with the IDLE filter. When the command "
                   "returns just the summary and the list of consumers is small, it runs in "
                   "O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        syntax="key group [[IDLE min-idle-time] start end count [consumer]]",
        tips=("nondeterministic_output",)),
    cmd("xclaim",      -6, WRITE | FAST, A.STREAM, key_at(1, RW | UPDATE),  xclaim,
        "Changes, or acquires, ownership of a message in a consumer group, as if the message "
        "was delivered a consumer group member.", group="stream", since="5.0.0",
        complexity="O(log N) with N being the number of messages in the PEL of the consumer "
                   "group.",
        syntax="key group consumer min-idle-time id [id ...] [IDLE ms] "
               "[TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] "
               "[LASTID lastid]",
        tips=("nondeterministic_output",), reads=True),
    cmd("xautoclaim",  -6, WRITE | FAST, A.STREAM, key_at(1, RW | DELETE),  xautoclaim,
        "Changes, or acquires, ownership of messages in a consumer group, as if the messages "
        "were delivered to as consumer group member.", group="stream", since="6.2.0",
        complexity="O(1) if COUNT is small.",
        syntax="key group consumer min-idle-time start [COUNT count] [JUSTID]",
        tips=("nondeterministic_output",), reads=True),
)
