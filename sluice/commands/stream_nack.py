"""XNACK (Redis 8.8): release pending entries back to their group without acknowledging them.

Role: parse ``XNACK key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT
count] [FORCE]`` and let ``ConsumerGroup.nack`` do the work. No 8.8 server is available here:
the behaviour follows the redis.io XNACK page and the design of redis/redis#14797, and the
tests say which documented example each checks.

- The mode is the third argument (an unknown one is "mode must be SILENT, FAIL, or FATAL");
  IDS, RETRYCOUNT and FORCE follow in any order (the IDS block is parsed as XACKDEL's, with
  its errors); every ID is parsed before anything changes.
- SILENT takes one off the delivery count (not below 0), FAIL keeps it, FATAL sets it to
  LLONG_MAX; RETRYCOUNT sets it whatever the mode. FORCE makes an unowned entry (count 0,
  RETRYCOUNT, or LLONG_MAX with FATAL) for an ID that is in the stream but not pending.
- The reply is the number of IDs released; IDs not pending (without FORCE) are not counted.
- A missing key or group is a NOGROUP error, as XCLAIM's (the page does not say; not known).
- Logged as given (XNACK is deterministic: it reads no clock); a change of the group only, so
  no key is signalled (as XACK).
- Dead letters (Sluice, opt-in): with a dead-letter policy on the group, FATAL moves the
  released entries to the dead-letter stream at once (``stream_deadletter.py``), and the log
  is the transaction that did it.
"""

from __future__ import annotations

from sluice.storage.streamid import format_id, parse_strict_id

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    NOGROUP_KEY_OR_GROUP,
    NUMIDS_NOT_POSITIVE,
    SYNTAX,
    XNACK_MODE,
    XNACK_RETRYCOUNT,
    CommandError,
)
from .spec import FAST, RW, UPDATE, WRITE, A, cmd, key_at
from .stream_common import parse_ids_block
from .stream_deadletter import FATAL, dead_letter
from .stream_groups import group_dirty, lookup_group

_MODES = (b"SILENT", b"FAIL", b"FATAL")


def xnack(ctx: Context, args: Args) -> Reply:
    argv = ctx.argv
    key, name = argv[1], argv[2]
    mode = argv[3].upper()
    if mode not in _MODES:
        raise CommandError(XNACK_MODE)
    retrycount = -1
    force = False
    rest: list[bytes] = [argv[0], key, name, mode]  # what parse_ids_block sees
    i = 4
    while i < len(argv):
        opt = argv[i].upper()
        if opt == b"RETRYCOUNT" and i + 1 < len(argv):
            retrycount = parse_int(argv[i + 1], XNACK_RETRYCOUNT)
            if retrycount < 0:
                raise CommandError(XNACK_RETRYCOUNT)
            i += 2
        elif opt == b"FORCE":
            force = True
            i += 1
        elif opt == b"IDS" and i + 1 < len(argv):
            n = parse_int(argv[i + 1], NUMIDS_NOT_POSITIVE)
            if n <= 0:
                raise CommandError(NUMIDS_NOT_POSITIVE)
            take = 2 + n
            rest += argv[i : i + take]
            i += take
        else:
            raise CommandError(SYNTAX)
    _, id_args = parse_ids_block(rest, 4)  # numids checks, "IDS option is required"
    _, group = lookup_group(ctx, key, name, NOGROUP_KEY_OR_GROUP)
    ids = [parse_strict_id(raw) for raw in id_args]
    released = group.nack(ids, mode.decode(), retrycount, force)
    if not released:
        return 0
    group_dirty(ctx, len(released))
    if mode == b"FATAL" and group.dead_letter is not None:
        log: list[list[bytes]] = []
        moved = dead_letter(ctx, key, group, list(dict.fromkeys(released)), FATAL, log)
        if moved:
            rest_ids = [format_id(sid) for sid in dict.fromkeys(released) if sid in group.pel]
            if rest_ids:  # not moved (a dead-letter key of another type): still NACKed
                log.insert(0, [b"XNACK", key, name, b"FATAL", b"IDS", b"%d" % len(rest_ids),
                               *rest_ids])
            ctx.rewrite_argv(*log)
    return len(released)


COMMANDS: tuple[Command, ...] = (
    #   name     arity flags         acl       keys                     handler
    cmd("xnack",   -7, WRITE | FAST, A.STREAM, key_at(1, RW | UPDATE),  xnack,
        "Releases pending messages back to the group's PEL without acknowledging them, making "
        "them available for re-delivery.", group="stream", since="8.8.0",
        complexity="O(1) for each message ID processed.",
        syntax="key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT count] "
               "[FORCE]"),
)
