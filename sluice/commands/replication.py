"""WAIT and WAITAOF, as a Redis master with no replica answers them.

Sluice has no replication (``server/replication.py``): no replica ever acknowledges, so

* ``WAIT numreplicas timeout`` answers 0 at once when ``numreplicas <= 0``, else blocks
  until the timeout (0: forever) and answers 0; CLIENT UNBLOCK ends it as a timeout (0) or
  with the UNBLOCKED error;
* ``WAITAOF numlocal numreplicas timeout`` answers ``[local, 0]``, where ``local`` says
  whether the AOF is fsynced past this connection's last write (``ctx.woff``); it blocks
  until that fsync when ``numlocal`` is 1 and until the timeout when ``numreplicas > 0``.
  ``numlocal`` with ``appendonly no`` is Redis's error, also for a client already blocked
  when the AOF is switched off.

Inside MULTI and scripts neither blocks (Redis's CLIENT_DENY_BLOCKING): they answer what
they would at once. Mirrors ``waitCommand`` / ``waitaofCommand`` (replication.c), argument
parsing and checks in the same order.
"""

from __future__ import annotations

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    LIST_COUNT_NOT_POSITIVE,
    WAITAOF_APPENDONLY_OFF,
    WAITAOF_NUMLOCAL_RANGE,
    CommandError,
)
from .spec import BLOCKING, A, cmd
from .stream_common import parse_block_timeout

_WAIT_TIPS = ("request_policy:all_shards", "response_policy:agg_min")


def wait(ctx: Context, args: Args) -> Reply:
    numreplicas = parse_int(args.next())
    timeout_ms = parse_block_timeout(args.next(), ctx.now_ms())
    if numreplicas <= 0 or ctx.in_exec:  # acknowledged by 0 replicas, always
        return 0
    return ctx.server.repl.block_for_replication(ctx, timeout_ms)


def waitaof(ctx: Context, args: Args) -> Reply:
    numlocal = parse_int(args.next())
    if not 0 <= numlocal <= 1:
        raise CommandError(WAITAOF_NUMLOCAL_RANGE)
    numreplicas = parse_int(args.next(), LIST_COUNT_NOT_POSITIVE)  # (its one message)
    if numreplicas < 0:
        raise CommandError(LIST_COUNT_NOT_POSITIVE)
    timeout_ms = parse_block_timeout(args.next(), ctx.now_ms())
    server = ctx.server
    if numlocal and server.aof is None:
        raise CommandError(WAITAOF_APPENDONLY_OFF)
    local = int(server.repl.fsynced_reploff >= ctx.woff)
    if (numreplicas == 0 and local >= numlocal) or ctx.in_exec:
        return [local, 0]
    return server.repl.block_for_aof_fsync(ctx, timeout_ms, numlocal, numreplicas)


COMMANDS: tuple[Command, ...] = (
    #   name      arity  flags     acl           keys  handler
    cmd("wait",      3,  BLOCKING, A.CONNECTION, None, wait,
        "Blocks until the asynchronous replication of all preceding write commands sent by "
        "the connection is completed.", group="generic", since="3.0.0", complexity="O(1)",
        syntax="numreplicas timeout", tips=_WAIT_TIPS),
    cmd("waitaof",   4,  BLOCKING, A.CONNECTION, None, waitaof,
        "Blocks until all of the preceding write commands sent by the connection are written "
        "to the append-only file of the master and/or replicas.", group="generic",
        since="7.2.0", complexity="O(1)", syntax="numlocal numreplicas timeout",
        tips=_WAIT_TIPS),
)
