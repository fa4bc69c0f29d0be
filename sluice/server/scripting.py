"""The server side of scripting: the script clients, ``redis.call``'s way into dispatch, and
the event pump that keeps other clients served while a script is busy.

``Scripting`` implements ``sluice.scripting.engine.ScriptHost`` for the two Lua engines (EVAL
and functions). ``script_call`` is Redis's ``scriptCall``: lookup, arity, ``noscript``, ACL as
the calling user, writes refused from read-only runs or on disk errors, then
``dispatch.call`` on the script client, so command stats, errors, the slow log, MONITOR,
WATCH and AOF propagation are kept by the same code as for any client. While a script runs,
``server.aof`` is a ``_Effects`` recorder: the script's writes are fed to the real AOF when
it returns, wrapped in MULTI/EXEC when there are several (Redis 7's effects replication).

``BusyPump`` is Redis's ``processEventsWhileBlocked`` for a script past
``busy-reply-threshold``: see docs/scripting.md, "Long scripts".

Mirrors ``script.c`` (scriptCall and the verify* steps) and ``networking.c``'s
``processEventsWhileBlocked``.
"""

from __future__ import annotations

import logging
import os
import select
import socket
from typing import TYPE_CHECKING, Any

from sluice.commands.errors import CommandError
from sluice.commands.spec import F
from sluice.protocol import Raw
from sluice.scripting.engine import (
    PROPAGATE_AOF,
    LuaEngine,
    ScriptError,
    ScriptRun,
)
from sluice.scripting.functions import FunctionLibraries
from sluice.scripting.scripts import EvalScripts

from .client import Client
from .dispatch import call, lookup

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")

_LOG_LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
_PY_LEVELS = (logging.DEBUG, logging.INFO, logging.INFO, logging.WARNING)


class _Effects:
    """Stands in for ``server.aof`` while a script runs: records what the script's commands
    would log, in order, with their database."""

    __slots__ = ("run", "buf")

    def __init__(self, run: ScriptRun) -> None:
        self.run = run
        self.buf = b""

    def feed(self, db_id: int, argvs: list[list[bytes]]) -> None:
        if self.run.repl & PROPAGATE_AOF:
            for argv in argvs:
                self.run.effects.append((db_id, argv))

    def begin_multi(self, db_id: int) -> None:
        pass

    def end_multi(self) -> None:
        pass


class Scripting:
    """The scripting state of one server: engines, the script cache, libraries, the run."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.run: ScriptRun | None = None
        self.pump = BusyPump(server)
        self._eval: LuaEngine | None = None
        self._functions: LuaEngine | None = None
        self.scripts = EvalScripts(self)
        self.libraries = FunctionLibraries(self)
        self.evicted_scripts = 0
        self.eval_client: Client | None = None      # the script clients (Redis's lua_client)
        self.function_client: Client | None = None

    # -- engines, created on first use -------------------------------------------------------

    @property
    def eval_engine(self) -> LuaEngine:
        if self._eval is None:
            self._eval = LuaEngine("eval", self)
        return self._eval

    @property
    def function_engine(self) -> LuaEngine:
        if self._functions is None:
            self._functions = LuaEngine("function", self)
        return self._functions

    def vm_memory(self) -> tuple[int, int]:
        """Bytes held by the eval and the functions Lua runtimes (INFO used_memory_vm_*)."""
        ev = self._eval.used_memory() if self._eval is not None else 0
        fn = self._functions.used_memory() if self._functions is not None else 0
        return ev, fn

    def functions_memory(self) -> int:
        """The libraries' code and names (INFO used_memory_functions), roughly as Redis."""
        return sum(len(lib.code) + len(lib.name) + 64 * (1 + len(lib.functions))
                   for lib in self.libraries.libraries.values())

    def reset_eval(self) -> None:
        """SCRIPT FLUSH: a fresh runtime (Redis's scriptingReset)."""
        self._eval = None

    def reset_functions(self) -> None:
        self._functions = None

    def new_script_client(self) -> Client:
        c = Client(self.server, 0, None)
        c.addr = "lua"
        c.laddr = "lua"
        c.authenticated = True
        c.in_exec = True  # scripts never block (CLIENT_DENY_BLOCKING)
        return c

    # -- ScriptHost ----------------------------------------------------------------------------

    @property
    def busy_reply_threshold(self) -> int:
        return int(self.server.config.busy_reply_threshold)

    def deprecated_api(self) -> bool:
        return bool(self.server.config.lua_enable_deprecated_api)

    def script_log(self, level: int, message: bytes) -> None:
        verbosity = _LOG_LEVELS.get(self.server.config.loglevel, 2)
        if level >= verbosity:
            log.log(_PY_LEVELS[level], "%s", message.decode(errors="replace"))

    def acl_check_cmd(self, run: ScriptRun, argv: list[bytes]) -> bytes | bool:
        found = lookup(self.server.table, argv)
        if isinstance(found, CommandError):
            if found.message.startswith(b"ERR wrong number"):
                return b"Wrong number of args for redis.acl_check_cmd()"
            return b"Invalid command passed to redis.acl_check_cmd()"
        manager = self.server.acl_manager
        user = manager.users.get(run.caller.user)
        if user is None:
            return False
        res, _ = user.check(found, argv)
        return bool(res == 0)

    def script_call(self, run: ScriptRun, argv: list[bytes]) -> Any:
        """scriptCall: the checks Redis makes for a command from a script, then ``call``."""
        server = self.server
        client = run.client
        client.user = run.caller.user
        cmd = server.table.get(argv[0].lower())
        if cmd is not None and cmd.subcommands and len(argv) >= 2:
            cmd = cmd.subcommands.get(argv[1].lower())
            if cmd is None:
                raise ScriptError(b"Unknown Redis command called from script")
        if cmd is None:
            raise ScriptError(b"Unknown Redis command called from script")
        if (cmd.arity > 0 and cmd.arity != len(argv)) or len(argv) < -cmd.arity:
            self._rejected(cmd, b"ERR Wrong number of args calling Redis command from script")
        if cmd.flags & F.NOSCRIPT:
            self._rejected(cmd, b"ERR This Redis command is not allowed from script")
        acl = server.acl
        if acl is not None and client.user in acl.restricted:
            self._check_acl(client, cmd, argv)
        if run.read_only and cmd.flags & (F.WRITE | F.MAY_REPLICATE):
            self._rejected(cmd, b"ERR Write commands are not allowed from read-only scripts.")
        if cmd.flags & F.WRITE:
            if not run.write_dirty and server.disk_error is not None:
                self._rejected(cmd, server.disk_error.encode())
            run.write_dirty = True
        reply = call(server, client, cmd, argv)
        return reply

    def _rejected(self, cmd: Any, message: bytes) -> None:
        """Refused before it ran: counted as Redis's afterErrorReply + rejected call."""
        cmd.rejected_calls += 1
        self.server.count_error(message)
        raise ScriptError(b"-" + message)

    def _check_acl(self, client: Client, cmd: Any, argv: list[bytes]) -> None:
        from .acl import NOPERM_EXEC_REASONS, denial_message  # noqa: F401 (same package)

        manager = self.server.acl_manager
        user = manager.users[client.user]
        res, idx = user.check(cmd, argv)
        if res == 0:
            return
        obj = cmd.name.encode() if res == 1 else argv[idx]
        client.cmd = cmd
        manager.add_log(client, res, b"lua", obj, user.name)
        msg = denial_message(res, user, cmd, None).removeprefix(b"NOPERM ")
        self._rejected(cmd, b"ERR ACL failure in script: " + msg)

    def script_busy(self, run: ScriptRun) -> None:
        self.server.script_busy = True
        self.pump.serve(run)

    # -- running --------------------------------------------------------------------------------

    def execute(self, engine: LuaEngine, run: ScriptRun, fn: Any, keys: list[bytes],
                args: list[bytes]) -> Any:
        """Run a script with its effects recorded, then propagate them (MULTI/EXEC when there
        are several); returns the reply for the caller."""
        server = self.server
        caller = run.caller
        client = run.client
        client.db = caller.db
        client.resp3 = False
        real_aof = server.aof
        if real_aof is not None:
            server.aof = _Effects(run)
        self.run = run
        try:
            reply = engine.call(run, fn, keys, args)
        finally:
            self.run = None
            if real_aof is not None:
                server.aof = real_aof
            if run.timedout:
                self.server.script_busy = False
                self.pump.finish()
        caller.propagate_argv = []  # EVAL / FCALL themselves are never logged
        if run.effects and real_aof is not None:
            effects = run.effects
            if len(effects) > 1:
                real_aof.begin_multi(effects[0][0])
                for db_id, argv in effects:
                    real_aof.feed(db_id, [argv])
                real_aof.end_multi()
            else:
                real_aof.feed(effects[0][0], [effects[0][1]])
        if run.shutdown:
            server.request_shutdown()
        return reply

    def kill(self, eval_mode: bool) -> Any:
        """SCRIPT KILL (eval_mode) / FUNCTION KILL."""
        run = self.run
        if run is None:
            raise CommandError("NOTBUSY No scripts in execution right now.")
        if run.write_dirty:
            raise CommandError(
                "UNKILLABLE Sorry the script already executed write commands against the "
                "dataset. You can either wait the script termination or kill the server in a "
                "hard way using the SHUTDOWN NOSAVE command.")
        if eval_mode and not run.eval_mode:
            raise CommandError(BUSY_FUNCTION)
        if not eval_mode and run.eval_mode:
            raise CommandError(BUSY_EVAL)
        run.killed = True
        return None

    def busy_error_text(self) -> str:
        run = self.run
        return BUSY_FUNCTION if run is not None and not run.eval_mode else BUSY_EVAL

    def busy_error(self) -> Raw | None:
        """The BUSY error for other clients while a timed-out script runs, or None."""
        run = self.run
        if run is None or not run.timedout:
            return None
        return Raw(b"-" + (BUSY_EVAL if run.eval_mode else BUSY_FUNCTION).encode() + b"\r\n")


BUSY_EVAL = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                 "SHUTDOWN NOSAVE.")


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

    def write(self, data: Any) -> None:
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

    def get_extra_info(self, name: str, default: Any = None) -> Any:
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
        fds: dict[int, Any] = {}
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
        client.net_input_bytes += len(data)
        if client.bstate is None:
            self.server.process_input(client)

    def finish(self) -> None:
        """The script ended: hand connections accepted meanwhile to the event loop."""
        from .connection import ClientProtocol

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
