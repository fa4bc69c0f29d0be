"""Per-connection client state; also the ``ctx`` every command handler receives.

``Client`` implements ``commands.context.Context``, the protocol that names what a handler
may use (checked by mypy: see ``_implements_context`` below); the rest (the transport, the
reader, the output buffer, flow control) is the connection's business.

Output is never written from here directly: replies are encoded into ``out`` and the client is
queued on ``server.pending_writes``; ``Server.write_replies`` writes each client's buffer once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sluice.commands.args import Args
from sluice.commands.reply import (
    BLOCKED,
    REPLY_OFF,
    REPLY_ON,
    REPLY_SKIP,
    REPLY_SKIP_NEXT,
    Blocked,
    Reply,
)
from sluice.protocol import Push, Replies, RequestReader
from sluice.protocol.encoder import ENCODERS, encode_other
from sluice.storage.keyspace import Database

from .limits import check_output_buffer, hard_limit, output_used
from .memory import client_memory
from .notify import notify_keyspace_event
from .security import is_local_peer

if TYPE_CHECKING:
    import asyncio

    from sluice.commands.context import Command, Context

    from .app import Server
    from .blocking import BlockState
    from .watch import WatchedKey

__all__ = ["BLOCKED", "REPLY_OFF", "REPLY_ON", "REPLY_SKIP", "REPLY_SKIP_NEXT", "Blocked",
           "Client"]


class Client:
    __slots__ = (
        "id", "server", "transport", "reader", "out", "pending_write", "db", "resp3", "name",
        "lib_name", "lib_ver", "user", "authenticated", "addr", "laddr", "created_ms",
        "last_ms", "argv", "cmd", "multi", "multi_error", "watched", "dirty_cas", "in_exec",
        "bstate", "reply_mode", "closing", "closed", "lua_debug", "paused_reading", "no_evict", "no_touch",
        "obuf_soft_since", "iter_out", "_multi_mem", "exec_cmd",
        "propagate_argv", "kind", "monitor", "unblocked", "postponed", "pubsub_channels",
        "pubsub_patterns", "pubsub_shard_channels", "args", "parse_memo", "deferred_pushes",
        "blocked_usec", "net_input_bytes", "net_output_bytes", "commands_processed",
        "is_script", "tracking", "tracking_redirect", "tracking_prefixes", "woff",
    )

    def __init__(self, server: Server, client_id: int, transport: asyncio.Transport | None) -> None:
        self.id = client_id
        self.server = server
        self.transport = transport
        cfg = server.config
        self.reader = RequestReader(cfg.proto_max_bulk_len, server.auth_required())
        self.out = bytearray()  # encoded replies not yet handed to the transport
        self.pending_write = False  # queued on server.pending_writes
        self.db: Database = server.keyspace[0]
        self.resp3 = False
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.user = "default"
        self.authenticated = not server.auth_required()
        self.addr = "?:0"
        self.laddr = "?:0"
        self.created_ms = self.last_ms = time.time_ns() // 1_000_000
        self.argv: list[bytes] = []  # the command being executed
        self.cmd: Command | None = None  # its table entry
        self.multi: list[tuple[Command, list[bytes]]] | None = None  # queued MULTI commands
        self.multi_error = False  # a command failed to queue: EXEC aborts
        self.watched: list[WatchedKey] = []  # keys this client WATCHes
        self.dirty_cas = False  # a watched key was touched
        self.in_exec = False  # executing the commands of EXEC (MULTI never blocks)
        self.bstate: BlockState | None = None  # set while blocked on keys
        self.reply_mode = REPLY_ON
        self.closing = False  # close once the output buffer is flushed
        self.closed = False
        self.paused_reading = False
        self.no_evict = False
        self.no_touch = False
        self.lua_debug = b""  # SCRIPT DEBUG: b"yes" (forked), b"sync", or off
        self.propagate_argv: list[list[bytes]] | None = None  # effects to log instead of argv
        self.kind = "normal"  # output buffer class: normal | pubsub | replica
        self.monitor = False
        self.unblocked = False  # queued on server.unblocked_clients
        self.obuf_soft_since = 0.0  # monotonic time the output buffer went over its soft limit
        # Replies handed to the transport mid-pipeline in this loop iteration: Redis would
        # still hold them (it writes once per iteration), so the output limits count them.
        self.iter_out = 0
        # EXEC's row while its queued commands run: CLIENT LIST's cmd= stays "exec" (Redis's
        # lastcmd), whatever command of the transaction is running.
        self.exec_cmd: Command | None = None
        # (the MULTI queue measured, how many of its commands, their arguments' bytes):
        # multi_bytes adds only what was queued since (a new MULTI is a new list).
        self._multi_mem: tuple[object, int, int] = (None, 0, 0)
        self.postponed: list[bytes] | None = None  # a command held by CLIENT PAUSE
        # Subscriptions, ordered sets (server/pubsub.py keeps the other side).
        self.pubsub_channels: dict[bytes, None] = {}
        self.pubsub_patterns: dict[bytes, None] = {}
        self.pubsub_shard_channels: dict[bytes, None] = {}
        # The argument cursor dispatch.run_batch hands to plain commands, reset for each one
        # (a client's requests run one at a time, so one per connection is enough).
        self.args = Args([])
        # A handler's parse of this connection's last request of its kind, for the next one
        # that is equal (a consumer sends the same XREADGROUP ... BLOCK after every reply).
        self.parse_memo: tuple[list[bytes], object] | None = None
        # Messages this connection published to itself, sent after its command's reply.
        self.deferred_pushes: list[bytes] | None = None
        # Run time of the blocked command's runs so far: the slow log gets the sum once.
        self.blocked_usec = 0
        # CLIENT LIST tot-net-in / tot-net-out / tot-cmds: bytes read and written, and the
        # commands done, as Redis's call() counts them (a blocked one once, when it is done;
        # INFO's total_commands_processed adds these up).
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        self.commands_processed = 0
        # A script client (Redis's lua_client): its writes are recorded into the running
        # script's effects (server.scripting.run), which are logged when the script ends.
        self.is_script = False
        # CLIENT TRACKING (tracking.py): its flags (0: off), the client id invalidations
        # go to (0: this one), the prefixes of BCAST mode.
        self.tracking = 0
        self.tracking_redirect = 0
        self.tracking_prefixes: dict[bytes, None] = {}
        # The replication offset after its last command that the AOF logged (Redis's woff):
        # what WAITAOF waits for the fsync of.
        self.woff = 0

    # -- the handler API ------------------------------------------------------------------

    def now_ms(self) -> int:
        """The server clock in unix ms (virtual in tests)."""
        return self.server.keyspace.clock.now_ms()

    def modified(self, key: bytes, db: Database | None = None, ready: bool = True,
                 changes: int = 1) -> None:
        """A write touched ``key``: invalidates WATCH and wakes clients blocked on it.

        ``ready=False`` for a write that leaves a stream in place without a new entry (XDEL,
        XTRIM, EXPIRE): Redis wakes blocked clients only when a key is added, deleted or
        replaced, on XADD, and on XGROUP DESTROY; the others only invalidate WATCH.
        ``changes``: what the write adds to the dirty counter (Redis's ``server.dirty``,
        INFO's rdb_changes_since_last_save); XDEL counts each entry it deletes."""
        # An empty db is falsy: compare with None.
        self.server.key_modified(self.db if db is None else db, key, ready, changes)

    def notify(self, event: bytes, key: bytes, db: Database | None = None) -> None:
        """Fire keyspace notification ``event`` about ``key`` (of the selected database, or
        ``db``): nothing but one integer test while ``notify-keyspace-events`` is empty."""
        server = self.server
        if server.notify_flags:
            notify_keyspace_event(server, event, key, (self.db if db is None else db).id)

    def block(
        self,
        keys: list[bytes],
        timeout_ms: int,
        on_timeout: Reply,
        argv: list[bytes] | None = None,
        unblock_on_nokey: bool = False,
        memo: object = None,
    ) -> Reply:
        """Park this client until one of ``keys`` is written, then run the command again.

        ``timeout_ms`` 0 blocks forever; otherwise it is relative to now (a client re-blocked
        by a re-run keeps its original deadline). ``on_timeout`` is the reply sent on timeout
        or CLIENT UNBLOCK ... TIMEOUT. ``argv`` replaces the command for the re-run (XREAD
        freezes ``$`` to the last ID). ``unblock_on_nokey``: a deleted key or a type change
        re-runs the command, which then gives its own error (XREADGROUP: NOGROUP or
        WRONGTYPE). ``memo`` is kept for the handler's re-runs and its ``ready_check``
        (``bstate.memo``).
        """
        return self.server.blocking.block_for_keys(
            self, keys, timeout_ms, on_timeout, argv, unblock_on_nokey, memo
        )

    def rewrite_argv(self, *argvs: list[bytes]) -> None:
        """Log these commands to the AOF instead of the one received (``XADD s *`` -> ID)."""
        self.propagate_argv = list(argvs)

    def is_local(self) -> bool:
        """A Unix socket or a loopback peer (Redis's ``connIsLocal``); the server's own
        clients (no transport: the AOF loader) count as local."""
        t = self.transport
        return t is None or is_local_peer(t)

    def set_default_auth(self) -> None:
        """Back to the default user, authenticated unless it needs a password, with the
        pre-auth request limits if not (Redis's ``clientSetDefaultAuth``)."""
        self.user = "default"
        self.authenticated = not self.server.auth_required()
        self.reader.set_limits(auth_required=not self.authenticated)

    # -- output ----------------------------------------------------------------------------

    def add_reply(self, reply: Reply) -> None:
        if self.reply_mode != REPLY_ON and type(reply) is not Push and type(reply) is not Replies:
            # CLIENT REPLY OFF / SKIP (run_batch moves SKIP along per command). Pub/Sub
            # confirmations are pushes and get through, as Redis's CLIENT_PUSHING does.
            return
        ENCODERS.get(type(reply), encode_other)(self.out, reply, self.resp3)
        if not self.pending_write:
            self.queue_write()

    def queue_write(self) -> None:
        """Have ``Server.write_replies`` flush this client's buffer (replies encoded into
        ``out`` directly need it)."""
        if not self.pending_write:
            self.pending_write = True
            self.server.pending_writes.append(self)

    def add_raw(self, data: bytes) -> None:
        """Bytes that bypass REPLY OFF (pushes to MONITOR clients)."""
        self.out += data
        if not self.pending_write:
            self.queue_write()

    def flush(self, final: bool = True) -> None:
        """Hand the buffered replies to the transport in one write; ``final`` at the end of
        the loop iteration, else mid-pipeline. A client whose output is over its class's
        limits is closed instead, its replies dropped (limits.py)."""
        self.pending_write = False
        t = self.transport
        if self.out and t is not None and not self.closed:
            if check_output_buffer(self, t) or (not final and hard_limit(self)):
                # Closed; or kept until the iteration ends, as Redis writes once per
                # iteration: a reply over the limit must not be partly sent (the hard limit
                # bounds what is kept).
                return
            # A fresh buffer rather than clear(): the transport may keep a view of this one.
            t.write(self.out)
            n = len(self.out)
            self.net_output_bytes += n
            stats = self.server.stats
            stats["total_net_output_bytes"] += n
            stats["total_writes_processed"] += 1
            self.out = bytearray()
            self.iter_out = 0 if final else self.iter_out + n
            if t.get_write_buffer_size():  # not all sent: the cron watches its soft limit
                self.server.backlogged[self] = None
        if self.closing and not self.closed:
            self.server.close_client(self)

    def multi_bytes(self) -> int:
        """The bytes of the arguments queued by MULTI (Redis's ``argv_len_sums``)."""
        queue = self.multi
        if not queue:
            return 0
        seen, n, total = self._multi_mem
        if seen is not queue:
            n = total = 0
        for _, argv in queue[n:]:
            total += sum(map(len, argv))
        self._multi_mem = (queue, len(queue), total)
        return total

    def reply_room(self) -> int | None:
        """Bytes of output this client may still get before the hard limit of its class
        closes it (None: no limit). A command that would build a reply without end (a
        repeating random pick with a huge count) stops past it, as Redis's stops once the
        client is flagged to close."""
        hard = hard_limit(self)
        if not hard or self.is_script:
            return None
        t = self.transport
        used = output_used(self, t) if t is not None else len(self.out)
        return max(hard - used, 0)

    @property
    def blocked(self) -> bool:
        return self.bstate is not None

    def info_line(self) -> str:
        """One CLIENT LIST line: Redis's fields, in the order of the newest Redis.

        ``io-thread`` is 0: every client is served by the event loop's thread, Redis's main
        thread. The reply being built is not in ``tot-net-out`` yet, nor the running command
        in ``tot-cmds``, as in Redis (its input is in ``tot-net-in``)."""
        now = time.time_ns() // 1_000_000
        flags = "".join(ch for ch, on in (
            ("O", self.monitor), ("P", self.kind == "pubsub"), ("x", self.multi is not None),
            ("b", self.bstate is not None or self.postponed is not None),
            ("t", bool(self.tracking)), ("R", bool(self.tracking & 2)),
            ("B", bool(self.tracking & 4)), ("d", self.dirty_cas), ("c", self.closing), ("u", self.unblocked),
            ("U", self.addr.startswith("/")), ("e", self.no_evict), ("T", self.no_touch),
        ) if on) or "N"
        last = self.exec_cmd or self.cmd
        cmd = last.name if last else "NULL"
        multi = len(self.multi) if self.multi is not None else -1
        multi_mem = self.multi_bytes()
        # the arguments of the running command, or of a blocked one (others are freed)
        argv_mem = (sum(map(len, self.argv))
                    if self is self.server.current_client or self.bstate is not None else 0)
        qbuf = self.reader.shown()
        qbuf_free = self.reader.free()
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        fd = sock.fileno() if sock is not None else -1
        # Output not received yet: replies not handed over, and the transport's buffer (the
        # part the kernel would not take), which the output buffer limits count too.
        omem = len(self.out) + (self.transport.get_write_buffer_size()
                                if self.transport is not None else 0)
        return (
            f"id={self.id} addr={self.addr} laddr={self.laddr} fd={fd} "
            f"name={self.name.decode(errors='replace')} age={(now - self.created_ms) // 1000} "
            f"idle={(now - self.last_ms) // 1000} flags={flags} db={self.db.id} "
            f"sub={len(self.pubsub_channels)} psub={len(self.pubsub_patterns)} "
            f"ssub={len(self.pubsub_shard_channels)} multi={multi} watch={len(self.watched)} "
            f"qbuf={qbuf} qbuf-free={qbuf_free} "
            f"argv-mem={argv_mem} multi-mem={multi_mem} rbs=0 rbp=0 obl=0 oll=0 omem={omem} "
            f"tot-mem={client_memory(self) + (argv_mem if self.bstate is None else 0)} "
            f"events={'rw' if omem else 'r'} cmd={cmd} user={self.user} "
            f"redir={self.tracking_redirect if self.tracking else -1} "
            f"resp={3 if self.resp3 else 2} "
            f"lib-name={self.lib_name.decode(errors='replace')} "
            f"lib-ver={self.lib_ver.decode(errors='replace')} io-thread=0 "
            f"tot-net-in={self.net_input_bytes} tot-net-out={self.net_output_bytes} "
            f"tot-cmds={self.commands_processed}"
        )


if TYPE_CHECKING:

    def _implements_context(client: Client) -> Context:
        return client  # mypy: Client must match the Context protocol member for member
