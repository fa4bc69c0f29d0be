"""The server side of scripting: the script clients, a run's effects on their way to the
AOF, and the event pump that keeps other clients served while a script is busy.

``ScriptSupport`` is what ``sluice.scripting.runner.Scripting`` asks of the server
(``ScriptServer``): a client with no connection for each engine (Redis's ``lua_client``),
the logging of a run's writes, and ``BusyPump``. A script client is marked ``is_script``:
``dispatch.after_call`` records the writes the AOF would log into the running script
(``redis.set_repl`` decides); when the script returns they go to the AOF, wrapped in
MULTI/EXEC when there are several (Redis 7's effects replication; EVAL itself is never
logged).

``BusyPump`` is Redis's ``processEventsWhileBlocked`` for a script past
``busy-reply-threshold``: see docs/scripting.md, "Long scripts".

Mirrors ``script.c`` (``scriptResetRun``'s propagation) and ``networking.c``'s
``processEventsWhileBlocked``.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from sluice.commands.context import Context
from sluice.scripting.run import ScriptRun

from .client import Client
from .connection import ClientProtocol
from .persistence import fork_writer

log = logging.getLogger("sluice")

if TYPE_CHECKING:
    from .app import Server


class ScriptSupport:
    """``runner.ScriptServer`` for one server."""

    __slots__ = ("server", "pump", "clients", "command_usec", "debug_children")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pump = BusyPump(server)
        self.clients: list[Client] = []  # the script clients (INFO counts their commands)
        # time of the commands scripts ran, inside their script's own (INFO subtracts it
        # from the commands' total: eventloop_duration_cmd_sum)
        self.command_usec = 0
        self.debug_children: list[int] = []  # SCRIPT DEBUG YES sessions (forked)

    # -- the Lua debugger (scripting/ldb.py) ---------------------------------------------

    def debug_fd(self, client: Context) -> int:
        """The client's socket, for a debugging session's blocking I/O; -1 over TLS (the
        session reads and writes the socket itself, as Redis's does)."""
        t = cast(Client, client).transport
        if t is None or getattr(t, "_ssl_protocol", None) is not None or \
                t.get_extra_info("sslcontext") is not None:
            return -1
        sock = t.get_extra_info("socket")
        try:
            return int(sock.fileno()) if sock is not None else -1
        except (OSError, ValueError):
            return -1

    def fork_debug(self, client: Context, work: Callable[[], None]) -> int:
        """SCRIPT DEBUG YES: a child runs ``work`` (the session) on a copy of the data set
        and exits; here the client's connection is closed, the child has it now
        (``ldbStartSession``). Returns the child's pid, or -1."""
        pid = fork_writer(self.server, work)
        if pid > 0:
            self.debug_children.append(pid)
            log.info("Redis forked for debugging eval")
            self.server.close_client(cast(Client, client))
        return pid

    def reap_debug_children(self) -> None:
        """The cron's check on forked sessions that ended."""
        for pid in list(self.debug_children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.debug_children.remove(pid)
                log.info("Lua debugging session child exiting")

    def kill_debug_sessions(self) -> None:
        """At shutdown, as Redis's ldbKillForkedSessions."""
        for pid in self.debug_children:
            log.info("Killing debugging session %d", pid)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        self.debug_children = []

    def new_script_client(self) -> Client:
        c = Client(self.server, 0, None)
        c.addr = "lua"
        c.laddr = "lua"
        c.authenticated = True
        c.in_exec = True  # scripts never block (CLIENT_DENY_BLOCKING)
        c.is_script = True  # dispatch.after_call records its writes into the running script
        self.clients.append(c)
        return c

    def script_busy(self, run: ScriptRun) -> None:
        self.server.script_busy = True
        self.pump.serve(run)

    def script_ended(self, run: ScriptRun) -> None:
        """Called when the run wrote, timed out, or met SHUTDOWN NOSAVE."""
        server = self.server
        aof = server.aof
        effects = run.effects
        if aof is not None and effects:
            if len(effects) > 1:
                aof.begin_multi(effects[0][0])
                for db_id, argv in effects:
                    aof.feed(db_id, [argv])
                aof.end_multi()
            else:
                aof.feed(effects[0][0], [effects[0][1]])
            caller = run.caller
            if isinstance(caller, Client):  # the offset its WAITAOF waits for
                caller.woff = server.repl.master_repl_offset
        if run.timedout:
            server.script_busy = False
            self.pump.finish()
        if run.shutdown:
            server.request_shutdown()


class _PumpTransport:
    """A transport for a connection accepted while a script is busy (before the loop can
    adopt it): writes go straight to the socket."""

    __slots__ = ("sock", "closed", "peer", "local")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False
        try:
            self.peer = sock.getpeername()
            self.local = sock.getsockname()
        except OSError:
            self.peer = self.local = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closed:
            return
        view = memoryview(bytes(data))
        while view:
            try:
                n = self.sock.send(view)
            except BlockingIOError:
                select.select([], [self.sock], [], 0.05)
                continue
            except OSError:
                self.closed = True
                return
            view = view[n:]

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"socket": self.sock, "peername": self.peer, "sockname": self.local}.get(
            name, default)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()

    def is_closing(self) -> bool:
        return self.closed

    def set_write_buffer_limits(self, high: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class BusyPump:
    """Serve clients while a script is past busy-reply-threshold (the loop is blocked in it).

    Polls the listeners and the plain TCP / Unix clients with a zero timeout; reads with
    ``os.read`` into each client's request reader and runs what is complete through the
    normal path (dispatch answers BUSY to anything not ``allow-busy``); replies go out with
    ``transport.write``, which sends at once. TLS clients wait for the script to end."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.accepted: list[tuple[socket.socket, Client]] = []
        self.listen_socks: dict[int, socket.socket] = {}

    def _listeners(self) -> dict[int, socket.socket]:
        if not self.listen_socks:
            for srv in self.server.listeners:
                if getattr(srv, "_ssl_context", None) is not None:
                    continue
                for s in srv.sockets or ():
                    fd = s.fileno()
                    try:
                        dup = socket.socket(fileno=os.dup(fd))
                    except OSError:
                        continue
                    dup.setblocking(False)
                    self.listen_socks[fd] = dup
        return self.listen_socks

    def serve(self, run: ScriptRun) -> None:
        server = self.server
        poller = select.poll()
        fds: dict[int, socket.socket | Client] = {}
        for fd, lsock in self._listeners().items():
            poller.register(fd, select.POLLIN)
            fds[fd] = lsock
        for client in list(server.clients.values()):
            if client is run.caller or client.closed or client.transport is None:
                continue
            transport = client.transport
            if getattr(transport, "_ssl_protocol", None) is not None or \
                    transport.get_extra_info("sslcontext") is not None:
                continue
            sock = transport.get_extra_info("socket")
            if sock is None:
                continue
            try:
                fd = sock.fileno()
            except (OSError, ValueError):
                continue
            if fd < 0:
                continue
            poller.register(fd, select.POLLIN)
            fds[fd] = client
        for lsock, client in self.accepted:
            if not client.closed:
                poller.register(lsock.fileno(), select.POLLIN)
                fds[lsock.fileno()] = client
        try:
            events = poller.poll(0)
        except OSError:
            return
        for fd, _ in events:
            target = fds.get(fd)
            if isinstance(target, socket.socket):
                self._accept(target)
            elif target is not None:
                self._read(target, fd)
        for client in list(server.pending_writes):
            if client is not run.caller:
                client.flush()
        server.pending_writes = [c for c in server.pending_writes if c is run.caller]

    def _accept(self, lsock: socket.socket) -> None:
        try:
            sock, _ = lsock.accept()
        except OSError:
            return
        sock.setblocking(False)
        client = self.server.new_client(_PumpTransport(sock))  # type: ignore[arg-type]
        peer = sock.getpeername() if sock.family != socket.AF_UNIX else "/unix"
        client.addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.accepted.append((sock, client))

    def _read(self, client: Client, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.server.close_client(client)
            return
        client.reader.feed(data)
        self.server.query_buffers[client] = None  # feed() gave it a query buffer of its own
        client.net_input_bytes += len(data)
        if client.bstate is None:
            self.server.process_input(client)

    def finish(self) -> None:
        """The script ended: hand connections accepted meanwhile to the event loop."""
        accepted, self.accepted = self.accepted, []
        for _, s in self.listen_socks.items():
            s.close()
        self.listen_socks = {}
        loop = self.server.loop
        for sock, client in accepted:
            if client.closed:
                continue

            def factory(client: Client = client) -> ClientProtocol:
                return ClientProtocol(self.server, adopt=client)

            if loop is not None:
                loop.create_task(loop.connect_accepted_socket(factory, sock))
