"""The scripting state of one server: the two Lua engines, EVAL's script cache, the function
libraries, and the script running now. ``ctx.server.scripting`` is this object, seen by
handlers through ``commands.context.Scripting``.

``Scripting`` runs what the handlers of ``commands/scripting.py`` ask for: it finds the
script or function, prepares the run (Redis's ``scriptPrepareForRun``: shebang flags, the
``*_RO`` commands, disk errors), runs it in the engine and turns the result into the reply.
It is the engine's ``ScriptHost``: ``script_call`` is Redis's ``scriptCall`` (lookup, arity,
``noscript``, ACL as the calling user, writes refused from read-only runs or on disk errors)
and then enters ``ctx.server.call``, dispatch's choke point, on the script client, so command
stats, errors, the slow log, MONITOR, WATCH and AOF propagation are kept by the same code as
for any client.

What only the server can do (a client without a connection, recording a run's effects for
the AOF, serving other clients from the hook of a busy script) it asks of a ``ScriptServer``
(``server/scripting.py``). Nothing here imports ``sluice.server``.

Invariants: one script runs at a time (``run``); the script client's database is the
caller's at the start of each run and its user the caller's; a run that wrote cannot be
killed; EVAL and FCALL themselves are never logged (their effects are).

Mirrors ``script.c`` (the run context, ``scriptCall`` and its ``scriptVerify*`` steps),
``eval.c`` (``evalGenericCommand``) and ``functions.c`` (``fcallCommandGeneric``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NoReturn, Protocol

from sluice.commands import errors
from sluice.commands.context import Command, Context, Reply, ServerFacade
from sluice.commands.errors import CommandError, denial_message
from sluice.commands.spec import F
from sluice.protocol import OK, Raw, encode

from .convert import LuaValue
from .engine import LuaEngine
from .functions import Function, FunctionLibraries, Library, LibraryError
from .ldb import DebugIO, LdbSession
from .run import ALLOW_OOM, EVAL_COMPAT_MODE, NO_WRITES, CountedError, ScriptError, ScriptRun
from .scripts import EvalScript, EvalScripts, ScriptCompileError

log = logging.getLogger("sluice")

_LOG_LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
_PY_LEVELS = (logging.DEBUG, logging.INFO, logging.INFO, logging.WARNING)
# Flags of a command that redis.call must look at before running it (scriptCall's checks).
_WRITES = F.WRITE | F.MAY_REPLICATE
_CHECKED = F.NOSCRIPT | _WRITES | F.DENYOOM


class ScriptServer(Protocol):
    """What scripting needs of the server beyond a handler's ``Context``
    (``server.scripting.ScriptSupport``)."""

    def new_script_client(self) -> Context: ...  # no connection, never blocks (lua_client)
    def script_busy(self, run: ScriptRun) -> None: ...  # past the threshold: serve others
    def script_ended(self, run: ScriptRun) -> None: ...  # it wrote, timed out or must stop
    def debug_fd(self, client: Context) -> int: ...  # the client's socket; -1 over TLS
    def fork_debug(self, client: Context,
                   work: Callable[[], None]) -> int: ...  # SCRIPT DEBUG YES; pid or -1


class Scripting:
    """Engines, the script cache, the libraries and the running script (``server.scripting``)."""

    __slots__ = ("config", "host", "run", "evicted_scripts", "disable_deny_scripts", "_eval",
                 "_functions", "scripts", "functions", "_eval_client", "_function_client",
                 "_table", "_names")

    def __init__(self, config: LuaSettings, host: ScriptServer) -> None:
        self.config = config
        self.host = host
        self.run: ScriptRun | None = None  # the script running now
        self.evicted_scripts = 0  # INFO evicted_scripts: EVAL bodies pushed out of the LRU
        self.disable_deny_scripts = False  # DEBUG SET-DISABLE-DENY-SCRIPTS (tests only)
        self._eval: LuaEngine | None = None  # created on first use, dropped by SCRIPT FLUSH
        self._functions: LuaEngine | None = None
        self.scripts = EvalScripts(self)
        self.functions = FunctionLibraries(self)
        self._eval_client: Context | None = None  # the script clients (Redis's lua_client)
        self._function_client: Context | None = None
        # redis.call's lookup: the names as scripts send them, for rows without subcommands
        # (filled as they are met; emptied when a run finds another table object).
        self._table: object = None
        self._names: dict[bytes, Command] = {}

    # -- engines, created on first use ---------------------------------------------------

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

    def reset_eval(self) -> None:
        """SCRIPT FLUSH: a fresh runtime (Redis's scriptingReset)."""
        self._eval = None

    def reset_functions(self) -> None:
        self._functions = None

    def vm_memory(self) -> tuple[int, int]:
        """Bytes held by the eval and the functions Lua runtimes (INFO used_memory_vm_*)."""
        ev = self._eval.used_memory() if self._eval is not None else 0
        fn = self._functions.used_memory() if self._functions is not None else 0
        return ev, fn

    def functions_memory(self) -> int:
        """The libraries' code and names (INFO used_memory_functions), roughly as Redis."""
        return sum(len(lib.code) + len(lib.name) + 64 * (1 + len(lib.functions))
                   for lib in self.functions.libraries.values())

    # -- ScriptHost (the engine's callbacks) -----------------------------------------------

    @property
    def busy_reply_threshold(self) -> int:
        return self.config.busy_reply_threshold

    def deprecated_api(self) -> bool:
        return self.config.lua_enable_deprecated_api

    def script_log(self, level: int, message: bytes) -> None:
        if level >= _LOG_LEVELS.get(self.config.loglevel, 2):
            log.log(_PY_LEVELS[level], "%s", message.decode(errors="replace"))

    def script_busy(self, run: ScriptRun) -> None:
        self.host.script_busy(run)

    def script_call(self, run: ScriptRun, argv: list[bytes]) -> Reply:
        """scriptCall: the checks Redis makes for a command from a script, then ``call``.
        Raises ``ScriptError`` for a command refused before it ran (counted as Redis's
        afterErrorReply and a rejected call)."""
        cmd = self._names.get(argv[0])
        if cmd is None:
            cmd = self._lookup(run.server, argv)
        else:
            arity = cmd.arity
            if (arity > 0 and arity != len(argv)) or len(argv) < -arity:
                self._rejected(run, cmd, errors.SCRIPT_WRONG_ARITY)
        flags = cmd.flags
        if flags & _CHECKED:
            if flags & F.NOSCRIPT and not self.disable_deny_scripts:
                self._rejected(run, cmd, errors.SCRIPT_NOSCRIPT)
            if run.server.acl is not None:
                self._check_acl(run, cmd, argv)
            if run.read_only and flags & _WRITES:  # may-replicate counts (PUBLISH ...)
                self._rejected(run, cmd, errors.SCRIPT_READ_ONLY)
            if flags & F.WRITE and not run.write_dirty:
                disk_error = run.server.disk_error
                if disk_error is not None:
                    self._rejected(run, cmd, disk_error.encode())
                if run.server.config.min_replicas_to_write \
                        and not run.server.repl.good_replicas_ok():
                    # (reachable only for scripts without flags: see _execute)
                    self._rejected(run, cmd, errors.NOREPLICAS.encode())
            # scriptVerifyOOM: over maxmemory when the script began (nothing evictable),
            # its first write may not be one that grows the data set, unless allow-oom
            if (flags & F.DENYOOM and not run.write_dirty and not run.allow_oom
                    and run.server.pre_command_oom and run.server.config.maxmemory):
                self._rejected(run, cmd, errors.OOM.encode())
            if flags & F.WRITE:
                run.write_dirty = True
        elif run.server.acl is not None:
            self._check_acl(run, cmd, argv)
        return run.server.call(run.client, cmd, argv)

    def _lookup(self, server: ServerFacade[Context], argv: list[bytes]) -> Command:
        cmd = server.table.get(argv[0].lower())
        if cmd is None:
            raise ScriptError(errors.SCRIPT_UNKNOWN_COMMAND)
        if cmd.subcommands:
            sub = cmd.subcommands.get(argv[1].lower()) if len(argv) >= 2 else None
            if sub is None:
                if len(argv) >= 2:
                    raise ScriptError(errors.SCRIPT_UNKNOWN_COMMAND)
                self._rejected_no_run(server, cmd, errors.SCRIPT_WRONG_ARITY)
            cmd = sub
        elif len(self._names) < 1024:
            self._names[argv[0]] = cmd
        arity = cmd.arity
        if (arity > 0 and arity != len(argv)) or len(argv) < -arity:
            self._rejected_no_run(server, cmd, errors.SCRIPT_WRONG_ARITY)
        return cmd

    def _rejected(self, run: ScriptRun, cmd: Command, message: bytes) -> NoReturn:
        self._rejected_no_run(run.server, cmd, message)

    @staticmethod
    def _rejected_no_run(server: ServerFacade[Context], cmd: Command,
                         message: bytes) -> NoReturn:
        """Refused before it ran: counted as Redis's afterErrorReply + rejected call."""
        cmd.rejected_calls += 1
        server.count_error(message)
        raise ScriptError(b"-" + message)

    def _check_acl(self, run: ScriptRun, cmd: Command, argv: list[bytes]) -> None:
        """scriptVerifyACL: as the calling user; a denial goes to ACL LOG (context lua)."""
        manager = run.server.acl_manager
        user = manager.users.get(run.caller.user)
        if user is None:
            return
        res, idx = user.check(cmd, argv)
        if res == errors.ACL_OK:
            return
        obj = cmd.name.encode() if res == errors.DENIED_CMD else argv[idx]
        manager.add_log(run.client, res, b"lua", obj, user.name, cmd)
        msg = denial_message(res, user.name, cmd.name, None).removeprefix(b"NOPERM ")
        self._rejected(run, cmd, errors.SCRIPT_ACL_FAILURE + msg)

    def acl_check_cmd(self, run: ScriptRun, argv: list[bytes]) -> bytes | bool:
        """redis.acl_check_cmd: may the calling user run ``argv``; or the error to raise."""
        table = run.server.table
        cmd = table.get(argv[0].lower())
        if cmd is not None and cmd.subcommands and len(argv) >= 2:
            cmd = cmd.subcommands.get(argv[1].lower())
        if cmd is None or cmd.handler is None:
            return b"Invalid command passed to redis.acl_check_cmd()"
        if (cmd.arity > 0 and cmd.arity != len(argv)) or len(argv) < -cmd.arity:
            return b"Wrong number of args for redis.acl_check_cmd()"
        user = run.server.acl_manager.users.get(run.caller.user)
        if user is None:
            return False
        return user.check(cmd, argv)[0] == errors.ACL_OK

    # -- running -------------------------------------------------------------------------

    def _client(self, eval_mode: bool) -> Context:
        client = self._eval_client if eval_mode else self._function_client
        if client is None:
            client = self.host.new_script_client()
            if eval_mode:
                self._eval_client = client
            else:
                self._function_client = client
        return client

    def _execute(self, caller: Context, engine: LuaEngine, fn: LuaValue, funcname: bytes,
                 eval_mode: bool, script_flags: int, ro: bool, keys: list[bytes],
                 args: list[bytes]) -> Reply:
        """scriptPrepareForRun, the run, and what follows it: the reply for the caller."""
        server = caller.server
        compat = script_flags & EVAL_COMPAT_MODE
        if not compat and not script_flags & NO_WRITES:
            if server.disk_error is not None:
                raise CommandError(errors.SCRIPT_MISCONF)
            if ro:
                raise CommandError(errors.RO_WITH_WRITE_FLAG)
            if server.config.min_replicas_to_write and not server.repl.good_replicas_ok():
                raise CommandError(errors.NOREPLICAS)  # a script that may write: refused
        read_only = ro or (not compat and bool(script_flags & NO_WRITES))
        allow_oom = not compat and bool(script_flags & ALLOW_OOM)
        client = self._eval_client if eval_mode else self._function_client
        if client is None:
            client = self._client(eval_mode)
        client.db = caller.db
        client.user = caller.user
        client.resp3 = False
        if server.table is not self._table:  # redis.call's names cache the live table's rows
            self._table = server.table
            self._names = {}
        run = ScriptRun(caller, client, server, funcname, eval_mode, read_only, allow_oom)
        self.run = run  # the script client's writes are recorded into it (dispatch)
        clock = server.keyspace.clock
        froze = clock.frozen_us is None  # inside EXEC the transaction's time stands already
        if froze:
            clock.freeze()  # the script's commands see the time it started (Redis 7)
        try:
            reply = engine.call(run, fn, keys, args)
        finally:
            if froze:
                clock.thaw()
            self.run = None
            if run.effects or run.timedout or run.shutdown:
                self.host.script_ended(run)
        caller.rewrite_argv()  # EVAL / FCALL themselves are never logged: their effects are
        if type(reply) is CountedError:
            cmd = caller.cmd
            if cmd is not None:
                cmd.failed_calls += 1  # the error was counted where it happened
            return Raw(reply)
        return reply

    def eval(self, caller: Context, body: bytes, evalsha: bool, read_only: bool,
             keys: list[bytes], args: list[bytes]) -> Reply:
        """EVAL / EVALSHA / EVAL_RO / EVALSHA_RO (evalGenericCommand)."""
        scripts = self.scripts
        if evalsha:
            script = scripts.get(body)
            if script is None:
                raise CommandError(errors.NOSCRIPT)
            sha = script.sha
        else:
            script = self._create(body, from_eval=True)
            sha = script.sha
        if script.evictable:
            scripts.touch(sha)
        engine = self._eval or self.eval_engine
        return self._execute(caller, engine, script.fn, sha, True, script.flags, read_only,
                             keys, args)

    def eval_debug(self, caller: Context, body: bytes, read_only: bool, keys: list[bytes],
                   args: list[bytes]) -> Reply:
        """EVAL after SCRIPT DEBUG YES / SYNC (``evalGenericCommandWithDebugging``): the run
        with the debugger (ldb.py), ``<endsession>``, then the reply, then the connection is
        closed. YES runs it in a forked child, so its writes are not kept."""
        forked = caller.lua_debug == b"yes"
        fd = self.host.debug_fd(caller)
        if fd < 0:
            raise CommandError(errors.SCRIPT_DEBUG_TLS)
        session = LdbSession(DebugIO(fd), body, forked, self.config.busy_reply_threshold)

        def run() -> Reply:
            engine = self._eval or self.eval_engine
            engine.ldb = session
            try:
                return self.eval(caller, body, False, read_only, keys, args)
            finally:
                engine.ldb = None
                session.log(b"<endsession>")
                session.send_logs()

        if not forked:
            log.info("Redis synchronous debugging eval session started")
            try:
                return run()
            finally:
                log.info("Redis synchronous debugging eval session ended")
                caller.lua_debug = b""
                caller.closing = True  # the end of the session (CLIENT_CLOSE_AFTER_REPLY)

        def child() -> None:
            try:
                reply = run()
            except CommandError as e:
                reply = e.reply
            session.io.write(encode(reply, caller.resp3))

        if self.host.fork_debug(caller, child) < 0:
            raise CommandError(errors.SCRIPT_DEBUG_FORK)
        return OK  # never sent: the connection is the child's now

    def fcall(self, caller: Context, name: bytes, read_only: bool, keys: list[bytes],
              args: list[bytes]) -> Reply:
        """FCALL / FCALL_RO (fcallCommandGeneric)."""
        f = self.functions.find(name)
        if f is None:
            raise CommandError(errors.FUNCTION_NOT_FOUND)
        return self._execute(caller, self.function_engine, f.fn, f.name, False, f.flags,
                             read_only, keys, args)

    def declared_flags(self, kind: str, ref: bytes) -> int | None:
        """The flags a script declares (None: none, EVAL's compatibility mode, or a script
        not known yet): ``kind`` eval (``ref`` the body), evalsha (a SHA1) or fcall (a
        function name). For evalGetCommandFlags / fcallGetCommandFlags."""
        if kind == "fcall":
            f = self.functions.find(ref)
            return None if f is None else f.flags
        if kind == "evalsha":
            script = self.scripts.get(ref) if len(ref) == 40 else None
            flags = EVAL_COMPAT_MODE if script is None else script.flags
        else:
            script = self.scripts.get_body(ref)
            if script is not None:
                flags = script.flags
            else:
                try:
                    flags = self.scripts.shebang_flags(ref)
                except ScriptCompileError:
                    return None
        return None if flags & EVAL_COMPAT_MODE else flags

    # -- SCRIPT --------------------------------------------------------------------------

    def _create(self, body: bytes, from_eval: bool) -> EvalScript:
        try:
            return self.scripts.create(body, from_eval)
        except ScriptCompileError as e:
            raise CommandError(e.message.decode(errors="surrogateescape")) from None

    def script_load(self, body: bytes) -> bytes:
        return self._create(body, from_eval=False).sha

    def script_exists(self, sha: bytes) -> bool:
        return self.scripts.get(sha) is not None

    def script_flush(self) -> int:
        n = len(self.scripts.cache)
        self.scripts.flush()
        return n

    @property
    def running(self) -> ScriptRun | None:
        return self.run

    def kill(self, eval_mode: bool | None) -> None:
        """SCRIPT KILL (True) / FUNCTION KILL (False) / SHUTDOWN NOSAVE (None)."""
        run = self.run
        if run is None:
            raise CommandError(errors.NOTBUSY)
        if eval_mode is None:
            run.killed = run.shutdown = True
            return
        if run.write_dirty:
            raise CommandError(errors.UNKILLABLE)
        if eval_mode != run.eval_mode:  # the other KILL: answered as the BUSY error
            raise CommandError(errors.BUSY_EVAL if run.eval_mode else errors.BUSY_FUNCTION)
        run.killed = True

    def busy_error(self) -> str | None:
        """The BUSY error other clients get while a script is past busy-reply-threshold."""
        run = self.run
        if run is None or not run.timedout:
            return None
        return errors.BUSY_EVAL if run.eval_mode else errors.BUSY_FUNCTION

    # -- FUNCTION ------------------------------------------------------------------------

    @property
    def libraries(self) -> Sequence[Library]:
        return list(self.functions.libraries.values())

    @property
    def function_count(self) -> int:
        return len(self.functions.functions)

    def find_function(self, name: bytes) -> Function | None:
        return self.functions.find(name)

    def function_load(self, code: bytes, replace: bool) -> bytes:
        try:
            return self.functions.load(code, replace)
        except LibraryError as e:
            raise _library_error(e) from None

    def function_delete(self, name: bytes) -> None:
        try:
            self.functions.delete(name)
        except LibraryError as e:
            raise _library_error(e) from None

    def function_flush(self) -> int:
        n = len(self.functions.functions)
        self.functions.flush()
        return n

    def function_dump(self) -> bytes:
        return self.functions.dump()

    def function_restore(self, payload: bytes, policy: bytes) -> None:
        try:
            self.functions.restore(payload, policy)
        except LibraryError as e:
            raise _library_error(e) from None


class LuaSettings(Protocol):
    """The configuration scripting reads (a part of ``commands.context.Settings``)."""

    @property
    def busy_reply_threshold(self) -> int: ...  # ms before a script makes others wait (BUSY)
    @property
    def lua_enable_deprecated_api(self) -> bool: ...  # setfenv, getfenv, newproxy
    @property
    def loglevel(self) -> str: ...  # redis.log's verbosity


def _library_error(e: LibraryError) -> CommandError:
    return CommandError(e.message.decode(errors="surrogateescape"))
