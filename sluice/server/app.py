"""The server: listeners, clients, the keyspace, and the end-of-iteration hook.

asyncio has no before-sleep hook, so every callback that can change state (``data_received``,
``connection_lost``, timers, the cron tick) ends with ``before_return()``: serve keys made
ready by writes and resume clients that were unblocked (their pipelined input waits in their
reader), until quiet, never re-entering. The rest of Redis's ``beforeSleep`` (the AOF write,
then every client's output buffer in one write each) is ``write_replies``, queued with
``call_soon`` so that it runs once, after every I/O callback of the loop iteration.

``cron`` runs ``hz`` times a second: active expiry (bounded work), client timeouts and output
buffer soft limits (Redis's ``serverCron`` / ``clientsCron``), and Sluice's stream work
(``streams_bg.py``: the stream directory's walk, retention by age; bounded work too).
The optional Prometheus endpoint (``metrics-port``) is one more listener on the loop
(``metrics.py``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import socket
import time
from collections.abc import Callable, Coroutine
from itertools import islice
from typing import TYPE_CHECKING, Any

from sluice.commands import load_table
from sluice.commands.admin import monitor_line, redacted
from sluice.commands.cmdlatency import (
    DISCARD,
    DISCARD_SLOW,
    Histogram,
    SlowHistogram,
    new_histogram,
)
from sluice.commands.context import Command, Reply, SlowlogEntry
from sluice.commands.errors import CommandError, ConfigError
from sluice.commands.hash_common import count_field_expiry
from sluice.commands.migrate_sockets import MigrateSockets
from sluice.commands.spec import F
from sluice.protocol import ErrorReply, ProtocolError
from sluice.scripting.runner import Scripting
from sluice.storage import valuesize  # noqa: F401  (registers the value types' sizes)
from sluice.storage.hashes import active_expire_fields
from sluice.storage.keyspace import Clock, Database, Keyspace
from sluice.storage.lazyfree import LAZYFREE_THRESHOLD
from sluice.storage.quicklist import Quicklist

from . import info, listen
from .acl import AclManager
from .blocking import BlockingManager
from .client import BLOCKED, Client
from .config import Config
from .config_redis import SHUTDOWN_FORCE, SHUTDOWN_NOSAVE, SHUTDOWN_SAVE
from .dispatch import call, exec_queued, is_plain, reject, run_batch, script_call
from .hotkeys import Hotkeys
from .instantaneous import EventLoopStats
from .latency import LatencyMonitor
from .limits import check_output_buffer
from .memory import Memory
from .notify import apply_flags, notify_keyspace_event
from .oom_score import OomScore
from .pause import ClientPause
from .pubsub import PubSub
from .replication import Replication
from .scripting import ScriptSupport
from .security import apply_renames, insecure_config_warning
from .streams_bg import StreamDirectory, retention_cycle
from .supervised import Supervisor
from .tracking import Tracking
from .watch import Watches

if TYPE_CHECKING:
    from sluice.storage.hotkeys import HotkeysSession

    from .metrics import MetricsEndpoint
    from .persistence import AppendOnlyFile
    from .snapshot import Persistence

log = logging.getLogger("sluice")

ERROR_STATS_NUMBER = 128  # distinct error codes INFO errorstats keeps (Redis's)
_LOG_LEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
               "warning": logging.WARNING, "nothing": logging.CRITICAL + 1}


class Server:
    # Run a command as the script client through dispatch's choke point (redis.call):
    # dispatch's function as a method, so a script's command costs no extra Python frame.
    call = script_call

    def __init__(self, config: Config | None = None, clock: Clock | None = None) -> None:
        self.config = config or Config()
        self.table: dict[bytes, Command] = load_table()
        self.command_names: dict[bytes, Command] = {}  # lower- and upper-case names: one lookup
        self.rebuild_command_names()
        # INFO total_commands_processed is this plus the connected clients' tot-cmds: the
        # commands of clients that have gone, less those done before CONFIG RESETSTAT.
        self.commands_base = 0
        self.keyspace = Keyspace(self.config.databases, clock, self._on_expire)
        # Keyspace notifications (notify.py): the classes on, tested before any work.
        self.notify_flags = 0
        self.pre_command_oom = False  # over maxmemory with nothing to evict, before the command
        # The client whose command is running on the full path (process_command, re-runs,
        # EXEC), None otherwise: pushes to it wait for its reply (Redis's current_client).
        self.current_client: Client | None = None
        self.tracking = Tracking(self)  # CLIENT TRACKING (tracking.py)
        self.clients: dict[int, Client] = {}
        self.next_client_id = 1
        self.blocking = BlockingManager(self)
        self.repl = Replication(self)  # the replication offset, WAITAOF, min-replicas-*
        self.pending_writes: list[Client] = []  # clients with output to flush
        # latency-tracking off: each command's histogram, kept while it records nowhere
        self.paused_histograms: dict[str, tuple[Histogram, SlowHistogram]] = {}  # by name
        self.oom = OomScore()  # oom-score-adj: the process's score, and the one it had
        # Clients with a query buffer of their own, in the order the cron visits them.
        self.query_buffers: dict[Client, None] = {}
        # Clients whose transport holds output they have not taken: the cron checks their
        # output buffer limits (a soft limit can expire while no reply is added).
        self.backlogged: dict[Client, None] = {}
        self.unblocked_clients: list[Client] = []  # clients whose input must be resumed
        self.watches = Watches(self.keyspace.clock)  # WATCH (watch.py)
        self.watched_keys = self.watches.keys  # the same dict: key_modified's test
        self.monitors: list[Client] = []
        self.pubsub = PubSub()
        self.pubsub.current = lambda: self.current_client
        self.dirty = 0  # changes since the last save (and the AOF trigger)
        self.aof: AppendOnlyFile | None = None  # feed(db, argvs), begin_multi, end_multi
        self.persistence: Persistence | None = None  # loading, RDB, cron, shutdown
        self.disk_error: str | None = None  # MISCONF text while writes must be refused
        # The ACL check dispatch runs, installed only while some user is restricted.
        self.acl: AclManager | None = None
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.listeners: list[asyncio.base_events.Server] = []
        self.tcp_listeners: list[asyncio.base_events.Server] = []  # (CONFIG SET port/bind)
        self.protocol_factory: Callable[[], asyncio.BaseProtocol] = asyncio.Protocol
        self._tasks: set[asyncio.Task[None]] = set()  # awaited by close()
        self.listener_info: dict[int, str] = {}  # INFO listener<n> lines (listen.note_listener)
        self.run_id = secrets.token_hex(20)
        self.start_time = time.time()
        self.port = self.config.port
        self.stats: collections.Counter[str] = collections.Counter()
        self.error_stats: collections.Counter[str] = collections.Counter()
        self.el_stats = EventLoopStats()  # event-loop cycles, INFO's instantaneous rates
        self.errors_enabled = True  # errorstats take new codes (off past ERROR_STATS_NUMBER)
        self.slowlog: collections.deque[SlowlogEntry] = collections.deque()
        self.slowlog_next_id = 0
        self.lastsave = int(time.time())
        self._in_before_return = False
        self.script_busy = False  # a script is past busy-reply-threshold: BUSY for others
        self._writes_scheduled = False  # write_replies is queued on the loop
        self._cron: asyncio.TimerHandle | None = None
        self._shutdown: asyncio.Future[None] | None = None
        self.pause = ClientPause(self)  # CLIENT PAUSE
        self.active_expire_enabled = True  # DEBUG SET-ACTIVE-EXPIRE
        self.cron_paused = False  # DEBUG PAUSE-CRON: the cron runs, doing nothing
        self.shutdown_asap: str | None = None  # a signal's shutdown, for the next cron tick
        self.stopping = False  # a shutdown is under way (its final save may be running)
        self.supervisor = Supervisor("no")  # a service manager to report to (__main__ sets it)
        self.memory = Memory(self)  # maxmemory, eviction, used_memory (memory.py)
        self._apply_memory_config()
        # Sluice's stream work (streams_bg.py): the directory of stream keys is walked by the
        # cron only once something needs it (a retention policy, the metrics endpoint).
        self.stream_directory = StreamDirectory(self.keyspace)
        self.streams_wanted = False
        self.metrics: MetricsEndpoint | None = None  # the Prometheus endpoint, when on
        self.cronloops = 0  # cron ticks run (Redis's server.cronloops); tests wait on it
        self.latency = LatencyMonitor()  # LATENCY: spikes over latency-monitor-threshold
        self.migrate_sockets = MigrateSockets()  # MIGRATE's cached target connections
        self.hotkeys = Hotkeys(self)  # HOTKEYS' session (hotkeys.py)
        self.hotkeys_tracking: HotkeysSession | None = None  # the active one: dispatch's test
        self.slow_threshold_us = 0  # the least duration SLOWLOG or LATENCY wants to see
        self._update_slow_threshold()
        for name in ("slowlog-log-slower-than", "latency-monitor-threshold"):
            self.config.on_change(name, lambda _v: self._update_slow_threshold())
        self._apply_config_changes()  # runtime effects of CONFIG SET (hz, loglevel ...)
        self.loop_name = "asyncio"
        # The CPUs the process had before server_cpulist pinned it (set by __main__).
        self.cpus_at_start: set[int] | None = None
        self.config.on_change("slowlog-max-len", lambda n: self._trim_slowlog())
        self._key_memory_histograms = self.config.key_memory_histograms  # as at start
        self.config.on_change("key-memory-histograms", self._key_memory_histograms_changed)
        # ACL users (security.md); installs self.acl only while some user is restricted.
        self.acl_manager = AclManager(self)
        self.script_support = ScriptSupport(self)  # script clients, effects, the busy pump
        self.scripting = Scripting(self.config, self.script_support)  # docs/scripting.md
        if self.config.rename_command:
            apply_renames(self.table, self.config.rename_command)
            self.rebuild_command_names()

    def rebuild_command_names(self) -> None:
        """Refresh the fast name lookup after the table changes (rename-command)."""
        self.command_names = {}
        for name, c in self.table.items():
            self.command_names[name] = c
            self.command_names[name.upper()] = c
        # The names of the commands dispatch.run_batch may run without the full checks.
        self.plain_names = {n: c for n, c in self.command_names.items() if is_plain(c)}

    def _apply_memory_config(self) -> None:
        """Keyspace notifications, eviction and LFU settings, now and on CONFIG SET."""
        config = self.config
        access = self.keyspace.access

        def lfu(_value: int) -> None:
            access.lfu_log_factor = config.lfu_log_factor
            access.lfu_decay_time = config.lfu_decay_time

        config.on_change("notify-keyspace-events", lambda flags: apply_flags(self, flags))
        config.on_change("maxmemory-policy", self.memory.apply_policy)
        def maxmemory(_value: int) -> None:
            self.memory.refresh()

        config.on_change("maxmemory", maxmemory)
        config.on_change("lfu-log-factor", lfu)
        config.on_change("lfu-decay-time", lfu)
        apply_flags(self, config.notify_keyspace_events)
        lfu(0)

    def _apply_config_changes(self) -> None:
        """Apply the settings that matter at run time whenever CONFIG SET changes them."""
        config = self.config

        def hz(value: int) -> None:
            config.hz = min(max(value, 1), 500)  # Redis accepts any value and clamps it

        def proto_max_bulk_len(value: int) -> None:
            for client in self.clients.values():
                client.reader.set_limits(max_bulk_len=value)

        def loglevel(value: str) -> None:
            logging.getLogger("sluice").setLevel(_LOG_LEVELS.get(value, logging.INFO))

        def repl_backlog_size(value: int) -> None:
            # Redis's resizeReplicationBacklog: at least 16 KB once set at run time (a config
            # file's smaller value stands, as there)
            config.repl_backlog_size = max(value, 16 * 1024)

        def latency_tracking(on: bool) -> None:
            # Off: each command records into DISCARD, its histogram kept aside (Redis keeps
            # them and stops recording); on again: it records into it once more.
            for c in self.table.values():
                for row in (c, *c.subcommands.values()):
                    if on:
                        if row.hist is DISCARD:
                            row.hist, row.hist_slow = self.paused_histograms.pop(
                                row.name, (new_histogram(), {}))
                    elif row.hist is not DISCARD:
                        self.paused_histograms[row.name] = (row.hist, row.hist_slow)
                        row.hist, row.hist_slow = DISCARD, DISCARD_SLOW

        def oom_score(_value: object) -> None:
            if not self.oom.apply(config.oom_score_adj, config.oom_score_adj_values):
                raise ConfigError("Failed to set current oom_score_adj. Check server logs.")

        def list_compress_depth(value: int) -> None:
            # new quicklists record it (DEBUG OBJECT's ql_compressed); process-wide, as
            # Redis's server.list_compress_depth
            Quicklist.default_compress = value

        config.on_change("hz", hz)
        config.on_change("oom-score-adj", oom_score)
        config.on_change("oom-score-adj-values", oom_score)
        if config.oom_score_adj != "no":
            self.oom.apply(config.oom_score_adj, config.oom_score_adj_values)
        config.on_change("latency-tracking", latency_tracking)
        if not config.latency_tracking:
            latency_tracking(False)
        config.on_change("list-compress-depth", list_compress_depth)
        list_compress_depth(config.list_compress_depth)
        config.on_change("repl-backlog-size", repl_backlog_size)
        config.on_change("proto-max-bulk-len", proto_max_bulk_len)
        config.on_change("loglevel", loglevel)
        hz(config.hz)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self, sock: socket.socket | None = None) -> None:
        """Listen on the configured addresses (or on ``sock``, used by tests)."""
        from .connection import ClientProtocol

        self.loop = asyncio.get_running_loop()
        self._shutdown = self.loop.create_future()
        from .snapshot import Persistence

        self.persistence = Persistence(self)
        self.persistence.load()  # AOF or RDB, before the first client (raises LoadError)
        self.streams_wanted = self.stream_directory.learn_all()  # retention from the start

        def factory() -> ClientProtocol:
            return ClientProtocol(self)

        self.protocol_factory = factory
        if sock is not None:
            srv = await self.loop.create_server(factory, sock=sock)
            self.listeners.append(srv)
            self.tcp_listeners.append(srv)
            host, self.port = sock.getsockname()[:2]
            self.config.port = self.port  # what CONFIG GET port says, and a rollback rebinds
            listen.note_listener(self, "tcp", [host], self.port)
        elif self.config.port:  # port 0: no TCP listener
            await listen.open_tcp(self, factory, self.config.port)
        await listen.open_extra(self, factory)  # tls-port, unixsocket
        listen.watch_settings(self)  # CONFIG SET port / bind move the TCP listeners
        if self.config.metrics_port:
            await self._start_metrics(self.config.metrics_port)
        self._schedule_cron()
        log.info("Ready to accept connections on port %s", self.port)
        warning = insecure_config_warning(not self.auth_required(), self.config.protected_mode,
                                          self.config.bind)
        if warning is not None:
            log.warning("%s", warning)

    def track_task(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task that ``close`` waits for (nothing is left running)."""
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_metrics(self, port: int) -> None:
        try:
            from .metrics import MetricsEndpoint
        except ImportError as e:  # the optional dependency: pip install sluice[metrics]
            raise ConfigError(f"metrics-port needs the prometheus_client package "
                              f"(pip install 'sluice[metrics]'): {e}") from e
        self.metrics = MetricsEndpoint(self)
        await self.metrics.start(port)

    def note_stream(self, db: Database, key: bytes) -> None:
        """A stream was given a Sluice policy: the directory knows it at once."""
        self.stream_directory.note(db, key)
        self.streams_wanted = True

    async def serve_forever(self) -> None:
        assert self._shutdown is not None
        await self._shutdown

    def request_shutdown(self) -> None:
        if self._shutdown is not None and not self._shutdown.done():
            self._shutdown.set_result(None)

    def prepare_shutdown(self, save: bool | None, force: bool) -> str | None:
        """Redis's prepareForShutdown, for SHUTDOWN and for a signal: persistence's last
        word. Returns the error text when the server must not exit (it goes on serving);
        None: stop now (``request_shutdown``)."""
        log.warning("User requested shutdown...")
        self.stopping = True
        self.supervisor.stopping()
        error = self.persistence.shutdown_save(save, force) if self.persistence else None
        if error is not None:
            self.stopping = False
            log.warning("Errors trying to shut down the server. Check the logs for more "
                        "information.")
        return error

    def signal_shutdown(self, signame: str) -> None:
        """SIGTERM / SIGINT: a shutdown the next cron tick carries out (Redis's
        shutdown_asap), with the flags of shutdown-on-sigterm / -sigint; until then SHUTDOWN
        ABORT cancels it."""
        self.shutdown_asap = signame

    def abort_shutdown(self) -> bool:
        """SHUTDOWN ABORT: cancel a signal's shutdown not yet begun; False if none."""
        if self.shutdown_asap is None:
            return False
        self.shutdown_asap = None
        log.warning("Shutdown manually aborted.")
        return True

    def _shutdown_on_signal(self) -> None:
        signame, self.shutdown_asap = self.shutdown_asap, None
        cfg = self.config
        flags = cfg.shutdown_on_sigint if signame == "SIGINT" else cfg.shutdown_on_sigterm
        save = True if flags & SHUTDOWN_SAVE else (False if flags & SHUTDOWN_NOSAVE else None)
        if self.prepare_shutdown(save, bool(flags & SHUTDOWN_FORCE)) is None:
            self.request_shutdown()

    async def shutdown(self) -> None:
        """Orderly stop: persistence gets its last word (done already when SHUTDOWN or a
        signal's cron tick prepared the stop), then everything is closed."""
        if self.persistence is not None:
            self.persistence.shutdown(last=True)
        elif self.aof is not None:
            self.aof.shutdown()
        await self.close()

    async def close(self) -> None:
        """Stop listening, close every client, cancel the cron: nothing left running."""
        if self._cron is not None:
            self._cron.cancel()
        self.script_support.kill_debug_sessions()
        self.migrate_sockets.close_all()
        self.memory.close()
        if self.metrics is not None:
            await self.metrics.close()
        if self._tasks:  # listeners a CONFIG SET port/bind is still opening
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for srv in self.listeners:
            srv.close()
        for client in list(self.clients.values()):
            client.flush()
            self.close_client(client)
        for srv in self.listeners:
            await srv.wait_closed()
        self.listeners.clear()
        self.tcp_listeners.clear()
        self.listener_info.clear()
        listen.remove_unix_socket(self)

    # -- clients ----------------------------------------------------------------------------

    def new_client(self, transport: asyncio.Transport | None) -> Client:
        client = Client(self, self.next_client_id, transport)
        self.next_client_id += 1
        self.clients[client.id] = client
        self.stats["total_connections_received"] += 1
        return client

    def close_client(self, client: Client, abort: bool = False) -> None:
        """Close a client's connection: after what the transport holds is sent, or at once
        with it dropped (``abort``: a client over its output limits)."""
        if client.closed:
            return
        client.closed = True
        if client.transport is not None:
            if abort:
                client.transport.abort()
            else:
                client.transport.close()
        self.unlink_client(client)

    def unlink_client(self, client: Client) -> None:
        """Forget a client (connection lost or closed): release everything it held."""
        client.closed = True
        if self.clients.pop(client.id, None) is not None:
            self.commands_base += client.commands_processed
        self.blocking.disconnect(client)
        self.unwatch_all(client)
        self.query_buffers.pop(client, None)
        self.backlogged.pop(client, None)
        if client.tracking:
            self.tracking.disable(client)
        if self.current_client is client:
            self.current_client = None
        if client.postponed is not None:
            self.pause.forget(client)
        if client.kind == "pubsub":
            self.pubsub.unsubscribe_all(client)
        if client.monitor:
            try:
                self.monitors.remove(client)
            except ValueError:
                pass

    def total_commands_processed(self) -> int:
        """INFO total_commands_processed: counted per client as Redis's call() counts them
        (EXEC's commands included; refused, queued and still blocked ones not), which keeps
        the per-command path to one integer add."""
        return (self.commands_base + sum(c.commands_processed for c in self.clients.values())
                + sum(c.commands_processed for c in self.script_support.clients))

    def authenticate(self, username: bytes, password: bytes) -> bool:
        """Check credentials against the ACL users (requirepass is the default user's)."""
        return self.acl_manager.authenticate(username, password)

    def auth_required(self) -> bool:
        """Whether new connections start unauthenticated (default user not ``on nopass``)."""
        return self.acl_manager.auth_required()

    # -- the request path -------------------------------------------------------------------

    def process_input(self, client: Client) -> None:
        """Run every complete request in the client's reader (stops while it is blocked)."""
        reader = client.reader
        while (client.bstate is None and client.postponed is None and not client.closing
               and not client.paused_reading and not client.closed):
            try:
                batch = reader.take()
            except ProtocolError as e:
                self.count_error(b"ERR")
                client.add_reply(ErrorReply(b"ERR " + str(e).encode()))
                client.closing = True
                log.debug("client %s: %s", client.addr, e)
                return
            if not batch:
                break
            rest = run_batch(self, client, batch)
            if rest:
                reader.put_back(rest)
                break
            if not reader.pending():
                return  # the common case: the input ended on a request boundary

    def query_buffer_over_limit(self, client: Client) -> bool:
        """After a read, as Redis's readQueryFromClient: a client whose unparsed input and
        queued MULTI arguments pass client-query-buffer-limit is closed (True)."""
        used = client.reader.pending() + (client.multi_bytes() if client.multi else 0)
        if used <= self.config.client_query_buffer_limit:
            return False
        log.warning("Closing client that reached max query buffer length (qbuf=%d)", used)
        self.stats["client_query_buffer_limit_disconnections"] += 1
        self.close_client(client)
        return True

    def call_unblocked(self, client: Client, cmd: Command, argv: list[bytes]) -> None:
        """Re-run a blocked client's command (the table entry it blocked in), after the
        checks that may have changed since it blocked, as Redis's re-run through
        processCommand: its ACL permissions, and a disk error refusing writes."""
        denied = self.acl.check(client, cmd, argv) if self.acl is not None else None
        if denied is None and self.disk_error is not None and cmd.flags & F.WRITE:
            denied = CommandError(self.disk_error)
        if denied is not None:
            client.blocked_usec = 0  # never done: its runs' time is not counted
            reject(self, client, denied, cmd)
            return
        previous = self.current_client
        self.current_client = client
        try:
            reply = call(self, client, cmd, argv, rerun=True)
        finally:
            self.current_client = previous
        if reply is not BLOCKED:
            client.add_reply(reply)
        if client.deferred_pushes is not None:  # its own pushes, after its reply
            for frame in client.deferred_pushes:
                client.add_raw(frame)
            client.deferred_pushes = None
        if self.tracking.pending:
            self.tracking.flush_pending(client)

    def queue_unblocked(self, client: Client) -> None:
        if not client.unblocked:
            client.unblocked = True
            self.unblocked_clients.append(client)

    def process_unblocked_clients(self) -> None:
        """Resume the pipelined input of clients that just got unblocked."""
        while self.unblocked_clients:
            batch, self.unblocked_clients = self.unblocked_clients, []
            for client in batch:
                client.unblocked = False
                if client.bstate is None and not client.closed and client.reader.pending():
                    self.process_input(client)  # requests that came after the blocked one

    def before_return(self) -> None:
        """Serve ready keys and resume unblocked clients, then see that ``write_replies``
        runs at the end of this loop iteration. Every callback that can change state ends
        here."""
        if self._in_before_return:
            return
        self._in_before_return = True
        try:
            blocking = self.blocking
            while blocking.ready_keys or self.unblocked_clients:
                if blocking.ready_keys:
                    blocking.handle_clients_blocked_on_keys()
                self.process_unblocked_clients()
        finally:
            self._in_before_return = False
        if not self._writes_scheduled and (
                self.pending_writes or (self.aof is not None and self.aof.buf)
                or self.tracking.bcast_pending or self.repl.get_ack_from_replicas
                or self.el_stats.cycle_start_ns):
            if self.loop is None:
                self.write_replies()  # no event loop (in-process tools and tests)
            else:
                self._writes_scheduled = True
                self.loop.call_soon(self.write_replies)

    def write_replies(self) -> None:
        """Redis's ``beforeSleep``: the AOF's group commit, then one write per client with
        output.

        It runs from ``call_soon`` after every I/O callback of the loop iteration (asyncio
        runs the ready queue in order; uvloop runs it before it polls again), so all the
        clients that were readable are served before any reply goes out. Writing a reply
        wakes the client that waits for it; when replies left one by one, each woke its
        reader while we still had work, and the scheduler churn cost more kernel time per
        request than Redis spends in total.
        """
        self._writes_scheduled = False
        if self.tracking.bcast_pending:
            self.tracking.broadcast()  # BCAST invalidations, before the replies go out
        if self.repl.get_ack_from_replicas and not self.pause.mode:
            self.repl.send_getack()
        if self.aof is not None:
            start = time.perf_counter_ns()
            written = self.aof.commit()
            self.el_stats.aof_us += (time.perf_counter_ns() - start) // 1000
            if not written:
                return  # not on disk: those replies are held until the cron's retry works
        pending, self.pending_writes = self.pending_writes, []
        for client in pending:
            client.flush()
        if self.unblocked_clients:  # WAITAOF clients the commit's fsync answered
            self.before_return()
        self.el_stats.close_cycle()

    # -- keyspace events --------------------------------------------------------------------

    def key_modified(self, db: Database, key: bytes, ready: bool = True,
                     changes: int = 1) -> None:
        """A write to ``key`` (Redis's ``keyModified``): bump dirty, measure the value again
        (and set its LRM clock), invalidate WATCH and client-side caches, wake blocked
        clients (unless not ``ready``: see ``Client.modified``)."""
        self.dirty += changes
        db.written(key, self.keyspace.access.lrm)
        if self.tracking.count:
            self.tracking.invalidate_key(key)
        if self.watched_keys:
            watchers = self.watched_keys.get((db.id, key))
            if watchers:
                self.watches.touch(db, key, watchers)
        if ready and self.blocking.blocking_keys:
            self.blocking.signal_write(db, key)

    def _on_expire(self, db: Database, key: bytes, freed_ns: int) -> None:
        """A key found expired: WATCH and blocked clients see a deletion, the AOF gets DEL;
        no change is counted (Redis's deleteExpiredKeyAndPropagate), so a read command that
        found it is not logged itself. ``freed_ns``: how long its deletion took (LATENCY's
        expire-del; 0 while monitoring is off)."""
        if freed_ns:
            self.latency.sample("expire-del", freed_ns // 1_000_000)
        self.stats["expired_keys"] += 1
        if self.notify_flags:
            notify_keyspace_event(self, b"expired", key, db.id)
        self.key_modified(db, key, changes=0)
        if self.aof is not None:
            self.aof.feed(db.id, [[b"DEL", key]])

    def _expire_hash_fields(self, db: Database) -> None:
        """The active cycle of hash field TTLs: at most 10,000 fields a second per database,
        as Redis's ``activeSubexpires``; each field logged as HDEL, each hash touched
        modified (and deleted with its last field), no change counted."""
        quota = max(1, 10_000 // max(self.config.hz, 1))
        now = self.keyspace.clock.now_ms()
        for key, fields, deleted in active_expire_fields(db, now, quota):
            for field in fields:
                count_field_expiry(self.stats, active=True)
                if self.aof is not None:  # one HDEL at a time, as Redis propagates these
                    self.aof.feed(db.id, [[b"HDEL", key, field]])
            if self.notify_flags:
                notify_keyspace_event(self, b"hexpired", key, db.id)
                if deleted:
                    notify_keyspace_event(self, b"del", key, db.id)
            self.key_modified(db, key, changes=0)

    def flush_db(self, db: Database, invalidate: bool = True) -> int:
        """FLUSHDB: touch watched keys that existed, wake blocked clients, clear the db.
        ``invalidate``: tell tracking clients (FLUSHALL does it once for all databases)."""
        if self.watched_keys:
            self.watches.touch_all_in_db(db, None)
        if invalidate:
            self.tracking.invalidate_all()  # Redis's signalFlushedDb: a null to every tracker
        self.blocking.signal_all_in_db(db)
        n = db.flush()
        self.dirty += n  # Redis counts the keys removed (an empty database: none)
        return n

    def swap_db(self, db1: Database, db2: Database) -> None:
        """SWAPDB: exchange the contents of two databases (Redis's ``dbSwapDatabases``).

        Clients, their WATCHes and their blocked keys stay with the database number, so
        watched keys whose value changes fail EXEC and clients blocked on keys that now exist
        are woken.
        """
        if self.watched_keys:
            self.watches.touch_all_in_db(db1, db2)
            self.watches.touch_all_in_db(db2, db1)
        db1.swap_contents(db2)
        self.blocking.signal_all_in_db(db1)
        self.blocking.signal_all_in_db(db2)

    # -- WATCH (watch.py) and EXEC -----------------------------------------------------------

    def watch(self, client: Client, key: bytes) -> None:
        self.watches.watch(client, key)

    def unwatch_all(self, client: Client) -> None:
        self.watches.unwatch_all(client)

    def watched_expired(self, client: Client) -> bool:
        return self.watches.expired_since_watch(client)

    def exec_transaction(self, client: Client) -> Reply:
        """EXEC: run the client's queued commands (``dispatch.exec_queued``)."""
        return exec_queued(self, client)

    # -- bookkeeping ------------------------------------------------------------------------

    def info_section(self, name: str) -> dict[str, Any]:
        """INFO's fields for one section (``server/info.py``)."""
        return info.info_section(self, name)

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT (``server/info.py``)."""
        info.reset_stats(self)

    def count_error(self, message: bytes) -> None:
        # The code is the first word, if a space comes within Redis's 32-byte window.
        self.stats["total_error_replies"] += 1
        if not self.errors_enabled:
            return
        space = message.find(b" ", 0, 31)
        code = message[:space].decode(errors="replace") if space > 0 else "ERR"
        stats = self.error_stats
        if code not in stats and len(stats) >= ERROR_STATS_NUMBER:
            # As Redis's incrementErrorCount: a script inventing codes must not grow the
            # table without bound. Logged once; CONFIG RESETSTAT enables it again.
            log.warning("Errorstats stopped adding new errors because the number of errors "
                        "reached the limit, may be misuse of lua error_reply, please check "
                        "INFO ERRORSTATS, this can be re-enabled via CONFIG RESETSTAT.")
            log.warning("Current errors code list: %s", ", ".join(sorted(stats)))
            if len(stats) > LAZYFREE_THRESHOLD:  # Redis frees the table in the background
                self.stats["lazyfreed_objects"] += len(stats)
            stats.clear()
            stats["ERRORSTATS_DISABLED"] = 1
            self.errors_enabled = False
            return
        stats[code] += 1

    def internal_error(self, cmd: Command, exc: BaseException) -> ErrorReply:
        log.exception("Internal error running '%s'", cmd.name, exc_info=exc)
        return ErrorReply(f"ERR internal error running '{cmd.name}': {type(exc).__name__}".encode())

    # -- CLIENT PAUSE, SLOWLOG, LATENCY, MONITOR ---------------------------------------------

    def pause_clients(self, timeout_ms: int, write_only: bool) -> None:
        self.pause.pause(timeout_ms, write_only)

    def expiry_paused(self) -> bool:
        """While CLIENT PAUSE holds writes, expired data is not deleted (Redis's
        ``isPausedActionsWithUpdate(PAUSE_ACTION_EXPIRE)``)."""
        return bool(self.pause.mode)

    def unpause_clients(self) -> None:
        self.pause.unpause()

    def _key_memory_histograms_changed(self, on: bool) -> None:
        """As Redis 8.6: key-memory-histograms may be turned off at run time, not on (its
        per-key memory tracking is set up at start); the refusal undoes the CONFIG SET."""
        if on and not self._key_memory_histograms:
            raise ConfigError("memory tracking cannot be enabled at runtime")
        self._key_memory_histograms = on

    def _update_slow_threshold(self) -> None:
        threshold = self.config.latency_monitor_threshold
        self.latency.threshold = threshold
        self.keyspace.access.time_deletes = threshold > 0  # expire-del
        wanted = [self.config.slowlog_log_slower_than]
        if self.config.latency_monitor_threshold > 0:
            wanted.append(self.config.latency_monitor_threshold * 1000)
        wanted = [w for w in wanted if w >= 0]
        self.slow_threshold_us = min(wanted) if wanted else 2**63

    def slow_command(self, client: Client, cmd: Command, argv: list[bytes], duration_us: int) -> None:
        """A command took at least ``slow_threshold_us``: the slow log and LATENCY decide."""
        if 0 <= self.config.slowlog_log_slower_than <= duration_us \
                and not cmd.flags & F.SKIP_SLOWLOG:
            self.slowlog_add(client, argv, duration_us)
        self.latency.sample("fast-command" if cmd.flags & F.FAST else "command",
                            duration_us // 1000)

    def slowlog_add(self, client: Client, argv: list[bytes], duration_us: int) -> None:
        if self.config.slowlog_max_len <= 0:
            return
        if argv[0].lower() in (b"auth", b"hello"):
            argv = redacted(argv)
        shown = [a if len(a) <= 128 else a[:128] + b"... (%d more bytes)" % (len(a) - 128) for a in argv[:32]]
        if len(argv) > 32:
            shown[-1] = b"... (%d more arguments)" % (len(argv) - 31)
        self.slowlog.appendleft([self.slowlog_next_id, int(time.time()), duration_us, shown,
                                 client.addr.encode(), client.name])
        self.slowlog_next_id += 1
        self._trim_slowlog()

    def _trim_slowlog(self) -> None:
        while len(self.slowlog) > max(self.config.slowlog_max_len, 0):
            self.slowlog.pop()

    def feed_monitors(self, client: Client, argv: list[bytes]) -> None:
        line = monitor_line(client, argv)
        for m in self.monitors:
            if m is not client:
                m.add_raw(line)

    # -- cron -------------------------------------------------------------------------------

    def _resize_query_buffers(self) -> None:
        """Trim or free the clients' own query buffers (Redis's clientsCronResizeQueryBuffer,
        querybuf.py). As Redis's clientsCron, each call visits the number of clients over
        ``hz`` (at least 5), so each is seen about once a second; only clients that hold a
        buffer are in the line, and a visited one goes to its back."""
        owners = self.query_buffers
        count = max(len(self.clients) // max(min(self.config.hz, 500), 1), 5)
        now = time.time_ns() // 1_000_000
        for client in list(islice(owners, count)):
            del owners[client]
            if client.reader.resize((now - client.last_ms) // 1000):
                owners[client] = None

    def _check_backlogged_clients(self) -> None:
        """The output buffer limits of clients that have not taken all their output, as
        Redis's clientsCron checks them: a soft limit expires without new replies."""
        for client in list(self.backlogged):
            t = client.transport
            if t is None or client.closed or not t.get_write_buffer_size():
                del self.backlogged[client]
                client.obuf_soft_since = 0.0
            elif check_output_buffer(client, t):
                self.backlogged.pop(client, None)

    def _schedule_cron(self) -> None:
        self._cron = self.loop.call_later(1.0 / self.config.hz, self.cron)

    def cron(self) -> None:
        if self.cron_paused:  # DEBUG PAUSE-CRON 1: as serverCron, skip all of its work
            self._schedule_cron()
            return
        self.cronloops += 1
        el = self.el_stats
        el.open_cycle()  # the cron's wakeup is a cycle (or part of the one open)
        cron_start = time.perf_counter_ns()
        if self.shutdown_asap is not None:
            self._shutdown_on_signal()
        try:
            self.keyspace.update_lru_clock()  # OBJECT IDLETIME's clock, as Redis's lruclock
            st = self.stats
            el.sample(self.total_commands_processed(), st["total_net_input_bytes"],
                      st["total_net_output_bytes"])
            self.keyspace.access.counting = False  # no command runs: lookups are ours
            if self.query_buffers:
                self._resize_query_buffers()
            if self.backlogged:
                self._check_backlogged_clients()
            self.memory.refresh()  # buffers, peak, the eviction threshold
            if self.config.maxmemory_clients:
                self.memory.evict_clients()
            if self.config.maxmemory and self.memory.over():
                self.memory.perform_evictions()
            if self.tracking.count:
                self.tracking.limit(self.config.tracking_table_max_keys)
            if self.hotkeys_tracking is not None:
                self.hotkeys.cron()  # HOTKEYS START ... DURATION: the session ends
            if self.active_expire_enabled and not self.pause.mode:
                start = self.latency.start()
                # active-expire-effort 1..10 lets the cycle do a quarter more work per step,
                # as Redis's keys per loop grow (20 + 5 per step past 1)
                expire_quota = 200 + 50 * (self.config.active_expire_effort - 1)
                for db in self.keyspace.dbs:
                    if db.expires:
                        # INFO expired_keys_active: the keys the cycle found (expired_keys
                        # counts them too, with those found on access)
                        self.stats["expired_keys_active"] += db.active_expire(expire_quota)
                    if db.subexpires:
                        self._expire_hash_fields(db)
                self.latency.end("expire-cycle", start)  # as Redis's activeExpireCycle
            timeout = self.config.timeout
            if timeout:
                now = time.time_ns() // 1_000_000
                for client in list(self.clients.values()):
                    # As Redis's clientsCronHandleTimeout: blocked, MONITOR and paused clients
                    # are spared; a client idling inside MULTI is not.
                    if (client.bstate is None and not client.monitor
                            and client.postponed is None
                            and now - client.last_ms > timeout * 1000):
                        self.close_client(client)
            if self.streams_wanted or self.metrics is not None:
                self.stream_directory.walk()
                if not self.pause.mode:
                    retention_cycle(self, self.stream_directory)
            if self.script_support.debug_children:
                self.script_support.reap_debug_children()
            # MIGRATE's connections idle for 10 s (migrateCloseTimedoutSockets)
            self.migrate_sockets.close_timed_out(self.keyspace.clock.now_ms())
            if self.persistence is not None:
                self.persistence.cron()
            elif self.aof is not None:
                self.aof.cron()
        except Exception:  # noqa: BLE001
            log.exception("cron failed")
        finally:
            el.cron_us += (time.perf_counter_ns() - cron_start) // 1000
            self.before_return()
            self._schedule_cron()


if TYPE_CHECKING:
    from sluice.commands.context import ServerFacade

    def _implements_facade(server: Server) -> ServerFacade[Client]:
        return server  # mypy: Server must match the ServerFacade protocol member for member
