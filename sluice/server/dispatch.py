"""The one choke point every command passes through (Redis's ``processCommand`` + ``call``).

``process_command`` runs the checks in Redis's order (lookup, arity, auth, ACL, MULTI queueing)
and writes the reply; ``call`` executes a handler and keeps the books (command stats, error
stats, slowlog, dirty counter, AOF propagation, MONITOR). EXEC and re-run blocked commands use
``call`` directly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice.commands.args import Args
from sluice.commands.cmdlatency import FAST, record_slow
from sluice.commands.context import Command, Reply
from sluice.commands.errors import (
    EXECABORT,
    NOAUTH,
    NOREPLICAS,
    OOM,
    CommandError,
    pubsub_context,
    unknown_command,
    unknown_subcommand,
    wrong_arity,
)
from sluice.commands.spec import F
from sluice.protocol import NULL_ARRAY, QUEUED, ErrorReply, Push, Replies
from sluice.protocol.encoder import ENCODERS, encode_other
from sluice.scripting.run import PROPAGATE_AOF
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.stream_errors import StreamError

from .client import BLOCKED, REPLY_ON, REPLY_SKIP, REPLY_SKIP_NEXT, Blocked, Client
from .limits import FLUSH_CHUNK
from .memory import EVICT_FAIL
from .security import check_protected_command
from .tracking import BCAST, CACHING
from .tracking import ON as TRACKING_ON

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")
_perf_ns = time.perf_counter_ns
# Commands that run at once inside MULTI instead of being queued.
_MULTI_IMMEDIATE = frozenset(("exec", "discard", "multi", "watch", "quit", "reset"))
# What a RESP2 connection with subscriptions may still run (its replies are pushes).
_PUBSUB_CONTEXT = frozenset(("ping", "subscribe", "ssubscribe", "psubscribe", "unsubscribe",
                             "sunsubscribe", "punsubscribe", "quit", "reset"))


def lookup(table: dict[bytes, Command], argv: list[bytes]) -> Command | CommandError:
    """The table entry for ``argv`` (subcommands resolved), or the error to reply."""
    cmd = table.get(argv[0])
    if cmd is None:
        cmd = table.get(argv[0].lower())
        if cmd is None:
            return unknown_command(argv)
    if cmd.subcommands and len(argv) >= 2:
        sub = cmd.subcommands.get(argv[1].lower())
        if sub is None:
            return unknown_subcommand(argv[1], cmd.name)
        cmd = sub
    arity = cmd.arity
    n = len(argv)
    if (arity > 0 and n != arity) or n < -arity:
        cmd.rejected_calls += 1  # INFO commandstats counts arity errors as rejected calls
        return wrong_arity(cmd.name)
    return cmd


def is_plain(cmd: Command) -> bool:
    """A command that cannot change how this connection's next command is dispatched (auth,
    ACL, MULTI, subscriptions, CLIENT REPLY or PAUSE ...): ``run_batch`` may run it without
    ``process_command``'s checks while they would all pass. It may block (BLPOP, XREADGROUP):
    the batch then stops, as after the full path."""
    return (not cmd.subcommands and not cmd.flags & _NOT_PLAIN
            and cmd.name not in _MULTI_IMMEDIATE)


_NOT_PLAIN = F.PROTECTED | F.NO_AUTH | F.PUBSUB | F.ADMIN | F.NO_MULTI
_NO_COMMANDS: dict[bytes, Command] = {}


# Read-only script runners: the keys their scripts read are tracked, not the keys they name
# (Redis's call(): "for read-only scripts, don't process the script, only the commands").
_RO_SCRIPTS = frozenset(("eval_ro", "evalsha_ro", "fcall_ro"))


def _checks_pass(server: Server, client: Client) -> bool:
    """Would ``process_command``'s checks pass for any plain command this client sends?
    Only a command that is not plain (or another client's) can change the answer."""
    return (client.authenticated and server.acl is None and client.multi is None
            and client.reply_mode == REPLY_ON and client.kind == "normal"
            and not server.pause.mode and not server.script_busy and not client.tracking
            and not client.no_touch and not server.config.maxmemory_clients
            and not server.config.min_replicas_to_write
            and server.hotkeys_tracking is None)


def run_batch(server: Server, client: Client, batch: list[list[bytes]]) -> list[list[bytes]]:
    """Run a batch of pipelined requests in order (Redis's ``processInputBuffer``).

    Returns the requests left when the client had to stop: it blocked, its command was held
    by CLIENT PAUSE, it is closing, or its output must drain first.

    Most requests are plain commands (``is_plain``) from a client in the ordinary state; for
    those every check of ``process_command`` is known to pass, so they go straight to
    ``call`` and their replies into the output buffer. That saves about a fifth of the cost
    of a simple command. Anything else takes the full path, after which the state is
    looked at again.
    """
    plain = server.plain_names if _checks_pass(server, client) else _NO_COMMANDS
    blocking = server.blocking
    access = server.keyspace.access  # lookups count (INFO keyspace_hits) per command
    memory = server.memory
    evicting = server.config.maxmemory  # each command first checks the memory limit
    args = client.args  # the plain commands' cursor: none keeps it past its call
    client.queue_write()
    ran = 0
    start = _perf_ns()
    for argv in batch:
        ran += 1
        cmd = plain.get(argv[0])
        if evicting and cmd is not None and (cmd.get_flags is not None or (
                memory.over() and memory.perform_evictions() == EVICT_FAIL
                and cmd.flags & F.DENYOOM)):
            # over maxmemory with nothing to evict: the full path says -OOM (and scripts,
            # whose own flags say whether they may run, always take it then)
            cmd = None
        if cmd is not None and server.disk_error is None and (
                len(argv) == cmd.arity or 0 > cmd.arity >= -len(argv)):
            # ``call``, with one clock reading per command: a command's time runs from the
            # end of the one before it to the end of encoding its own reply (Redis's also
            # includes building the reply).
            client.argv = argv
            client.cmd = cmd
            client.propagate_argv = None
            dirty = server.dirty
            args.argv = argv
            args.pos = cmd.first_arg
            access.counting = cmd.counts_lookups
            try:
                reply = cmd.handler(client, args)  # type: ignore[misc]  # plain rows have one
            except Exception as e:  # noqa: BLE001 - a bug must never take the server down
                reply = handler_error(server, cmd, e)
            _ENCODERS.get(type(reply), encode_other)(client.out, reply, client.resp3)
            end = _perf_ns()
            duration = (end - start) // 1000
            start = end
            if reply is not BLOCKED:  # counted once, when it is done (see call)
                cmd.calls += 1
                cmd.usec += duration
                if duration < FAST:
                    cmd.hist[duration] += 1
                else:
                    record_slow(cmd.hist_slow, duration)
                client.commands_processed += 1
            else:
                client.blocked_usec += duration
            if (type(reply) is ErrorReply or duration >= server.slow_threshold_us
                    or server.monitors or (server.aof is not None
                                           and (server.dirty > dirty or client.propagate_argv))):
                after_call(server, client, cmd, argv, reply, duration, dirty)
            if blocking.ready_keys:
                blocking.handle_clients_blocked_on_keys()
                start = _perf_ns()
            if len(client.out) <= FLUSH_CHUNK and reply is not BLOCKED:
                continue
        else:
            process_command(server, client, argv)
            if client.reply_mode >= REPLY_SKIP:
                # CLIENT REPLY SKIP: the command after it gets no reply, then replies resume.
                client.reply_mode = REPLY_SKIP if client.reply_mode == REPLY_SKIP_NEXT \
                    else REPLY_ON
            plain = server.plain_names if _checks_pass(server, client) else _NO_COMMANDS
            evicting = server.config.maxmemory
        if len(client.out) > FLUSH_CHUNK:
            client.flush(final=False)  # a client not reading gets paused (limits.py)
            client.queue_write()
        start = _perf_ns()  # what ran since the last command is none of the next one's time
        if (client.bstate is not None or client.postponed is not None or client.closing
                or client.paused_reading or client.closed):
            return batch[ran:]
    return []


def _no_reply(out: bytearray, reply: object, resp3: bool) -> None:
    """A command that blocked has no reply yet."""


# The reply encoders, and nothing for BLOCKED (the short path encodes without looking).
_ENCODERS: dict[type, Callable[[bytearray, Any, bool], None]] = {**ENCODERS, Blocked: _no_reply}


def process_command(server: Server, client: Client, argv: list[bytes]) -> None:
    """Run one request from a client and queue its reply."""
    previous = server.current_client
    server.current_client = client
    try:
        _process_command(server, client, argv)
    finally:
        server.current_client = previous


def _process_command(server: Server, client: Client, argv: list[bytes]) -> None:
    # Fast path: the name as sent (clients send "SET" or "set"), no subcommand.
    cmd = server.command_names.get(argv[0])
    if cmd is None or cmd.subcommands:
        found = lookup(server.table, argv)
        if type(found) is CommandError:
            if argv[0].lower() in _CROSS_PROTOCOL:
                security_warning(client)
                return
            reject(server, client, found, None)
            return
        cmd = found  # type: ignore[assignment]
    else:
        arity = cmd.arity
        if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            reject(server, client, wrong_arity(cmd.name), cmd)
            return
    assert cmd is not None
    if cmd.flags & F.PROTECTED:
        # DEBUG (rows flagged PROTECTED) needs enable-debug-command; after arity, before AUTH.
        denied = check_protected_command(server, client, cmd)
        if denied is not None:
            reject(server, client, denied, cmd)
            return
    if not client.authenticated and not cmd.flags & F.NO_AUTH:
        reject(server, client, CommandError(NOAUTH), cmd)
        return
    acl = server.acl
    if acl is not None:
        denied = acl.check(client, cmd, argv)
        if denied is not None:
            reject(server, client, denied, cmd)
            return
    if server.config.maxmemory_clients:
        server.memory.evict_clients()  # before the keys (Redis's processCommand)
        if client.closed:
            return
    flags = cmd.flags
    if cmd.get_flags is not None and (server.script_busy or server.disk_error is not None
                                      or server.pause.mode or server.config.maxmemory
                                      or server.config.min_replicas_to_write):
        flags = cmd.get_flags(client, argv, flags)  # EVAL*/FCALL*: the script's own flags
    if server.script_busy and not flags & F.ALLOW_BUSY:
        busy = server.scripting.busy_error()
        if busy is not None:
            # A script past busy-reply-threshold runs (BusyPump serves us from its hook):
            # BUSY, through reject() so an EXEC is aborted with it (EXECABORT ... BUSY)
            reject(server, client, CommandError(busy), cmd)
            return
    if server.config.maxmemory and _out_of_memory(server, client, cmd, argv, flags):
        reject(server, client, CommandError(OOM), cmd)
        return
    if server.tracking.count:
        # Keep the tracking table within tracking-table-max-keys before each command, as
        # Redis's processCommand (the cron does too, for clients on the short path, which
        # cannot add keys to it: their tracking is off).
        server.tracking.limit(server.config.tracking_table_max_keys)
    if server.disk_error is not None and (flags & F.WRITE or cmd.name == "ping"):
        # Redis's writeCommandsDeniedByDiskError: refuse writes (and PING) until the disk heals
        reject(server, client, CommandError(server.disk_error), cmd)
        return
    if server.config.min_replicas_to_write and not server.repl.good_replicas_ok() and (
            flags & F.WRITE or (cmd.name == "exec" and client.multi is not None
                                and any(c.flags & F.WRITE for c, _ in client.multi))):
        # min-replicas-to-write with no good replica (Redis's checkGoodReplicasStatus): a
        # write, or EXEC of a transaction holding one, is refused (in MULTI: EXECABORT)
        reject(server, client, CommandError(NOREPLICAS), cmd)
        return
    if client.kind == "pubsub" and not client.resp3 and cmd.name not in _PUBSUB_CONTEXT:
        reject(server, client, pubsub_context(cmd.name), cmd)  # RESP3 connections may run any
        return
    if server.pause.mode and server.pause.must_hold(client, cmd, flags):
        server.pause.hold(client, argv)  # CLIENT PAUSE: run when the pause ends
        return
    if client.multi is not None and cmd.name not in _MULTI_IMMEDIATE:  # by table name: renames
        if cmd.flags & F.NO_MULTI:
            reject(server, client, CommandError("ERR Command not allowed inside a transaction"), cmd)
            return
        client.multi.append((cmd, argv))
        client.add_reply(QUEUED)
        return
    no_touch = client.no_touch
    if no_touch:  # CLIENT NO-TOUCH: reads leave access times alone, but TOUCH
        server.keyspace.access.set_no_touch(cmd.name != "touch")
    reply = call(server, client, cmd, argv)
    if no_touch:  # (as it was before the command: CLIENT NO-TOUCH OFF turns it off)
        server.keyspace.access.set_no_touch(False)
    if reply is not BLOCKED:
        client.add_reply(reply)
    if client.deferred_pushes is not None:  # it published to itself: after the reply
        for frame in client.deferred_pushes:
            client.add_raw(frame)
        client.deferred_pushes = None
    tracking = server.tracking
    if tracking.pending:  # its own cached keys it changed: after the reply and pushes
        tracking.flush_pending(client)
    if client.tracking & CACHING and client.multi is None and (
            cmd.parent is None or cmd.parent.name != "client"):
        client.tracking &= ~CACHING  # CLIENT CACHING applies to the next command only
    if server.blocking.ready_keys:
        # Serve the keys this command made ready before the client's next command runs, as
        # Redis's processCommand does: LPUSH k v; LLEN k in one pipeline sees v already taken.
        server.blocking.handle_clients_blocked_on_keys()


def _out_of_memory(server: Server, client: Client, cmd: Command, argv: list[bytes],
                   flags: int) -> bool:
    """Over maxmemory with nothing left to evict, for a command that may grow the dataset
    (flagged denyoom, or EXEC of a transaction holding one): Redis's processCommand. The
    command's arguments count: the client holds them (Redis's argv_len_sum)."""
    memory = server.memory
    extra = sum(map(len, argv)) if len(argv) < 64 else sum(map(len, argv[:64])) * len(argv) // 64
    server.pre_command_oom = False  # what a script's first write is judged by (scriptVerifyOOM)
    if not memory.over(extra):
        return False
    oom = memory.perform_evictions(extra) == EVICT_FAIL
    if server.tracking.pending:  # keys evicted before the command: invalidated before it
        server.tracking.flush_pending(client)
    if not oom:
        return False
    server.pre_command_oom = True
    if flags & F.DENYOOM:  # (a script's declared flags decide for EVAL and FCALL)
        return True
    return cmd.name == "exec" and any(c.flags & F.DENYOOM for c, _ in client.multi or ())


# Commands that mean an HTTP request reached us (a browser tricked into talking to the server).
_CROSS_PROTOCOL = frozenset((b"post", b"host:"))
_last_security_log = 0.0


def security_warning(client: Client) -> None:
    """Close a connection that sent ``POST`` or ``Host:`` without a reply, as Redis does."""
    global _last_security_log
    now = time.monotonic()
    if now - _last_security_log > 60:  # Redis logs it at most once a minute
        _last_security_log = now
        log.warning("Possible SECURITY ATTACK detected. It looks like somebody is sending "
                    "POST or Host: commands to Sluice. This is likely due to an attacker "
                    "attempting to use Cross Protocol Scripting to compromise your server. "
                    "Connection aborted.")
    client.out = bytearray()  # replies to earlier pipelined commands are dropped as well
    client.closing = True
    client.server.close_client(client)


def reject(server: Server, client: Client, err: CommandError, cmd: Command | None) -> None:
    """A command refused before it ran: reply, count, and poison a pending MULTI."""
    if client.multi is not None:
        client.multi_error = True
    if cmd is not None:
        cmd.rejected_calls += 1
        if cmd.name == "exec":
            # Redis's rejectCommand: a refused EXEC discards the transaction (if any) and
            # says why, e.g. "EXECABORT ... because of: wrong number of arguments for ..."
            client.multi = None
            client.multi_error = False
            server.unwatch_all(client)
            err = CommandError(b"EXECABORT Transaction discarded because of: "
                               + err.message.removeprefix(b"ERR "))
    server.count_error(err.message)
    client.add_reply(err.reply)


def call(server: Server, client: Client, cmd: Command, argv: list[bytes],
         rerun: bool = False) -> Reply:
    """Execute ``cmd``; returns its reply (or ``BLOCKED``). Never raises for command errors.

    ``rerun``: a blocked command run again because a key it waits on was written; MONITOR
    has already seen it (Redis feeds monitors when a command first runs, not when it is
    reprocessed)."""
    client.argv = argv
    client.cmd = cmd
    client.propagate_argv = None
    dirty = server.dirty
    server.keyspace.access.counting = cmd.counts_lookups
    start = _perf_ns()
    if client.is_script:  # a script's command: its client's own cursor (none is nested)
        args = client.args
        args.argv = argv
        args.pos = cmd.first_arg
    else:
        args = Args(argv, cmd.first_arg)
    try:
        reply = cmd.handler(client, args)  # type: ignore[misc]  # containers never run
    except Exception as e:  # noqa: BLE001 - a bug must never take the server down
        reply = handler_error(server, cmd, e)
    duration = (_perf_ns() - start) // 1000
    if server.tracking.count and cmd.flags & F.READONLY:
        remember_reads(server, cmd, argv)
    if reply is not BLOCKED:
        # A command that blocks is counted once, when it is done: by the re-run that serves
        # it, or on timeout or CLIENT UNBLOCK (BlockingManager.unblock_client). The time of
        # its runs is added up and counted then too (commandstats, the slow log), as Redis's
        # c->duration; a re-run refused (ACL, MISCONF) drops it (rejected_calls counts it).
        cmd.calls += 1
        if client.is_script:  # a script's commands count for the client running it (tot-cmds)
            run = server.scripting.running
            caller = run.caller if run is not None else None
            (caller if isinstance(caller, Client) else client).commands_processed += 1
        else:
            client.commands_processed += 1  # EXEC's commands too, as Redis's call() counts them
        if client.blocked_usec:
            duration += client.blocked_usec
            client.blocked_usec = 0
        cmd.usec += duration
        if duration < FAST:
            cmd.hist[duration] += 1
        else:
            record_slow(cmd.hist_slow, duration)
        if server.hotkeys_tracking is not None and not rerun:  # HOTKEYS (one test without)
            # (a served blocked command is not counted: Redis re-runs it nested)
            server.hotkeys.command(client, cmd, argv, reply, duration)
    else:
        client.blocked_usec += duration
    if (type(reply) is ErrorReply or duration >= server.slow_threshold_us
            or (server.monitors and not rerun)
            or (server.aof is not None and (server.dirty > dirty or client.propagate_argv))):
        after_call(server, client, cmd, argv, reply, duration, dirty, monitor=not rerun)
    return reply


def script_call(server: Server, client: Client, cmd: Command, argv: list[bytes]) -> Reply:
    """``call`` for a command a script runs (``redis.call``; it is ``Server.call``).

    The same books as ``call``, less what only a client's own commands need: a script client
    never blocks (it is ``in_exec``: a blocking command answers as on timeout), so there is no
    ``BLOCKED`` reply, blocked time or re-run; its cursor is its own ``Args`` (no script runs
    inside another). One Python frame from ``runner.Scripting.script_call``: a bound method,
    not a ``partial``, so the interpreter inlines the call."""
    client.argv = argv
    client.cmd = cmd
    client.propagate_argv = None
    dirty = server.dirty
    access = server.keyspace.access
    access.counting = cmd.counts_lookups
    args = client.args
    args.argv = argv
    args.pos = cmd.first_arg
    touch = access.no_touch and cmd.name == "touch"
    if touch:  # CLIENT NO-TOUCH spares reads, not TOUCH, also from a script (executing_client)
        access.set_no_touch(False)
    start = _perf_ns()
    try:
        reply = cmd.handler(client, args)  # type: ignore[misc]  # containers never run
    except Exception as e:  # noqa: BLE001 - a bug must never take the server down
        reply = handler_error(server, cmd, e)
    duration = (_perf_ns() - start) // 1000
    if touch:
        access.set_no_touch(True)
    if server.tracking.count and cmd.flags & F.READONLY:
        remember_reads(server, cmd, argv)  # a script's reads are its caller's
    cmd.usec += duration
    cmd.calls += 1
    server.script_support.command_usec += duration
    run = server.scripting.running  # counted for the client running the script (tot-cmds)
    caller = run.caller if run is not None else None
    (caller if isinstance(caller, Client) else client).commands_processed += 1
    if server.hotkeys_tracking is not None:  # counted inside EXEC only
        server.hotkeys.script_command(client, cmd, argv, reply, duration)
    if (type(reply) is ErrorReply or duration >= server.slow_threshold_us or server.monitors
            or (server.aof is not None and (server.dirty > dirty or client.propagate_argv))):
        after_call(server, client, cmd, argv, reply, duration, dirty)
    return reply


def remember_reads(server: Server, cmd: Command, argv: list[bytes]) -> None:
    """The keys a read command read are the tracking client's to be told about: the client
    that sent it, or the one whose transaction or script runs it (Redis's current_client).
    EVAL_RO and friends track only what their scripts read, not the keys they name."""
    if cmd.name in _RO_SCRIPTS:
        return
    tracker = server.current_client
    if tracker is not None and tracker.tracking & TRACKING_ON and not tracker.tracking & BCAST:
        server.tracking.remember_keys(tracker, cmd, argv)


def handler_error(server: Server, cmd: Command, e: Exception) -> ErrorReply:
    """The reply to a handler that raised: its error, or ours for a bug (never a crash)."""
    if isinstance(e, CommandError):
        return e.reply
    if isinstance(e, (WrongTypeError, StreamError)):  # the storage layer's, in Redis's words
        return ErrorReply(str(e).encode())
    return server.internal_error(cmd, e)


def after_call(server: Server, client: Client, cmd: Command, argv: list[bytes], reply: Reply,
               duration: int, dirty: int, monitor: bool = True) -> None:
    """The books a command keeps only sometimes: error stats, SLOWLOG and LATENCY, the AOF,
    MONITOR. The caller has already seen that at least one of them applies."""
    if type(reply) is ErrorReply:
        cmd.failed_calls += 1
        server.count_error(reply)
    if duration >= server.slow_threshold_us and reply is not BLOCKED:
        server.slow_command(client, cmd, argv, duration)
    # A change (SAVE resets the counter: not one), or effects a handler logs even when its
    # command changed nothing (Redis's alsoPropagate: a read's HDEL of an expired field).
    if server.aof is not None and (server.dirty > dirty or client.propagate_argv):
        argvs = client.propagate_argv
        if argvs is None:
            argvs = [argv]
        if client.is_script:  # a script's write: logged when the script ends
            run = server.scripting.run  # (redis.set_repl decides)
            if argvs and run is not None and run.repl & PROPAGATE_AOF:
                run.effects.extend((client.db.id, a) for a in argvs)
        elif len(argvs) > 1 and not client.in_exec:
            # Several effects of one command are one transaction, as Redis 7+ propagates
            # them (propagatePendingCommands): SPOP's SREM batches, XREADGROUP's XCLAIMs,
            # a hash's expired fields with the write that found them.
            server.aof.begin_multi(client.db.id)
            server.aof.feed(client.db.id, argvs)
            server.aof.end_multi()
            client.woff = server.repl.master_repl_offset  # what its WAITAOF waits for
        elif argvs:  # [] means the handler logged its effects itself (EXEC)
            server.aof.feed(client.db.id, argvs)
            if not client.in_exec:  # (EXEC's end sets it: Redis propagates EXEC's writes
                client.woff = server.repl.master_repl_offset  # when the transaction ends)
    if monitor and server.monitors and not cmd.flags & (F.SKIP_MONITOR | F.ADMIN):
        server.feed_monitors(client, argv)


def exec_queued(server: Server, client: Client) -> Reply:
    """EXEC: run the queued commands, or abort (queue errors) / fail (WATCH)."""
    queued = client.multi or []
    error = client.multi_error
    dirty_cas = client.dirty_cas or server.watched_expired(client)
    client.multi = None
    client.multi_error = False
    server.unwatch_all(client)
    if error:
        return ErrorReply(EXECABORT.encode())
    if dirty_cas:
        return NULL_ARRAY  # a WATCHed key changed
    replies: list[Reply] = []
    client.in_exec = True
    # The transaction is one execution unit: its commands see the time it started (Redis
    # 7's command time snapshot), so a key set to expire in 1 ms is still there for the
    # next queued command, and TIME repeats itself. A script inside keeps this time.
    clock = server.keyspace.clock
    froze = clock.frozen_us is None
    if froze:
        clock.freeze()
    # After the transaction the client's last command is EXEC again (CLIENT LIST's cmd=),
    # as Redis's execCommand restores it: ``call`` sets it for each queued command.
    exec_cmd, exec_argv = client.cmd, client.argv
    client.exec_cmd = exec_cmd
    offset = server.repl.master_repl_offset
    hotkeys = server.hotkeys
    synced = server.hotkeys_tracking is not None  # HOTKEYS' bytes of this EXEC are current
    if synced:  # its request and reply header count for each of its commands
        hotkeys.begin_exec(exec_argv, len(queued), replies, client.resp3)
    try:
        if server.aof is not None and any(c.flags & F.WRITE for c, _ in queued):
            server.aof.begin_multi(client.db.id)
        for cmd, argv in queued:
            if server.acl is not None:
                denied = server.acl.check(client, cmd, argv)
                if denied is not None:
                    replies.append(denied.reply)
                    if server.hotkeys_tracking is not None:
                        hotkeys.exec_reply(denied.reply, client.resp3)
                    continue
            if client.no_touch and cmd.name == "touch":  # a queued TOUCH touches
                server.keyspace.access.set_no_touch(False)
                replies.append(call(server, client, cmd, argv))
                server.keyspace.access.set_no_touch(True)
            else:
                replies.append(call(server, client, cmd, argv))
            if server.hotkeys_tracking is None:
                synced = False
            elif not synced:  # HOTKEYS START inside the transaction: count what came before
                hotkeys.begin_exec(exec_argv, len(queued), replies, client.resp3)
                synced = True
        if server.aof is not None:
            server.aof.end_multi()
            if server.repl.master_repl_offset != offset:  # its WAITAOF waits for the EXEC
                client.woff = server.repl.master_repl_offset
    finally:
        if froze:
            clock.thaw()
        client.in_exec = False
        client.exec_cmd = None
        client.cmd, client.argv = exec_cmd, exec_argv
    if client.reply_mode != REPLY_ON:
        # CLIENT REPLY OFF drops EXEC's reply, but not the (UN)SUBSCRIBE confirmations in
        # it: Redis writes them as pushes (CLIENT_PUSHING) while the transaction runs.
        for reply in replies:
            if type(reply) is Push or type(reply) is Replies:
                client.add_reply(reply)
    return replies
