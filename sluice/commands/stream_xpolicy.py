"""SLUICE.XPOLICY: Sluice's stream policies, dead letters and retention by age (opt-in).

Role: set, show and clear the policies the storage layer keeps on a stream
(``Stream.retention``) and on its groups (``ConsumerGroup.dead_letter``). The name is
namespaced the way a Redis module names its commands, so no future Redis command can collide
with it; nothing changes for a client that never sends it.

- ``SLUICE.XPOLICY DEADLETTER key group dlq-key MAXDELIVERIES n``: after ``n`` deliveries
  (XREADGROUP history reads and CLAIM, XCLAIM, XAUTOCLAIM count, as Redis counts them; a new
  entry's first XREADGROUP ``>`` is delivery 1), the next delivery attempt instead copies the
  entry to ``dlq-key`` with its origin and acknowledges it in ``group``
  (``stream_deadletter.py``); ``XNACK ... FATAL`` does so at once.
- ``SLUICE.XPOLICY RETENTION key MAXAGE ms [KEEPREF | DELREF | ACKED]``: entries whose ID time
  is older than ``now - ms`` are trimmed in the background with bounded work per cron tick,
  each trim logged as the ``XTRIM key MINID <id> <policy>`` it was (``server/retention.py``).
- ``SLUICE.XPOLICY CLEAR key [group]``: drop the retention policy (no group) or the group's
  dead-letter policy; 1 if there was one, else 0.
- ``SLUICE.XPOLICY GET key``: ``retention`` (a map, or null) and ``dead-letter`` (one map per
  group with a policy, in group-name order).

Invariants: the stream (and the group) must exist: policies live in the value, so they go
with the key (RENAME, MOVE, COPY, DEL) as its groups do, and persist in the AOF (this command,
logged as given, and in a rewrite after the stream's own commands) and in RDB files (an AUX
field Redis ignores, ``storage/stream_policy.py``). They are group metadata for WATCH and
blocked readers: setting one signals nothing, as XGROUP CREATECONSUMER does not.
"""

from __future__ import annotations

from sluice.protocol import OK, Map
from sluice.storage.stream import Retention, Stream
from sluice.storage.stream_group import DeadLetter

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    NOGROUP_KEY_OR_GROUP,
    SYNTAX,
    XPOLICY_MAX_DELIVERIES,
    XPOLICY_MAXAGE,
    XPOLICY_NO_STREAM,
    XPOLICY_SAME_KEY,
    CommandError,
)
from .introspection import help_reply
from .spec import FAST, INSERT, NONE, READONLY, RO, RW, UPDATE, WRITE, A, cmd, key_at
from .stream_common import get_stream, parse_policy
from .stream_groups import group_dirty, lookup_group


def _stream(ctx: Context, key: bytes) -> Stream:
    stream = get_stream(ctx, key)
    if stream is None:
        raise CommandError(XPOLICY_NO_STREAM % key)
    return stream


def xpolicy_deadletter(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    if len(argv) != 7 or argv[5].upper() != b"MAXDELIVERIES":
        raise CommandError(SYNTAX)
    key, name, dl_key = argv[2], argv[3], argv[4]
    n = parse_int(argv[6], XPOLICY_MAX_DELIVERIES)
    if n <= 0:
        raise CommandError(XPOLICY_MAX_DELIVERIES)
    if dl_key == key:
        raise CommandError(XPOLICY_SAME_KEY)
    _, group = lookup_group(ctx, key, name, NOGROUP_KEY_OR_GROUP)
    if ctx.kind != "aof":  # a log replays what was accepted, whatever the key holds now
        get_stream(ctx, dl_key)  # WRONGTYPE now rather than at the first dead letter
    group.dead_letter = DeadLetter(dl_key, n)
    group_dirty(ctx)
    return OK


def xpolicy_retention(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    if len(argv) not in (5, 6) or argv[3].upper() != b"MAXAGE":
        raise CommandError(SYNTAX)
    max_age = parse_int(argv[4], XPOLICY_MAXAGE)
    if max_age <= 0:
        raise CommandError(XPOLICY_MAXAGE)
    policy = parse_policy(argv[5]) if len(argv) == 6 else "KEEPREF"
    if policy is None:
        raise CommandError(SYNTAX)
    stream = _stream(ctx, argv[2])
    stream.retention = Retention(max_age, policy)
    ctx.server.note_stream(ctx.db, argv[2])  # the cron's retention finds it at once
    group_dirty(ctx)
    return OK


def xpolicy_clear(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    if len(argv) == 3:
        stream = _stream(ctx, argv[2])
        had = stream.retention is not None
        stream.retention = None
    elif len(argv) == 4:
        _, group = lookup_group(ctx, argv[2], argv[3], NOGROUP_KEY_OR_GROUP)
        had = group.dead_letter is not None
        group.dead_letter = None
    else:
        raise CommandError(SYNTAX)
    if had:
        group_dirty(ctx)
    return int(had)


def xpolicy_get(ctx: Context, args: Args) -> Reply:
    stream = _stream(ctx, ctx.argv[2])
    ret = stream.retention
    retention = None if ret is None else Map({b"max-age-ms": ret.max_age_ms,
                                              b"policy": ret.policy.encode()})
    dead = []
    for g in stream.groups_in_order():
        dl = g.dead_letter
        if dl is not None:
            dead.append(Map({b"group": g.name, b"stream": dl.key,
                             b"max-deliveries": dl.max_deliveries}))
    return Map({b"retention": retention, b"dead-letter": dead})


_HELP = (
    "DEADLETTER <key> <group> <dlq-key> MAXDELIVERIES <n>",
    "    After <n> deliveries, move an entry of <group> to the stream <dlq-key> (with its",
    "    origin) and acknowledge it; XNACK ... FATAL moves it at once.",
    "RETENTION <key> MAXAGE <ms> [KEEPREF|DELREF|ACKED]",
    "    Trim entries older than <ms> in the background, as XTRIM MINID would.",
    "CLEAR <key> [<group>]",
    "    Remove the retention policy, or the group's dead-letter policy.",
    "GET <key>",
    "    Show the stream's policies.",
)


def xpolicy_help(ctx: Context, args: Args) -> Reply:
    return help_reply("SLUICE.XPOLICY", _HELP)


_G = "stream"
COMMANDS: tuple[Command, ...] = (
    #   name                        arity flags     acl       keys        handler
    cmd("sluice.xpolicy",             -2, NONE,     A.NONE,   None,       None,
        "Sets, shows and clears Sluice's stream policies (dead letters, retention by age).",
        group=_G, since="0.1.0", complexity="Depends on subcommand.", syntax="<subcommand>"),
    cmd("sluice.xpolicy|deadletter",   7, WRITE,    A.STREAM, (key_at(2, RW | UPDATE),
                                                               key_at(4, RW | INSERT)),
        xpolicy_deadletter,
        "Dead-letters a group's entries after a number of deliveries.", group=_G,
        since="0.1.0", syntax="key group dlq-key MAXDELIVERIES count"),
    cmd("sluice.xpolicy|retention",   -5, WRITE,    A.STREAM, key_at(2, RW | UPDATE),
        xpolicy_retention,
        "Trims a stream's entries older than a maximum age, in the background.", group=_G,
        since="0.1.0", syntax="key MAXAGE milliseconds [KEEPREF | DELREF | ACKED]"),
    cmd("sluice.xpolicy|clear",       -3, WRITE,    A.STREAM, key_at(2, RW | UPDATE),
        xpolicy_clear,
        "Removes a stream's retention policy or a group's dead-letter policy.", group=_G,
        since="0.1.0", syntax="key [group]"),
    cmd("sluice.xpolicy|get",          3, READONLY | FAST, A.STREAM, key_at(2, RO),
        xpolicy_get, "Shows a stream's policies.", group=_G, since="0.1.0", syntax="key"),
    cmd("sluice.xpolicy|help",         2, READONLY | FAST, A.STREAM, None, xpolicy_help,
        "Shows helpful text about the different subcommands.", group=_G, since="0.1.0"),
)
