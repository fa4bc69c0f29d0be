"""Stream commands without consumer groups (Redis's ``t_stream.c``): XADD, XRANGE, XREVRANGE,
XLEN, XDEL, XDELEX, XTRIM, XSETID, XCFGSET and XREAD (blocking included). XINFO lives in
``stream_info.py``, the consumer-group commands in their own module.

Handlers parse and build replies; the data work is on ``storage.stream.Stream``. Arguments
are checked in Redis's order, which decides which error wins: XADD parses every option and
the ID, checks the field count, refuses an explicit ``0-0``, and only then looks the key up;
XRANGE parses the IDs and COUNT before the lookup; XDEL looks the key up first (a missing key
answers 0 whatever the IDs); XREAD checks each key's type just before parsing its ID.

Logged effects (``ctx.rewrite_argv``): XADD with ``*`` or ``<ms>-*`` is logged with the ID it
generated, and any ``~`` trim (XADD or XTRIM) is logged as the exact trim it turned out to be,
as Redis's ``streamRewriteApproxSpecifier`` / ``streamRewriteTrimArgument`` do, so replaying
the AOF rebuilds the same stream. An IDMPAUTO XADD is logged as IDMP with the computed iid.

XADD has a fast path for the benchmarked shape ``XADD key * f v ...``: no option parsing and
no objects beyond the entry itself.

Redis 7.2+/8.x behaviour followed where 7.0.15 differs (tests say which): XREAD ``+`` (7.4,
the last entry), the "Unbalanced 'xread' list" wording (7.2), BLOCK overflow as "timeout is
out of range" (7.2), XDELEX and the KEEPREF/DELREF/ACKED policies (8.2), IDMP/IDMPAUTO and
XCFGSET (8.6). ``XRANGE ... COUNT 0`` answers a null array, as both 7.0 and the current source
do (the docs say nothing about it).
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import NULL_ARRAY, OK, Map, Raw, encode
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.stream import Stream
from sluice.storage.stream_errors import IdOverflowError, IdZeroError, StreamError
from sluice.storage.stream_idmp import IdmpState
from sluice.storage.streamid import (
    MAX_ID,
    MAX_PART,
    decr_id,
    format_id,
    incr_id,
    parse_range_bound,
    parse_strict_id,
)

from . import errors as E
from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import CommandError, wrong_arity
from .spec import (
    ACCESS,
    BLOCKING,
    DELETE,
    DENYOOM,
    FAST,
    READONLY,
    RO,
    RW,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
    keys_after,
)
from .stream_common import (
    ReplyBudget,
    entries_reply,
    get_stream,
    new_stream,
    parse_add_or_trim,
    parse_block_timeout,
    parse_count,
    parse_ids_block,
    parse_reply_cap,
    range_reply,
    trim_and_rewrite,
)
from .stream_groups import group_dirty

_XADD_ARITY = wrong_arity("xadd")

# -- XADD ------------------------------------------------------------------------------------


def xadd(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if argv[2] != b"*":
        return _xadd_with_options(ctx, argv)
    # Fast path: XADD key * field value [field value ...] (benchmarked: keep it lean; the
    # StreamError conversion is inline rather than a decorator's extra call).
    if not len(argv) & 1:
        raise _XADD_ARITY
    key = argv[1]
    db = ctx.db
    stream = db.get(key)
    if stream is None:
        stream = new_stream(ctx)
        new = True
    elif type(stream) is not Stream:
        raise WrongTypeError()
    else:
        new = False
    cfg = ctx.server.config
    try:
        sid = stream.append(None, argv[3:], ctx.now_ms(),
                            node_max_bytes=cfg.stream_node_max_bytes,
                            node_max_entries=cfg.stream_node_max_entries)
    except StreamError as e:  # only "exhausted the last possible ID" can happen here
        raise CommandError(str(e)) from None
    if new:
        db.add(key, stream)
    ctx.notify(b"xadd", key)
    ctx.modified(key)
    reply = format_id(sid)
    if ctx.server.aof is not None:  # only the AOF reads the rewritten command
        logged = argv[:]
        logged[2] = reply
        ctx.rewrite_argv(logged)
    return reply


def _xadd_with_options(ctx: Context, argv: list[bytes]) -> Reply:
    t = parse_add_or_trim(ctx, argv, True)
    nfields = len(argv) - t.id_idx - 1
    if nfields < 2 or nfields & 1:
        raise _XADD_ARITY
    id_spec = t.id_spec
    if id_spec is not None and id_spec[1] and id_spec[0] == 0:
        raise IdZeroError()  # before the key is looked up, as Redis does
    key = argv[1]
    db = ctx.db
    stream = get_stream(ctx, key)
    new = stream is None
    if stream is None:
        if t.no_mkstream:
            return None
        stream = new_stream(ctx)
    fields = argv[t.id_idx + 1 :]
    now = ctx.now_ms()
    idmp = None
    if t.idmp_pid is not None:
        iid = t.idmp_iid if t.idmp_iid is not None else IdmpState.auto_iid(fields)
        if not new:
            seen = stream.idmp.find(t.idmp_pid, iid, now)
            if seen is not None:
                # A retried XADD: the original entry, no write. Redis counts it as a change
                # (rdb_changes_since_last_save) and propagates it as sent; it is not logged
                # here, since replaying it once the IID has expired would add the entry again.
                group_dirty(ctx)
                ctx.rewrite_argv()
                return format_id(seen)
        idmp = (t.idmp_pid, iid)
    cfg = ctx.server.config
    sid = stream.append(id_spec, fields, now, node_max_bytes=cfg.stream_node_max_bytes,
                        node_max_entries=cfg.stream_node_max_entries, idmp=idmp)
    if new:
        db.add(key, stream)
    reply = format_id(sid)
    logged = argv[:]
    logged[t.id_idx] = reply
    ctx.notify(b"xadd", key)
    if t.strategy is not None and trim_and_rewrite(stream, t, logged):
        ctx.notify(b"xtrim", key)
    if idmp is not None and t.idmp_iid is None:
        # IDMPAUTO is logged as IDMP with the iid it computed (replay needs no hashing).
        at = t.idmp_idx
        logged[at : at + 2] = [b"IDMP", idmp[0], idmp[1]]
    ctx.modified(key)
    ctx.rewrite_argv(logged)
    return reply


# -- XRANGE / XREVRANGE / XLEN -------------------------------------------------------------


def _range(ctx: Context, argv: list[bytes], rev: bool) -> Reply:
    start_arg, end_arg = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    start, exclusive = parse_range_bound(start_arg, 0)
    if exclusive:
        nxt = incr_id(start)
        if nxt is None:
            raise IdOverflowError("start")
        start = nxt
    end, exclusive = parse_range_bound(end_arg, MAX_PART)
    if exclusive:
        prev = decr_id(end)
        if prev is None:
            raise IdOverflowError("end")
        end = prev
    count = -1
    j, argc = 4, len(argv)
    while j < argc:
        if argv[j].lower() == b"count" and j + 1 < argc:
            count = max(parse_int(argv[j + 1]), 0)
            j += 2
        else:
            raise CommandError(E.SYNTAX)
    stream = get_stream(ctx, argv[1])
    if stream is None:
        return []
    if count == 0:
        return NULL_ARRAY  # COUNT 0 (or negative): a null array, as Redis sends
    return range_reply(stream, start, end, max(count, 0), rev)


def xrange(ctx: Context, args: Args) -> Reply:
    return _range(ctx, args.argv, False)


def xrevrange(ctx: Context, args: Args) -> Reply:
    return _range(ctx, args.argv, True)


def xlen(ctx: Context, args: Args) -> Reply:
    stream = get_stream(ctx, args.argv[1])
    return 0 if stream is None else stream.length


# -- XDEL / XDELEX / XTRIM -----------------------------------------------------------------


def xdel(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    stream = get_stream(ctx, key)
    if stream is None:
        return 0
    ids = [parse_strict_id(a) for a in argv[2:]]  # all checked before anything is deleted
    deleted = stream.delete(ids)
    if deleted:
        ctx.modified(key, ready=False, changes=deleted)
        ctx.notify(b"xdel", key)
    return deleted


def xdelex(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    stream = get_stream(ctx, key)  # WRONGTYPE before any option error, as Redis
    policy, id_args = parse_ids_block(argv, 2)
    if stream is None:
        return [-1] * len(id_args)
    ids = [parse_strict_id(a) for a in id_args]
    pending_before = sum(len(g.pel) for g in stream.groups.values())
    res = stream.delete_ex(ids, policy)
    deleted = res.count(1)
    if deleted:
        ctx.modified(key, ready=False, changes=deleted)
        ctx.notify(b"xdel", key)
    elif sum(len(g.pel) for g in stream.groups.values()) != pending_before:
        # DELREF dropped references to entries already gone. Redis counts and propagates
        # nothing for that; we log it, or a restart would bring the references back.
        group_dirty(ctx)
    return res


def xtrim(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    t = parse_add_or_trim(ctx, argv, False)
    key = argv[1]
    stream = get_stream(ctx, key)
    if stream is None:
        return 0
    logged = argv[:]
    deleted = trim_and_rewrite(stream, t, logged)
    if deleted:
        ctx.notify(b"xtrim", key)
        ctx.modified(key, ready=False, changes=deleted)
        ctx.rewrite_argv(logged)
    return deleted


# -- XSETID / XCFGSET -----------------------------------------------------------------------


def xsetid(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    last_id = parse_strict_id(argv[2])
    entries_added = -1
    max_deleted = 0
    i, argc = 3, len(argv)
    while i < argc:
        opt = argv[i].upper()
        if opt == b"ENTRIESADDED" and i + 1 < argc:
            entries_added = parse_int(argv[i + 1])
            if entries_added < 0:
                raise CommandError(E.ENTRIES_ADDED_NEGATIVE)
        elif opt == b"MAXDELETEDID" and i + 1 < argc:
            max_deleted = parse_strict_id(argv[i + 1])
            if last_id < max_deleted:
                raise CommandError(E.XSETID_BELOW_GIVEN_MAXDELETED)
        else:
            raise CommandError(E.SYNTAX)
        i += 2
    key = argv[1]
    stream = get_stream(ctx, key)
    if stream is None:
        raise CommandError(E.NO_SUCH_KEY)
    stream.set_id(last_id, entries_added, max_deleted)
    group_dirty(ctx, key=key)  # propagated, but no WATCH touch nor wake-up
    ctx.notify(b"xsetid", key)
    return OK


def xcfgset(ctx: Context, args: Args) -> Reply:
    """Redis 8.6's order: the key (no such key, WRONGTYPE), then each parameter once and in
    range, then at least one of them."""
    argv = args.argv
    key = argv[1]
    stream = get_stream(ctx, key)
    if stream is None:
        raise CommandError(E.NO_SUCH_KEY)
    duration = maxsize = None
    i, argc = 2, len(argv)
    while i < argc:
        opt = argv[i].upper()
        if opt == b"IDMP-DURATION" and i + 1 < argc:
            if duration is not None:
                raise CommandError(E.IDMP_DURATION_TWICE)
            duration = parse_int(argv[i + 1])
            if not 1 <= duration <= 86400:
                raise CommandError(E.IDMP_DURATION_RANGE)
        elif opt == b"IDMP-MAXSIZE" and i + 1 < argc:
            if maxsize is not None:
                raise CommandError(E.IDMP_MAXSIZE_TWICE)
            maxsize = parse_int(argv[i + 1])
            if not 1 <= maxsize <= 10000:
                raise CommandError(E.IDMP_MAXSIZE_RANGE)
        else:
            raise CommandError(E.SYNTAX)
        i += 2
    if duration is None and maxsize is None:
        raise CommandError(E.XCFGSET_NO_PARAMETER)
    if stream.idmp.configure(duration, maxsize):  # a change clears every producer's history
        group_dirty(ctx)  # propagated, but no WATCH touch nor wake-up
    return OK


def xidmprecord(ctx: Context, args: Args) -> Reply:
    """XIDMPRECORD key pid iid id (Redis 8.6.2): remember that (pid, iid) produced the
    existing entry ``id``. AOF rewrites carry the IDMP state with it. Redis's order: the ID,
    the two names, the key, the entry, then an iid already known for another entry."""
    argv = args.argv
    sid = parse_strict_id(argv[4])
    pid, iid = argv[2], argv[3]
    if not pid:
        raise CommandError(E.XIDMPRECORD_EMPTY_PID)
    if not iid:
        raise CommandError(E.XIDMPRECORD_EMPTY_IID)
    key = argv[1]
    stream = get_stream(ctx, key)
    if stream is None:
        raise CommandError(E.NO_SUCH_KEY)
    if not stream.exists(sid):
        raise CommandError(E.XIDMPRECORD_NO_ENTRY)
    seen = stream.idmp.recorded(pid, iid)
    if seen is not None:
        if seen != sid:
            raise CommandError(E.XIDMPRECORD_OTHER_ENTRY)
        return OK
    stream.idmp.record(pid, iid, sid, ctx.now_ms())
    group_dirty(ctx)  # propagated, but no WATCH touch nor wake-up
    return OK


# -- XREAD -----------------------------------------------------------------------------------


def xread(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    argc = len(argv)
    timeout = -1  # no BLOCK
    count = maxcount = maxsize = 0
    streams_at = nstreams = 0
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = argv[i].lower()
        if opt == b"block" and more:
            i += 1
            timeout = parse_block_timeout(argv[i], ctx.now_ms())
        elif opt == b"count" and more:
            i += 1
            count = parse_count(argv[i])
        elif opt == b"maxcount" and more:  # Redis 8.10
            i += 1
            maxcount = parse_reply_cap(argv[i], E.MAXCOUNT_NOT_POSITIVE)
        elif opt == b"maxsize" and more:  # Redis 8.10
            i += 1
            maxsize = parse_reply_cap(argv[i], E.MAXSIZE_NOT_POSITIVE)
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (argc - streams_at) & 1:
                raise CommandError(E.XREAD_UNBALANCED)
            nstreams = (argc - streams_at) >> 1
            break
        elif opt == b"group" and more >= 2:
            raise CommandError(E.XREAD_GROUP_OPTION)
        elif opt == b"noack":
            raise CommandError(E.XREAD_NOACK_OPTION)
        elif opt == b"claim" and more:
            raise CommandError(E.XREAD_CLAIM_OPTION)
        else:
            raise CommandError(E.SYNTAX)
        i += 1
    if not streams_at:
        raise CommandError(E.SYNTAX)
    if maxcount and count and maxcount < count:
        raise CommandError(E.MAXCOUNT_BELOW_COUNT)
    keys = argv[streams_at : streams_at + nstreams]
    db = ctx.db
    streams: list[Stream | None] = []
    after: list[int] = []  # serve IDs greater than this; -1 for "+" (the last entry)
    dollars = False
    for j, key in enumerate(keys):
        s = db.get_typed(key, Stream)  # WRONGTYPE before this key's ID is parsed
        raw = argv[streams_at + nstreams + j]
        if raw == b"$":
            after.append(0 if s is None else s.last_id)
            dollars = True
        elif raw == b"+":
            after.append(-1)
        elif raw == b">":
            raise CommandError(E.XREAD_GT_ID)
        else:
            after.append(parse_strict_id(raw))
        streams.append(s)

    served: list[tuple[bytes, Any]] = []
    budget = ReplyBudget(maxcount, maxsize) if maxcount or maxsize else None
    for key, s, gt in zip(keys, streams, after, strict=True):
        if s is None or not s.length:
            continue
        n = count
        if budget is not None:
            n = budget.per_stream(count)
            if n < 0:
                break  # MAXCOUNT or MAXSIZE reached: later streams get nothing
            budget.begin_stream(key)
        if gt < 0:  # "+": just the last entry, COUNT notwithstanding (Redis 7.4+)
            last = s.last_entry()
            if last is not None and (budget is None or budget.fits(*last)):
                served.append((key, entries_reply([last])))
        elif gt != MAX_ID and s.last_live_id() > gt:
            if budget is not None:
                n = budget.fitting(s.spans(gt + 1, MAX_ID, n))
                if not n:
                    break
            served.append((key, range_reply(s, gt + 1, MAX_ID, n)))
    if served:
        if not ctx.resp3:
            return [[k, v] for k, v in served]
        if len({k for k, _ in served}) == len(served):
            return Map(served)
        # The same key twice: RESP3 allows repeated map keys, a dict does not.
        out = bytearray(b"%%%d\r\n" % len(served))
        for k, v in served:
            out += encode(k, True) + encode(v, True)
        return Raw(bytes(out))
    if timeout < 0:
        return NULL_ARRAY
    frozen = None
    if dollars:
        # "$" becomes the ID it meant now, so a re-run after new data does not move with it.
        frozen = argv[:]
        for j in range(nstreams):
            if argv[streams_at + nstreams + j] == b"$":
                frozen[streams_at + nstreams + j] = format_id(after[j])
    return ctx.block(list(keys), timeout, NULL_ARRAY, argv=frozen)


# -- the table --------------------------------------------------------------------------------

_ND = ("nondeterministic_output",)
_TRIM = "[<MAXLEN | MINID> [= | ~] threshold [LIMIT count]]"

COMMANDS: tuple[Command, ...] = (
    #   name        arity  flags                      acl       keys                                   handler
    cmd("xadd",       -5,  WRITE | DENYOOM | FAST,    A.STREAM, key_at(1, RW | UPDATE),                xadd,
        "Adds an entry to a stream, creating the stream unless NOMKSTREAM is given.", group="stream",
        since="5.0.0", tips=_ND,
        complexity="O(1) when adding a new entry, O(N) when trimming where N being the number of "
        "entries evicted.",
        syntax="key [NOMKSTREAM] [KEEPREF | DELREF | ACKED] [IDMPAUTO producer-id | IDMP "
        f"producer-id idempotent-id] {_TRIM} <* | id> field value [field value ...]"),
    cmd("xrange",     -4,  READONLY,                  A.STREAM, key_at(1, RO | ACCESS),                xrange,
        "Returns the entries of a stream whose IDs fall within a range.", group="stream",
        since="5.0.0", syntax="key start end [COUNT count]",
        complexity="O(N) with N being the number of elements being returned. If N is constant "
        "(e.g. always asking for the first 10 elements with COUNT), you can consider it O(1)."),
    cmd("xrevrange",  -4,  READONLY,                  A.STREAM, key_at(1, RO | ACCESS),                xrevrange,
        "Returns the entries of a stream within a range of IDs, newest first.",
        group="stream", since="5.0.0", syntax="key end start [COUNT count]",
        complexity="O(N) with N being the number of elements returned. If N is constant (e.g. "
        "always asking for the first 10 elements with COUNT), you can consider it O(1)."),
    cmd("xlen",        2,  READONLY | FAST,           A.STREAM, key_at(1, RO),                         xlen,
        "Returns how many entries a stream holds.", group="stream", since="5.0.0",
        syntax="key"),
    cmd("xdel",       -3,  WRITE | FAST,              A.STREAM, key_at(1, RW | DELETE),                xdel,
        "Deletes entries of a stream by ID; returns how many were deleted.", group="stream",
        since="5.0.0", syntax="key id [id ...]",
        complexity="O(1) for each single item to delete in the stream, regardless of the "
        "stream size."),
    cmd("xdelex",     -5,  WRITE | FAST,              A.STREAM, key_at(1, RW | DELETE),                xdelex,
        "Deletes entries of a stream, choosing what happens to consumer-group references.", group="stream", since="8.2.0",
        syntax="key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]",
        complexity="O(1) for each single item to delete in the stream, regardless of the "
        "stream size."),
    cmd("xtrim",      -4,  WRITE,                     A.STREAM, key_at(1, RW | DELETE),                xtrim,
        "Trims a stream from its oldest end, by length or by minimum ID.", group="stream", since="5.0.0",
        tips=_ND, complexity="O(N), with N being the number of evicted entries. Constant times "
        "are very small however, since entries are organized in macro nodes containing multiple "
        "entries that can be released with a single deallocation.",
        syntax="key <MAXLEN | MINID> [= | ~] threshold [LIMIT count] [KEEPREF | DELREF | ACKED]"),
    cmd("xsetid",     -3,  WRITE | DENYOOM | FAST,    A.STREAM, key_at(1, RW | UPDATE),                xsetid,
        "Sets a stream's last ID and counters (replicates streams).", group="stream", since="5.0.0",
        syntax="key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]"),
    cmd("xcfgset",    -2,  WRITE | FAST,              A.STREAM, key_at(1, RW | UPDATE),                xcfgset,
        "Configures how long and how many idempotent IDs a stream remembers.", group="stream", since="8.6.0",
        syntax="key [IDMP-DURATION idmp-duration] [IDMP-MAXSIZE idmp-maxsize]"),
    cmd("xidmprecord",  5, WRITE | DENYOOM | FAST,    A.STREAM, key_at(1, RW | UPDATE),                xidmprecord,
        "Records that an idempotent ID produced an existing entry (AOF rewrites use it).",
        group="stream", since="8.6.2", syntax="key pid iid stream-id"),
    cmd("xread",      -4,  READONLY | BLOCKING,       A.STREAM, keys_after(b"STREAMS", 1, RO | ACCESS), xread,
        "Reads entries newer than the given IDs from streams, optionally waiting for them.",
        group="stream", since="5.0.0",
        complexity="For each stream mentioned: O(N) with N being the number of elements being "
        "returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK "
        "option is used, XADD will pay O(M) time in order to serve the M clients blocked on the "
        "stream getting new data.", syntax="[COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] "
        "[BLOCK milliseconds] STREAMS key [key ...] id [id ...]"),
)
