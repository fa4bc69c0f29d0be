"""Consumer-group commands: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP),
XACK, XACKDEL, XINFO GROUPS and XINFO CONSUMERS. XREADGROUP lives in ``stream_readgroup.py``,
XPENDING / XCLAIM / XAUTOCLAIM in ``stream_claims.py``; the helpers at the top of this module
(NOGROUP errors, dirty bookkeeping, the XCLAIM / XGROUP SETID propagation records) are shared
by all three.

Role: parse arguments in Redis's order (so the same error wins), call the storage layer
(``storage.stream_group.ConsumerGroup`` / ``storage.stream.Stream``), build the reply.

Invariants, as in Redis (``t_stream.c``: ``xgroupCommand``, ``xackCommand``, ``xinfoCommand``,
``streamPropagateXCLAIM``, ``streamPropagateGroupID``):

- Consumer-group metadata changes (a group, a consumer, a PEL entry, a group's last ID) bump
  the dirty counter but are *not* key modifications: Redis never calls ``signalModifiedKey``
  for them, so WATCH is not invalidated and blocked clients are not woken (checked against
  redis-server 7.0.15; the current source still does this on purpose). ``group_dirty`` does
  that bookkeeping, also for XSETID, XCFGSET and XIDMPRECORD (``keyModified(..., 0)`` in
  8.6); ``ctx.modified`` is used only where Redis modifies the key itself
  (XGROUP CREATE ... MKSTREAM creating the stream, XACKDEL deleting entries).
- XGROUP DESTROY signals the key as ready, so XREADGROUP clients blocked on the group re-run
  their command and get the NOGROUP error (Redis 7.2+; 7.0 sent another wording).
- What the AOF logs for XREADGROUP / XCLAIM / XAUTOCLAIM is their effect, spelled as
  ``XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID LASTID id`` per pending
  entry and ``XGROUP SETID key group id ENTRIESREAD n`` for a moved last ID
  (``streamPropagateXCLAIM`` / ``streamPropagateGroupID``), through ``ctx.rewrite_argv``.
"""

from __future__ import annotations

from sluice.protocol import OK, Map
from sluice.storage.stream import Stream, XDelExResult
from sluice.storage.stream_group import ConsumerGroup, PendingEntry
from sluice.storage.streamid import format_id, parse_id, parse_strict_id

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    ENTRIESREAD_RANGE,
    NO_SUCH_KEY,
    NOGROUP_XGROUP,
    XGROUP_KEY_REQUIRED,
    CommandError,
    subcommand_syntax,
)
from .introspection import help_reply
from .spec import (
    ACCESS,
    DELETE,
    DENYOOM,
    FAST,
    INSERT,
    LOADING,
    NONE,
    READONLY,
    RO,
    RW,
    STALE,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
)
from .stream_common import get_stream, new_stream, parse_ids_block

__all__ = [
    "COMMANDS",
    "claim_argv",
    "group_dirty",
    "nogroup",
    "setid_argv",
]


# -- shared by the consumer-group modules ---------------------------------------------------


def nogroup(template: bytes, *names: bytes) -> CommandError:
    """A NOGROUP error naming the key and the group in ``template``'s order (Redis has two)."""
    return CommandError(template % tuple(_c_str(n) for n in names))


def _c_str(name: bytes) -> bytes:
    """What Redis's ``%s`` prints of a name: up to the first NUL byte."""
    nul = name.find(b"\x00")
    return name if nul < 0 else name[:nul]


def group_dirty(ctx: Context, changes: int = 1, key: bytes | None = None) -> None:
    """Count writes that Redis propagates (``server.dirty++``) without touching WATCH or
    waking readers: consumer-group changes, XSETID, XCFGSET, XIDMPRECORD (see the docstring).
    With ``key``, the stream is measured again and, under an LRM policy, counts as modified
    (Redis's ``keyModified(..., signal=0)``)."""
    if changes:
        ctx.server.dirty += changes
    if key is not None:
        db = ctx.db
        db.written(key, db.access.lrm)


def lookup_group(ctx: Context, key: bytes, name: bytes, template: bytes) -> tuple[Stream, ConsumerGroup]:
    """The stream and its group, WRONGTYPE first, then NOGROUP worded by ``template``."""
    stream = get_stream(ctx, key)
    group = stream.groups.get(name) if stream is not None else None
    if group is None:
        raise nogroup(template, key, name)
    return stream, group  # type: ignore[return-value]


def claim_argv(key: bytes, group: bytes, sid: int, pe: PendingEntry, owner: bytes,
               last_id: int) -> list[bytes]:
    """The XCLAIM that recreates one pending entry on replay (``streamPropagateXCLAIM``)."""
    return [b"XCLAIM", key, group, owner, b"0", format_id(sid), b"TIME",
            b"%d" % pe.delivery_time, b"RETRYCOUNT", b"%d" % pe.delivery_count, b"FORCE",
            b"JUSTID", b"LASTID", format_id(last_id)]


def drop_argv(key: bytes, group: bytes, sid: int, owner: bytes, now: int,
              last_id: int) -> list[bytes]:
    """The XCLAIM that drops a pending ID whose entry is gone: on replay the entry is missing,
    so XCLAIM removes it from the PEL. Redis sends the old NACK's fields; they do not matter
    since nothing is claimed."""
    return [b"XCLAIM", key, group, owner, b"0", format_id(sid), b"TIME", b"%d" % now,
            b"RETRYCOUNT", b"0", b"FORCE", b"JUSTID", b"LASTID", format_id(last_id)]


def setid_argv(key: bytes, group: ConsumerGroup) -> list[bytes]:
    """``XGROUP SETID key group id ENTRIESREAD n`` (``streamPropagateGroupID``)."""
    return [b"XGROUP", b"SETID", key, group.name, format_id(group.last_id), b"ENTRIESREAD",
            b"%d" % group.entries_read]


def createconsumer_argv(key: bytes, group: bytes, consumer: bytes) -> list[bytes]:
    """``XGROUP CREATECONSUMER`` (``streamPropagateConsumerCreation``)."""
    return [b"XGROUP", b"CREATECONSUMER", key, group, consumer]


def subcommand_syntax_error(ctx: Context) -> CommandError:
    """``addReplySubcommandSyntaxError``: names the subcommand as the client typed it."""
    return subcommand_syntax(ctx.argv[1], "xgroup")


# -- XGROUP ---------------------------------------------------------------------------------


def _xgroup_options(ctx: Context, create: bool) -> tuple[bool, int]:
    """Options after ``<key> <group> <id>``: (MKSTREAM, ENTRIESREAD), in Redis's order."""
    argv = ctx.argv
    mkstream = False
    entries_read = -1
    i = 5
    while i < len(argv):
        opt = argv[i].upper()
        if create and opt == b"MKSTREAM":
            mkstream = True
            i += 1
        elif opt == b"ENTRIESREAD" and i + 1 < len(argv):
            entries_read = parse_int(argv[i + 1])
            if entries_read < -1:
                raise CommandError(ENTRIESREAD_RANGE)
            i += 2
        else:
            raise subcommand_syntax_error(ctx)
    return mkstream, entries_read


def _xgroup_target(ctx: Context, mkstream: bool = False, need_group: bool = True
                   ) -> tuple[Stream | None, ConsumerGroup | None]:
    """The key and group checks every subcommand but HELP makes (``xgroupCommand``)."""
    key, name = ctx.argv[2], ctx.argv[3]
    stream = get_stream(ctx, key)
    group = None
    if not mkstream:
        if stream is None:
            raise CommandError(XGROUP_KEY_REQUIRED)
        group = stream.groups.get(name)
        if group is None and need_group:
            raise nogroup(NOGROUP_XGROUP, name, key)
    return stream, group


def xgroup_create(ctx: Context, args: Args) -> Reply:
    mkstream, entries_read = _xgroup_options(ctx, create=True)
    stream, _ = _xgroup_target(ctx, mkstream, need_group=False)
    if len(ctx.argv) > 8:
        raise subcommand_syntax_error(ctx)
    key, name, raw_id = ctx.argv[2], ctx.argv[3], ctx.argv[4]
    if raw_id == b"$":
        last_id = stream.last_id if stream is not None else 0
    else:
        last_id = parse_strict_id(raw_id)
    if stream is None:  # MKSTREAM, now that nothing can fail before the group exists
        stream = new_stream(ctx)
        ctx.db.add(key, stream)
        ctx.modified(key, changes=0)  # the group's change is the one Redis counts
    stream.create_group(name, last_id, _at_most_added(stream, entries_read))  # BusyGroupError
    group_dirty(ctx, key=ctx.argv[2])
    ctx.notify(b"xgroup-create", key)
    return OK


def xgroup_setid(ctx: Context, args: Args) -> Reply:
    _, entries_read = _xgroup_options(ctx, create=False)
    stream, group = _xgroup_target(ctx)
    assert stream is not None and group is not None
    if len(ctx.argv) not in (5, 7):
        raise subcommand_syntax_error(ctx)
    raw_id = ctx.argv[4]
    # SETID accepts "-" and "+" (streamParseIDOrReply), unlike CREATE.
    last_id = stream.last_id if raw_id == b"$" else parse_id(raw_id)
    group.set_id(last_id, _at_most_added(stream, entries_read))
    group_dirty(ctx, key=ctx.argv[2])
    ctx.notify(b"xgroup-setid", ctx.argv[2])
    return OK


def _at_most_added(stream: Stream, entries_read: int) -> int:
    """ENTRIESREAD beyond the stream's entries-added is taken as entries-added (Redis 8;
    7.0 kept it, and reported a lag that could not be)."""
    return entries_read if entries_read == -1 else min(entries_read, stream.entries_added)


def xgroup_destroy(ctx: Context, args: Args) -> Reply:
    stream, group = _xgroup_target(ctx, need_group=False)
    assert stream is not None
    if group is None:
        return 0
    stream.destroy_group(group.name)
    group_dirty(ctx, key=ctx.argv[2])
    ctx.notify(b"xgroup-destroy", ctx.argv[2])
    # Redis signals the key so XREADGROUP clients blocked on the group re-run and fail.
    ctx.server.blocking.signal_key_as_ready(ctx.db, ctx.argv[2])
    return 1


def xgroup_createconsumer(ctx: Context, args: Args) -> Reply:
    _, group = _xgroup_target(ctx)
    assert group is not None
    created = group.create_consumer(ctx.argv[4], ctx.now_ms())
    if created is None:
        return 0
    group_dirty(ctx, key=ctx.argv[2])
    ctx.notify(b"xgroup-createconsumer", ctx.argv[2])
    return 1


def xgroup_delconsumer(ctx: Context, args: Args) -> Reply:
    _, group = _xgroup_target(ctx)
    assert group is not None
    name = ctx.argv[4]
    if group.lookup_consumer(name) is None:
        return 0
    pending = group.delete_consumer(name)
    group_dirty(ctx, key=ctx.argv[2])
    ctx.notify(b"xgroup-delconsumer", ctx.argv[2])
    return pending


_XGROUP_HELP = (
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
)


def xgroup_help(ctx: Context, args: Args) -> Reply:
    return help_reply("XGROUP", _XGROUP_HELP)


# -- XACK / XACKDEL -------------------------------------------------------------------------


def xack(ctx: Context, args: Args) -> Reply:
    key, name = args.next_key(), args.next()
    stream = get_stream(ctx, key)
    group = stream.groups.get(name) if stream is not None else None
    if group is None:
        return 0  # no key or group: nothing to acknowledge (checked before the IDs)
    # All IDs are parsed first: an error must not leave some of them acknowledged.
    ids = [parse_strict_id(raw) for raw in args.rest()]
    acked = group.ack(ids)
    group_dirty(ctx, acked, key if acked else None)
    return acked


def xackdel(ctx: Context, args: Args) -> Reply:
    key, name = ctx.argv[1], ctx.argv[2]
    stream = get_stream(ctx, key)  # WRONGTYPE before any option error, as Redis
    policy, id_args = parse_ids_block(ctx.argv, 3)
    group = None if stream is None else stream.groups.get(name)
    if stream is None or group is None:
        # No key or no group: every ID "not found", not an error (Redis 8.2).
        return [XDelExResult.NOT_FOUND] * len(id_args)
    ids = [parse_strict_id(a) for a in id_args]
    length = len(stream)
    result = stream.ack_delete(group, ids, policy)
    if len(stream) != length:
        # Entries left the stream: WATCH sees it, as after XDEL; only the acks count.
        ctx.modified(key, ready=False, changes=0)
        ctx.notify(b"xdel", key)
    group_dirty(ctx, sum(1 for r in result if r != XDelExResult.NOT_FOUND), key)
    return result


# -- XINFO GROUPS / CONSUMERS ---------------------------------------------------------------


def _stream_for_info(ctx: Context, key: bytes) -> Stream:
    stream = get_stream(ctx, key)
    if stream is None:
        raise CommandError(NO_SUCH_KEY)
    return stream


def xinfo_groups(ctx: Context, args: Args) -> Reply:
    stream = _stream_for_info(ctx, args.next_key())
    out = []
    for g in stream.groups_in_order():
        # entries-read and lag are null when unknown (SCG_INVALID_ENTRIES_READ); lag follows
        # Redis 7.2+ (streamReplyWithCGLag), which 7.0 computes differently after ENTRIESREAD.
        out.append(Map({
            b"name": g.name,
            b"consumers": len(g.consumers),
            b"pending": len(g.pel),
            b"last-delivered-id": format_id(g.last_id),
            b"entries-read": g.entries_read if g.entries_read != -1 else None,
            b"lag": stream.group_lag(g),
        }))
    return out


def xinfo_consumers(ctx: Context, args: Args) -> Reply:
    key, name = args.next_key(), args.next()
    stream = _stream_for_info(ctx, key)
    group = stream.groups.get(name)
    if group is None:
        raise nogroup(NOGROUP_XGROUP, name, key)
    now = ctx.now_ms()
    out = []
    for c in group.consumers_in_order():
        # idle: since the last attempt (seen-time); inactive: since the last successful read
        # or claim (active-time), -1 if never (Redis 7.2+; 7.0 had no "inactive").
        out.append(Map({
            b"name": c.name,
            b"pending": len(c.pel),
            b"idle": max(0, now - c.seen_time),
            b"inactive": now - c.active_time if c.active_time != -1 else -1,
        }))
    return out


_CREATE_SYNTAX = "key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read]"

COMMANDS: tuple[Command, ...] = (
    #   name                   arity flags             acl       keys                 handler
    cmd("xgroup",                -2, NONE,             A.NONE,   None,                None,
        "A container for consumer groups commands.", group="stream", since="5.0.0",
        complexity="Depends on subcommand."),
    cmd("xgroup|create",         -5, WRITE | DENYOOM,  A.STREAM, key_at(2, RW | INSERT),
        xgroup_create, "Creates a consumer group.", group="stream", since="5.0.0",
        syntax=_CREATE_SYNTAX),
    cmd("xgroup|setid",          -5, WRITE,            A.STREAM, key_at(2, RW | UPDATE),
        xgroup_setid, "Sets the last-delivered ID of a consumer group.", group="stream",
        since="5.0.0", syntax="key group <id | $> [ENTRIESREAD entries-read]"),
    cmd("xgroup|destroy",         4, WRITE,            A.STREAM, key_at(2, RW | DELETE),
        xgroup_destroy, "Destroys a consumer group.", group="stream", since="5.0.0",
        complexity="O(N) where N is the number of entries in the group's pending entries "
                   "list (PEL).", syntax="key group"),
    cmd("xgroup|createconsumer",  5, WRITE | DENYOOM,  A.STREAM, key_at(2, RW | INSERT),
        xgroup_createconsumer, "Creates a consumer in a consumer group.", group="stream",
        since="6.2.0", syntax="key group consumer"),
    cmd("xgroup|delconsumer",     5, WRITE,            A.STREAM, key_at(2, RW | DELETE),
        xgroup_delconsumer, "Deletes a consumer from a consumer group.", group="stream",
        since="5.0.0", syntax="key group consumer"),
    cmd("xgroup|help",            2, LOADING | STALE,  A.STREAM, None,                xgroup_help,
        "Returns helpful text about the different subcommands.", group="stream",
        since="5.0.0"),
    cmd("xack",                  -4, WRITE | FAST,     A.STREAM, key_at(1, RW | UPDATE), xack,
        "Returns the number of messages that were successfully acknowledged by the consumer "
        "group member of a stream.", group="stream", since="5.0.0",
        complexity="O(1) for each message ID processed.", syntax="key group id [id ...]", reads=True),
    cmd("xackdel",               -6, WRITE | FAST,     A.STREAM,
        key_at(1, RW | UPDATE | DELETE), xackdel,
        "Acknowledges and conditionally deletes one or multiple entries for a stream consumer "
        "group.", group="stream", since="8.2.0",
        complexity="O(1) for each entry ID processed.",
        syntax="key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]", reads=True),
    # Subcommands of the ``xinfo`` container row (stream_info.py).
    cmd("xinfo|groups",           3, READONLY,         A.STREAM, key_at(2, RO | ACCESS),
        xinfo_groups, "Returns a list of the consumer groups of a stream.", group="stream",
        since="5.0.0", syntax="key"),
    cmd("xinfo|consumers",        4, READONLY,         A.STREAM, key_at(2, RO | ACCESS),
        xinfo_consumers, "Returns a list of the consumers in a consumer group.",
        group="stream", since="5.0.0", syntax="key group",
        tips=("nondeterministic_output",)),
)
