"""Transaction commands: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

Mirrors Redis's multi.c. The machinery is in the server: ``dispatch.process_command`` queues
commands while ``ctx.multi`` is a list (replying ``+QUEUED``) and marks the transaction for
EXECABORT when a command is refused at queue time; ``dispatch.exec_queued`` runs the queue
(``ctx.server.exec_transaction``);
``Server.watch`` / ``unwatch_all`` (``server/watch.py``) keep the optimistic locks. MULTI,
EXEC, DISCARD and WATCH run at once even inside MULTI, so their own errors are answered here:
as in Redis, a nested MULTI or a WATCH inside MULTI is refused without aborting the
transaction.

EXEC fails with a null array when a watched key was written, flushed, swapped away or expired
since WATCH (a key that was already logically expired when watched does not count once it is
gone, as in Redis 7).
"""

from __future__ import annotations

from sluice.protocol import OK

from .args import Args
from .context import Command, Context, Reply
from .errors import (
    DISCARD_WITHOUT_MULTI,
    EXEC_WITHOUT_MULTI,
    MULTI_NESTED,
    WATCH_IN_MULTI,
    CommandError,
)
from .spec import ALLOW_BUSY, FAST, LOADING, NOSCRIPT, RO, SKIP_SLOWLOG, STALE, A, cmd, key_at


def multi(ctx: Context, args: Args) -> Reply:
    if ctx.multi is not None:
        raise CommandError(MULTI_NESTED)
    ctx.multi = []
    return OK


def exec_(ctx: Context, args: Args) -> Reply:
    if ctx.multi is None:
        raise CommandError(EXEC_WITHOUT_MULTI)
    # The queued commands are logged one by one (inside MULTI/EXEC) as they run: EXEC itself
    # must not be logged again.
    reply = ctx.server.exec_transaction(ctx)
    ctx.rewrite_argv()
    return reply


def discard(ctx: Context, args: Args) -> Reply:
    if ctx.multi is None:
        raise CommandError(DISCARD_WITHOUT_MULTI)
    ctx.multi = None
    ctx.multi_error = False
    ctx.server.unwatch_all(ctx)
    return OK


def watch(ctx: Context, args: Args) -> Reply:
    if ctx.multi is not None:
        raise CommandError(WATCH_IN_MULTI)
    if ctx.dirty_cas:  # already doomed: no point watching more keys
        return OK
    server = ctx.server
    for key in args.rest():
        server.watch(ctx, key)
    return OK


def unwatch(ctx: Context, args: Args) -> Reply:
    ctx.server.unwatch_all(ctx)
    return OK


_TX = NOSCRIPT | LOADING | STALE

COMMANDS: tuple[Command, ...] = (
    #   name       arity  flags                         acl            keys                   handler
    cmd("multi",      1,  _TX | FAST | ALLOW_BUSY,      A.TRANSACTION, None,                  multi,
        "Starts a transaction.", group="transactions", since="1.2.0", complexity="O(1)"),
    cmd("exec",       1,  _TX | SKIP_SLOWLOG,           A.TRANSACTION, None,                  exec_,
        "Executes all commands in a transaction.", group="transactions", since="1.2.0",
        complexity="Depends on commands in the transaction"),
    cmd("discard",    1,  _TX | FAST | ALLOW_BUSY,      A.TRANSACTION, None,                  discard,
        "Discards a transaction.", group="transactions", since="2.0.0",
        complexity="O(N), when N is the number of queued commands"),
    cmd("watch",     -2,  _TX | FAST | ALLOW_BUSY,      A.TRANSACTION, key_at(1, RO, last=-1), watch,
        "Monitors changes to keys to determine the execution of a transaction.",
        group="transactions", since="2.2.0", complexity="O(1) for every key.",
        syntax="key [key ...]"),
    cmd("unwatch",    1,  _TX | FAST | ALLOW_BUSY,      A.TRANSACTION, None,                  unwatch,
        "Forgets about watched keys of a transaction.", group="transactions", since="2.2.0",
        complexity="O(1)"),
)
