"""Server commands: FLUSHDB, FLUSHALL, DBSIZE, TIME.

Mirrors Redis's ``flushdbCommand`` / ``flushallCommand`` (db.c) and ``timeCommand`` (server.c).
A flush counts the keys it removed as changes and is always logged to the AOF, even when
there was nothing to remove (Redis forces its propagation). FLUSHALL also stops a snapshot
being written (it holds the old data) and, with save points configured, writes the empty
snapshot at once, so that a crash does not bring the data back (``flushAllDataAndResetRDB``).
"""

from __future__ import annotations

import time

from sluice.protocol import OK

from .args import Args
from .context import Command, Context, Reply
from .errors import SYNTAX, CommandError
from .spec import FAST, LOADING, READONLY, STALE, WRITE, A, cmd


def _flush_mode(ctx: Context, args: Args) -> bool:
    """Whether Redis would free the flushed keys in the background (and count them in INFO
    lazyfreed_objects): ASYNC (or lazyfree-lazy-user-flush), or a SYNC one that Redis 7.4+
    runs as a blocking ASYNC, which it does for a client that may block (not in MULTI or a
    script)."""
    mode = b""
    if args:
        mode = args.next_upper()
        if mode not in (b"ASYNC", b"SYNC") or args:
            raise CommandError(SYNTAX)
    if mode == b"ASYNC" or (not mode and ctx.server.config.lazyfree_lazy_user_flush):
        return True
    return not ctx.in_exec and not ctx.is_script  # (a script's client may not block either)


def flushdb(ctx: Context, args: Args) -> Reply:
    lazy = _flush_mode(ctx, args)
    removed = ctx.server.flush_db(ctx.db)
    if lazy:
        ctx.server.stats["lazyfreed_objects"] += removed
    _always_logged(ctx)
    return OK


def flushall(ctx: Context, args: Args) -> Reply:
    lazy = _flush_mode(ctx, args)
    server = ctx.server
    removed = 0
    for db in server.keyspace.dbs:
        removed += server.flush_db(db, invalidate=False)
    server.tracking.invalidate_all()  # one null for all the databases (signalFlushedDb(-1))
    if lazy:
        server.stats["lazyfreed_objects"] += removed
    if server.persistence is not None:
        server.persistence.after_flushall()
    _always_logged(ctx)
    return OK


def _always_logged(ctx: Context) -> None:
    """Log the command to the AOF whatever the change count says (after FLUSHALL's snapshot
    it is back to 0); the handler has logged it, so dispatch does not again."""
    aof = ctx.server.aof
    if aof is not None:
        aof.feed(ctx.db.id, [ctx.argv])
        ctx.rewrite_argv()


def dbsize(ctx: Context, args: Args) -> Reply:
    return len(ctx.db)


def time_(ctx: Context, args: Args) -> Reply:
    # Wall time, or the time a running script started (the clock is frozen during a script,
    # so TIME repeats itself inside one, as Redis's cached command time).
    frozen = ctx.server.keyspace.clock.frozen_us
    now = time.time_ns() // 1000 if frozen is None else frozen
    return [b"%d" % (now // 1_000_000), b"%d" % (now % 1_000_000)]


COMMANDS: tuple[Command, ...] = (
    #   name       arity  flags                   acl                       keys  handler
    cmd("flushdb",   -1,  WRITE,                  A.KEYSPACE | A.DANGEROUS, None, flushdb,
        "Removes all keys from the current database.", group="server",
        complexity="O(N) where N is the number of keys in the selected database",
        syntax="[ASYNC | SYNC]"),
    cmd("flushall",  -1,  WRITE,                  A.KEYSPACE | A.DANGEROUS, None, flushall,
        "Removes all keys from all databases.", group="server",
        complexity="O(N) where N is the total number of keys in all databases",
        syntax="[ASYNC | SYNC]"),
    cmd("dbsize",     1,  READONLY | FAST,        A.KEYSPACE,               None, dbsize,
        "Returns the number of keys in the database.", group="server"),
    cmd("time",       1,  LOADING | STALE | FAST, A.NONE,                   None, time_,
        "Returns the server time.", group="server", since="2.6.0"),
)
