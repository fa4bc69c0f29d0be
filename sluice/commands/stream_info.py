"""XINFO: the container row, XINFO STREAM [FULL [COUNT n]] and XINFO HELP (Redis's
``xinfoCommand`` / ``xinfoReplyWithStreamInfo`` in ``t_stream.c``). XINFO GROUPS and XINFO
CONSUMERS are declared by the consumer-group module as rows of this container.

Reply shape: a map (a flat array in RESP2) with Redis 7's fields in Redis's order: length,
radix-tree-keys, radix-tree-nodes, last-generated-id, max-deleted-entry-id, entries-added,
recorded-first-entry-id, then groups (a count) with first-entry / last-entry, or with FULL the
entries and, per group, its PEL and consumers with theirs.

Where current Redis differs from the installed 7.0.15 we follow current Redis (tests say so):
- FULL consumers carry ``active-time`` (7.2+), between ``seen-time`` and ``pel-count``.
- Group ``lag`` / ``entries-read`` use the 7.2+ rules (``Stream.group_lag``).
- The Redis 8.6 IDMP fields (idmp-duration, idmp-maxsize, pids-tracked, iids-tracked,
  iids-added, iids-duplicates) are always present (Redis's test suite reads them on streams
  that never used IDMP). Their position is not documented; we put them right after
  recorded-first-entry-id, the part FULL and the summary share.

``radix-tree-nodes`` is computed as the node count of a radix tree (rax) holding the macro
nodes' 16-byte big-endian master IDs: one node per compressed run or branch point plus one
leaf per key, an empty tree being a single node, which is what Redis's rax reports for the
same set of keys.
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import Map, SimpleString
from sluice.storage.stream import Stream
from sluice.storage.streamid import MAX_ID
from sluice.storage.streamid import format_id as fid

from . import errors as E
from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import CommandError
from .spec import ACCESS, LOADING, NONE, READONLY, RO, STALE, A, cmd, key_at
from .stream_common import entries_reply, entry_reply, get_stream

_FULL_DEFAULT_COUNT = 10


def rax_node_count(keys: list[int]) -> int:
    """Nodes of a rax holding ``keys`` (sorted, distinct) as 16-byte big-endian strings."""
    if not keys:
        return 1
    raw = [k.to_bytes(16, "big") for k in keys]

    def count(lo: int, hi: int, depth: int) -> int:
        # Keys raw[lo:hi] share their first ``depth`` bytes.
        if hi - lo == 1:
            return 1 if depth == 16 else 2  # a compressed node with the rest, and the leaf
        first, last = raw[lo], raw[hi - 1]
        d = depth
        while first[d] == last[d]:
            d += 1
        nodes = 1 if d > depth else 0  # the shared run is one compressed node
        nodes += 1  # the branching node at byte d
        i = lo
        while i < hi:
            b = raw[i][d]
            j = i + 1
            while j < hi and raw[j][d] == b:
                j += 1
            nodes += count(i, j, d + 1)
            i = j
        return nodes

    return count(0, len(raw), 0)


def _stream_head(stream: Stream, now_ms: int) -> dict[bytes, Any]:
    """The fields the summary and FULL share, IDMP included."""
    node_keys = [n.master_id for n in stream.iter_nodes()]
    idmp = stream.idmp
    pids, iids = idmp.stats(now_ms)
    return {
        b"length": stream.length,
        b"radix-tree-keys": len(node_keys),
        b"radix-tree-nodes": rax_node_count(node_keys),
        b"last-generated-id": fid(stream.last_id),
        b"max-deleted-entry-id": fid(stream.max_deleted_entry_id),
        b"entries-added": stream.entries_added,
        b"recorded-first-entry-id": fid(stream.first_id),
        b"idmp-duration": idmp.duration,
        b"idmp-maxsize": idmp.maxsize,
        b"pids-tracked": pids,
        b"iids-tracked": iids,
        b"iids-added": idmp.iids_added,
        b"iids-duplicates": idmp.iids_duplicates,
    }


def _full_groups(stream: Stream, count: int) -> list[Any]:
    out = []
    for g in stream.groups_in_order():
        pel = g.pel.items()
        if count:
            pel = list(pel)[:count]
        consumers = []
        for c in g.consumers_in_order():
            cpel = c.pel.items()
            if count:
                cpel = list(cpel)[:count]
            consumers.append(Map({
                b"name": c.name,
                b"seen-time": c.seen_time,
                b"active-time": c.active_time,
                b"pel-count": len(c.pel),
                b"pending": [[fid(sid), pe.delivery_time, pe.delivery_count]
                             for sid, pe in cpel],
            }))
        group = Map({
            b"name": g.name,
            b"last-delivered-id": fid(g.last_id),
            b"entries-read": None if g.entries_read < 0 else g.entries_read,
            b"lag": stream.group_lag(g),
            b"pel-count": len(g.pel),
            b"pending": [[fid(sid), b"" if pe.consumer is None else pe.consumer.name,
                          pe.delivery_time, pe.delivery_count] for sid, pe in pel],
            b"consumers": consumers,
        })
        if g.nacked:
            # Redis 8.8's field (XINFO STREAM page), shown only once XNACK has released
            # something, so a group that never used XNACK reads exactly as in 8.6.
            group[b"nacked-count"] = len(g.nacked)
        out.append(group)
    return out


def xinfo_stream(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    # The key is looked up before the options are parsed (no such key / WRONGTYPE win).
    stream = get_stream(ctx, argv[2])
    if stream is None:
        raise CommandError(E.NO_SUCH_KEY)
    argc = len(argv)
    full = False
    count = _FULL_DEFAULT_COUNT
    if argc > 3:
        if argc not in (4, 6) or argv[3].upper() != b"FULL" or (
            argc == 6 and argv[4].upper() != b"COUNT"
        ):
            raise CommandError(E.SUBCOMMAND_SYNTAX % (argv[1][:128], argv[0].upper()))
        full = True
        if argc == 6:
            count = parse_int(argv[5])
            if count < 0:
                count = _FULL_DEFAULT_COUNT  # current Redis: a negative COUNT is the default
    reply = Map(_stream_head(stream, ctx.now_ms()))
    if full:
        reply[b"entries"] = entries_reply(stream.range(0, MAX_ID, count))
        reply[b"groups"] = _full_groups(stream, count)
    else:
        reply[b"groups"] = len(stream.groups)
        first, last = stream.first_entry(), stream.last_entry()
        reply[b"first-entry"] = None if first is None else entry_reply(*first)
        reply[b"last-entry"] = None if last is None else entry_reply(*last)
    return reply


_HELP = [SimpleString(line) for line in (
    b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"CONSUMERS <key> <groupname>",
    b"    Show consumers of <groupname>.",
    b"GROUPS <key>",
    b"    Show the stream consumer groups.",
    b"STREAM <key> [FULL [COUNT <count>]",
    b"    Show information about the stream.",
    b"HELP",
    b"    Print this help.",
)]


def xinfo_help(ctx: Context, args: Args) -> Reply:
    return _HELP


COMMANDS: tuple[Command, ...] = (
    #   name            arity  flags             acl       keys                    handler
    cmd("xinfo",          -2,  NONE,             A.NONE,   None,                   None,
        "Groups the stream introspection subcommands.", group="stream", since="5.0.0",
        complexity="Depends on subcommand."),
    cmd("xinfo|stream",   -3,  READONLY,         A.STREAM, key_at(2, RO | ACCESS),  xinfo_stream,
        "Describes a stream: size, IDs, edge entries, and with FULL its groups.", group="stream", since="5.0.0",
        syntax="key [FULL [COUNT count]]"),
    cmd("xinfo|help",      2,  LOADING | STALE,  A.STREAM, None,                   xinfo_help,
        "Explains the XINFO subcommands.", group="stream",
        since="5.0.0"),
)
