"""The Lua engine: one locked-down lupa runtime and the script running in it.

``LuaEngine`` owns a ``lupa.lua51.LuaRuntime`` set up by ``sandbox.SANDBOX`` and the Python
side of the ``redis`` table (``redis.call`` & co.), the libraries and the count hook. Two
engines exist per server, as in Redis: ``kind="eval"`` for EVAL scripts and
``kind="function"`` for function libraries. Its owner (``runner.Scripting``) implements
``run.ScriptHost``: it runs one command from a script through the dispatch choke point,
serves other clients while a script is busy, logs, and answers ACL questions; the run
context is ``run.ScriptRun``.

Mirrors ``script_lua.c`` (``luaRedisGenericCommand``, ``luaCallFunction``, the hook),
``script.c`` (the run context) and ``eval.c`` / ``function_lua.c`` (compiling, loading).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable

import lupa.lua51 as lupa

from sluice import REDIS_VERSION
from sluice.commands.context import Reply
from sluice.protocol import ErrorReply, Raw, encode

from . import lib_bit, lib_struct
from .bytecode import without_tail_calls
from .convert import Converter, LuaValue, lua_number_to_int
from .ldb import LdbSession, catrepr
from .lib_cjson import CJson
from .lib_cmsgpack import CMsgpack
from .run import (
    FLAG_NAMES,
    PROPAGATE_AOF,
    PROPAGATE_REPL,
    ScriptError,
    ScriptHost,
    ScriptRun,
    counted_error,
)
from .sandbox import SANDBOX

log = logging.getLogger("sluice")

VERSION = REDIS_VERSION.encode()
VERSION_NUM = int.from_bytes(bytes(int(p) for p in REDIS_VERSION.split(".")), "big")

_2_63 = 1 << 63
KILLED_MESSAGE = b"Script killed by user with SCRIPT KILL..."
DEFAULT_MAX_MEMORY = 1 << 30
GC_CYCLE_PERIOD = 50  # runs between GC steps, and the step's size (script_lua.c)


class LuaRaise(Exception):
    """Raised by a Python function a script called: the Lua error it stands for (a Lua
    table, Redis's error object; or a library's message, which gets the caller's
    position as luaL_error gives it)."""

    def __init__(self, value: LuaValue, lib: bool = False) -> None:
        super().__init__()
        self.value = value
        self.lib = lib


def _raising(fn: Callable[..., LuaValue], multi: bool = False) -> Callable[..., LuaValue]:
    """A library helper returning (failed, value) or (failed, n, values...), as a callable
    that returns the values and raises the error."""
    if multi:
        def call_multi(*args: LuaValue) -> LuaValue:
            r = fn(*args)
            if r[0]:
                raise LuaRaise(r[2], lib=True)
            return r[2:]
        return call_multi

    def call(*args: LuaValue) -> LuaValue:
        failed, value = fn(*args)
        if failed:
            raise LuaRaise(value, lib=True)
        return value
    return call


# -- math.random: Redis's redisLrand48, one generator for the process ---------------------------

_rand_state = 0x1234ABCD330E


def _lrand48() -> int:
    global _rand_state
    _rand_state = (0x5DEECE66D * _rand_state + 0xB) & ((1 << 48) - 1)
    return _rand_state >> 17


def _srand48(seed: LuaValue) -> None:
    global _rand_state
    s = int(seed) & 0xFFFFFFFF
    _rand_state = (s << 16) | 0x330E


def sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


def _unpacked(packed: LuaValue) -> list[LuaValue]:
    """The values of a ``{n = count, ...}`` table, nils included, in order."""
    return [packed[i] for i in range(1, int(packed[b"n"]) + 1)]


def _deny_attributes(obj: LuaValue, name: LuaValue, setting: bool) -> LuaValue:
    raise AttributeError("access denied")


class LuaEngine:
    """One Lua runtime and the script running in it."""

    def __init__(self, kind: str, host: ScriptHost, max_memory: int = DEFAULT_MAX_MEMORY
                 ) -> None:
        self.kind = kind
        self.host = host
        self._script_call = host.script_call  # redis.call's way in, bound once
        self.run: ScriptRun | None = None
        self.loading_deadline = 0.0   # FUNCTION LOAD's time limit (monotonic), or 0
        self.registered: list[tuple[bytes, LuaValue, bytes | None, int]] | None = None
        self.ldb: LdbSession | None = None  # the Lua debugger's session of this run (ldb.py)
        self.lua = lupa.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                   register_eval=False, register_builtins=False,
                                   attribute_filter=_deny_attributes, max_memory=max_memory)
        self.cjson = CJson(self.lua)
        self.msgpack = CMsgpack(self.lua)
        py = self._bridge()
        self._fill_libraries(py)
        # The chunk's name is "=sluice" so the error handler skips our frames.
        fn = self.lua.eval("function(src) return assert(loadstring(src, '=sluice')) end")(
            SANDBOX.encode())
        env = fn(py, kind.encode())
        self.env = env
        self.shape = env[b"shape"]
        self.cjson.attach(env)
        self.msgpack.attach(env)
        self.conv = Converter(self.lua, env)
        # A GC step of 50 every 50 runs, compiles and library loads (Redis's luaGC): without
        # it a long run of small scripts leaves garbage that a full cycle collects late, and
        # used_memory_lua grows.
        self._gc_step = self.lua.eval("function() collectgarbage('step', 50) end")
        self._gc_count = 0
        env[b"lock"]()
        self._run_eval = env[b"run_eval"]
        self._run_function = env[b"run_function"]
        self._run_eval_debug = env[b"run_eval_debug"]
        self._compile = env[b"compile"]
        self._load_library = env[b"load_library"]

    # -- the bridge the sandbox wraps ----------------------------------------------------------

    def _bridge(self) -> LuaValue:
        py = self.lua.table_from({
            b"call": self._call_raise,
            b"pcall": self._call_noraise,
            b"call_packed": self._call_packed,
            b"pcall_packed": self._pcall_packed,
            b"no_tailcalls": without_tail_calls,
            b"unwrap": self._unwrap,
            b"lrand48": _lrand48,
            b"srand48": _srand48,
            b"log": self._log,
            b"setresp": self._setresp,
            b"set_repl": self._set_repl,
            b"sha1hex": self._sha1hex,
            b"acl_check_cmd": self._acl_check_cmd,
            b"err_table": self._err_table,
            b"register_function": self._register_function,
            b"hook": self._hook,
            b"ldb_line": self._ldb_line,
            b"ldb_cmd": self._ldb_cmd,
            b"ldb_log": self._ldb_log,
            b"ldb_send": lambda: self.ldb.send_logs() if self.ldb is not None else None,
            b"ldb_quote": catrepr,
            b"ldb_force": self._ldb_force,
            b"ldb_on": lambda: self.ldb is not None,
            b"ldb_source": lambda line: self.ldb.log_source_line(int(line))
            if self.ldb is not None else None,
            b"ldb_resumed": lambda: self.ldb.resumed() if self.ldb is not None else None,
            b"ldb_debug_line": self._ldb_debug_line,
            b"ldb_breakpoint": self._ldb_breakpoint,
            b"version": VERSION,
            b"version_num": VERSION_NUM,
            b"deprecated_api": bool(self.host.deprecated_api()),
        })
        return py

    def _fill_libraries(self, py: LuaValue) -> None:
        """The library helpers (the sandbox's closures look them up in ``py`` by name)."""
        cj, mp = self.cjson, self.msgpack
        helpers: dict[str, LuaValue] = {
            "cjson_encode": cj.encode, "cjson_decode": cj.decode,
            "cjson_encode_keep_buffer": cj.cfg_encode_keep_buffer,
            "cjson_encode_max_depth": cj.cfg_encode_max_depth,
            "cjson_decode_max_depth": cj.cfg_decode_max_depth,
            "cjson_encode_number_precision": cj.cfg_encode_number_precision,
            "cjson_encode_sparse_array": cj.cfg_encode_sparse_array,
            "cjson_encode_invalid_numbers": cj.cfg_encode_invalid_numbers,
            "cjson_decode_invalid_numbers": cj.cfg_decode_invalid_numbers,
            "cjson_decode_array_with_array_mt": cj.cfg_decode_array_with_array_mt,
            "msgpack_pack": mp.pack, "msgpack_unpack": mp.unpack,
            "msgpack_unpack_one": mp.unpack_one, "msgpack_unpack_limit": mp.unpack_limit,
            "struct_pack": lib_struct.pack, "struct_unpack": lib_struct.unpack,
            "struct_size": lib_struct.size,
        }
        for name, fn in lib_bit.FUNCTIONS.items():
            helpers["bit_" + name] = fn
        multi = {"msgpack_unpack", "msgpack_unpack_one", "msgpack_unpack_limit",
                 "struct_unpack"}
        for name, fn in helpers.items():
            py[name.encode()] = _raising(fn, name in multi)
        for name in ("log", "setresp", "set_repl", "sha1hex", "acl_check_cmd",
                     "register_function"):
            py[name.encode()] = self._raise_table(py[name.encode()])

    @staticmethod
    def _raise_table(fn: Callable[..., LuaValue]) -> Callable[..., LuaValue]:
        def call(*args: LuaValue) -> LuaValue:
            failed, value = fn(*args)
            if failed:
                raise LuaRaise(value)
            return value
        return call

    def _unwrap(self, e: LuaValue) -> LuaValue:
        """A Python exception that reached Lua, as the Lua error value it stands for."""
        if isinstance(e, LuaRaise):
            return e.value, e.lib
        if isinstance(e, BaseException):
            return str(e).encode(), True
        return e, False

    def _call_raise(self, *args: LuaValue) -> LuaValue:
        """redis.call: the reply as a Lua value; an error (refused or replied) raises.

        The hot path of every script, written flat (each Python call costs): strings and
        integers (nearly always) make the argv at once, bulk and integer replies go back
        as they are; anything else takes ``_call``'s general path."""
        run = self.run
        argv: list[bytes] | None = []
        for a in args:
            if type(a) is bytes:
                argv.append(a)  # type: ignore[union-attr]
            elif type(a) is int:  # lupa makes ints of integral numbers in int64's range
                argv.append(b"%d" % a)  # type: ignore[union-attr]
            else:
                argv = None
                break
        if argv and run is not None and self.ldb is None:
            try:
                reply = self._script_call(run, argv)
            except ScriptError as e:
                raise LuaRaise(self.conv.err_table(e.message, counted=True)) from None
            t = type(reply)
            if t is bytes or (t is int and -_2_63 <= reply < _2_63):  # type: ignore[operator]
                return reply
            if reply is None and not run.resp3:
                return False  # a null bulk is false in RESP2 (reply_to_lua's rule)
            value = self.conv.reply_to_lua(reply, run.resp3)
            if t is ErrorReply:
                raise LuaRaise(value)
            return value
        failed, value = self._call(True, *args)
        if failed:
            raise LuaRaise(value)
        return value

    def _call_noraise(self, *args: LuaValue) -> LuaValue:
        return self._call(False, *args)[1]

    def _call_packed(self, packed: LuaValue) -> LuaValue:
        """redis.call with more arguments than lupa's bridge takes: they come in one table
        ``{n = count, ...}`` (the sandbox's redis_call)."""
        return self._call_raise(*_unpacked(packed))

    def _pcall_packed(self, packed: LuaValue) -> LuaValue:
        return self._call(False, *_unpacked(packed))[1]

    def _err_table(self, text: bytes) -> LuaValue:
        return self.conv.err_table(text)

    def _call(self, raise_error: bool, *args: LuaValue) -> tuple[bool, LuaValue]:
        """redis.call / redis.pcall: returns (failed, value) for the Lua closure."""
        run = self.run
        conv = self.conv
        if not args:
            return True, conv.err_table(
                b"Please specify at least one argument for this redis lib call")
        argv = []
        for a in args:
            t = type(a)
            if t is bytes:
                argv.append(a)
            elif t is int:
                argv.append(b"%d" % a)
            elif t is float:
                if a == a and -(2.0**63) <= a < 2.0**63 and a == int(a):
                    argv.append(b"%d" % int(a))
                else:
                    argv.append(_fmt_double(a))
            else:
                return True, conv.err_table(
                    b"Lua redis lib command arguments must be strings or integers")
        if run is None:
            return True, conv.err_table(b"redis.call can only be called inside a script")
        ldb = self.ldb
        logging = ldb is not None and ldb.logging()
        if logging:
            ldb.log_command(argv)  # type: ignore[union-attr]
        try:
            reply = self.host.script_call(run, argv)
        except ScriptError as e:
            if logging:
                ldb.log(b"<error> " + e.message)  # type: ignore[union-attr]
            return raise_error, conv.err_table(e.message, counted=True)
        if logging:
            resp = encode(reply, run.resp3)
            if resp[:1] == b"-":  # an error reply is logged as an error first, as Redis's
                ldb.log(b"<error> " + resp[:-2])  # type: ignore[union-attr]
            ldb.log_reply(resp)  # type: ignore[union-attr]
        value = conv.reply_to_lua(reply, run.resp3)
        if type(reply) is ErrorReply:
            return raise_error, value
        return False, value

    def _log(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) < 2:
            return True, self.conv.err_table(b"redis.log() requires two arguments or more.")
        level = args[0]
        if type(level) is bytes:
            try:
                level = float(level)
            except ValueError:
                level = None
        if type(level) not in (int, float):
            return True, self.conv.err_table(b"First argument must be a number (log level).")
        level = int(level)
        if not 0 <= level <= 3:
            return True, self.conv.err_table(b"Invalid log level.")
        parts = []
        for a in args[1:]:
            if type(a) is bytes:
                parts.append(a)
            elif type(a) is int:
                parts.append(b"%d" % a)
            elif type(a) is float:
                parts.append(b"%.14g" % a)
        self.host.script_log(level, b" ".join(parts))
        return False, None

    def _setresp(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) != 1:
            return True, self.conv.err_table(b"redis.setresp() requires one argument.")
        n = args[0]
        if type(n) not in (int, float) or n not in (2, 3):
            return True, self.conv.err_table(b"RESP version must be 2 or 3.")
        if self.run is not None:
            self.run.resp3 = n == 3
            self.run.client.resp3 = n == 3
        return False, None

    def _set_repl(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) != 1:
            return True, self.conv.err_table(b"redis.set_repl() requires one argument.")
        flags = args[0]
        flags = int(flags) if type(flags) in (int, float) else 0
        if flags & ~(PROPAGATE_AOF | PROPAGATE_REPL):
            return True, self.conv.err_table(
                b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
        if self.run is not None:
            self.run.repl = flags
        return False, None

    def _sha1hex(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) != 1:
            return True, self.conv.err_table(b"wrong number of arguments")
        s = args[0]
        if type(s) is int:
            s = b"%d" % s
        elif type(s) is float:
            s = b"%.14g" % s
        elif type(s) is not bytes:
            s = b""
        return False, sha1hex(s)

    def _acl_check_cmd(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if not args:
            return True, self.conv.err_table(
                b"Please specify at least one argument for this redis lib call")
        argv = []
        for a in args:
            if type(a) is bytes:
                argv.append(a)
            elif type(a) in (int, float):
                argv.append(b"%d" % a if a == int(a) else _fmt_double(a))
            else:
                return True, self.conv.err_table(
                    b"Lua redis lib command arguments must be strings or integers")
        if self.run is None:
            return True, self.conv.err_table(b"redis.acl_check_cmd requires a script")
        verdict = self.host.acl_check_cmd(self.run, argv)
        if type(verdict) is bytes:
            return True, self.conv.err_table(verdict)
        return False, verdict

    def _hook(self) -> LuaValue:
        """The count hook: every 100,000 instructions (Redis's luaMaskCountHook)."""
        if self.loading_deadline:
            if time.monotonic() > self.loading_deadline:
                return self.conv.err_table(b"FUNCTION LOAD timeout")
            return None
        run = self.run
        if run is None:
            return None
        if not run.timedout:
            if (time.monotonic() - run.start) * 1000 < self.host.busy_reply_threshold:
                return None
            log.warning("Slow script detected: still in execution after %d milliseconds. "
                        "You can try killing the script using the %s command. Script name "
                        "is: %s.", run.duration_ms(),
                        "SCRIPT KILL" if run.eval_mode else "FUNCTION KILL",
                        run.funcname.decode(errors="replace"))
            run.timedout = True
        self.host.script_busy(run)
        if run.killed:
            log.info("Lua script killed by user with SCRIPT KILL.")
            return self.conv.err_table(KILLED_MESSAGE)
        return None

    # -- the Lua debugger (ldb.py) ---------------------------------------------------------------

    def _ldb_line(self, line: LuaValue, counted: LuaValue) -> bool:
        ldb = self.ldb
        return ldb is not None and ldb.line(int(line), bool(counted))

    def _ldb_cmd(self) -> tuple[LuaValue, ...]:
        ldb = self.ldb
        if ldb is None:
            return (b"go",)
        todo = ldb.command()
        if todo[0] == b"error":  # raised by the hook as the script's error
            return (b"error", self.conv.err_table(todo[1]))
        return todo

    def _ldb_log(self, entry: LuaValue, maxlen: LuaValue = False) -> None:
        ldb = self.ldb
        if ldb is not None:
            text = _text(entry)
            ldb.log_maxlen(text) if maxlen else ldb.log(text)

    def _ldb_force(self, on: LuaValue) -> None:
        if self.ldb is not None:
            self.ldb.force_log = bool(on)

    def _ldb_debug_line(self, text: LuaValue) -> None:
        ldb = self.ldb
        if ldb is not None:
            ldb.log(b"<debug> line %d: " % ldb.currentline + _text(text))

    def _ldb_breakpoint(self) -> bool:
        """redis.breakpoint(): stop at the next line, when a session runs."""
        if self.ldb is None:
            return False
        self.ldb.luabp = True
        return True

    # -- library registration (FUNCTION LOAD) --------------------------------------------------

    def _register_function(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if self.registered is None:
            return True, self.conv.err_table(
                b"redis.register_function can only be called on FUNCTION LOAD command")
        err = self.conv.err_table
        if not 1 <= len(args) <= 2:
            return True, err(b"wrong number of arguments to redis.register_function")
        name: bytes | None = None
        desc: bytes | None = None
        callback: LuaValue = None
        flags = 0
        if len(args) == 1:
            t = args[0]
            if lupa.lua_type(t) != "table":
                return True, err(b"calling redis.register_function with a single argument is "
                                 b"only applicable to Lua table (representing named arguments).")
            keys, values, n = self.env[b"items"](t)
            for i in range(1, n + 1):
                k, v = keys[i], values[i]
                if type(k) is int or type(k) is float:
                    k = b"%d" % k if k == int(k) else _fmt_double(k)
                if type(k) is not bytes:
                    return True, err(b"named argument key given to redis.register_function "
                                     b"is not a string")
                lk = k.lower()
                if lk == b"function_name":
                    s = _lua_string(v)
                    if s is None:
                        return True, err(b"function_name argument given to "
                                         b"redis.register_function must be a string")
                    name = s
                elif lk == b"description":
                    s = _lua_string(v)
                    if s is None:
                        return True, err(b"description argument given to "
                                         b"redis.register_function must be a string")
                    desc = s
                elif lk == b"callback":
                    if lupa.lua_type(v) != "function":
                        return True, err(b"callback argument given to "
                                         b"redis.register_function must be a function")
                    callback = v
                elif lk == b"flags":
                    if lupa.lua_type(v) != "table":
                        return True, err(b"flags argument to redis.register_function must be "
                                         b"a table representing function flags")
                    parsed = self._read_flags(v)
                    if parsed is None:
                        return True, err(b"unknown flag given")
                    flags = parsed
                else:
                    return True, err(b"unknown argument given to redis.register_function")
            if name is None:
                return True, err(b"redis.register_function must get a function name argument")
            if callback is None:
                return True, err(b"redis.register_function must get a callback argument")
        else:
            name = _lua_string(args[0])
            if name is None:
                return True, err(b"first argument to redis.register_function must be a string")
            if lupa.lua_type(args[1]) != "function":
                return True, err(b"second argument to redis.register_function must be a "
                                 b"function")
            callback = args[1]
        if not _valid_name(name):
            return True, err(b"Library names can only contain letters, numbers, or "
                             b"underscores(_) and must be at least one character long")
        if any(r[0] == name for r in self.registered):
            return True, err(b"Function already exists in the library")
        self.registered.append((name, callback, desc, flags))
        return False, None

    def _read_flags(self, t: LuaValue) -> int | None:
        flags = 0
        i = 1
        while True:
            v = t[i]
            if v is None:
                return flags
            if type(v) is not bytes:
                return None
            for bit, fname in FLAG_NAMES:
                if v.lower() == fname:
                    flags |= bit
                    break
            else:
                return None
            i += 1

    def load_library(self, body: bytes, timeout_ms: int
                     ) -> tuple[list[tuple[bytes, LuaValue, bytes | None, int]] | None, bytes]:
        """Run a library's code with the load-time API; (functions, b"") or (None, error)."""
        self.registered = []
        self.loading_deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else 0.0
        if not timeout_ms:
            self.loading_deadline = 1e18
        try:
            result = self._load_library(body)
        except lupa.LuaMemoryError:
            return None, b"Error registering functions: not enough memory"
        finally:
            registered, self.registered = self.registered, None
            self.loading_deadline = 0.0
            self._gc_tick()
        ok = result[0] if type(result) is tuple else result
        if ok:
            return registered, b""
        stage, error = result[1], result[2]
        if stage == b"compile":
            return None, b"Error compiling function: " + _text(error)
        if lupa.lua_type(error) == "table":
            msg = error[b"err"]
            msg = msg if type(msg) is bytes else b"ERR unknown error"
        else:
            msg = b"ERR " + _text(error)
        return None, b"Error registering functions: " + msg

    # -- compiling and running ------------------------------------------------------------------

    def compile(self, body: bytes, chunkname: bytes = b"@user_script") -> tuple[LuaValue, bytes]:
        """A compiled chunk, or (None, Lua's error message)."""
        try:
            result = self._compile(body, chunkname)
        except lupa.LuaMemoryError:
            return None, b"not enough memory"
        finally:
            self._gc_tick()
        if type(result) is tuple:
            fn, err = result[0], result[1]
            return fn, _text(err) if fn is None else b""
        return result, b""

    def call(self, run: ScriptRun, fn: LuaValue, keys: list[bytes],
             args: list[bytes]) -> Reply:
        """Run ``fn`` (a compiled EVAL body or a registered function) for ``run``; returns
        the reply for the caller (bytes / int / None / Raw, or an ErrorReply to count)."""
        self.run = run
        runner = self._run_eval if run.eval_mode else self._run_function
        if self.ldb is not None:
            runner = self._run_eval_debug
        try:
            ok, value = runner(fn, len(keys), *keys, *args)
        except lupa.LuaMemoryError:
            ok, value = False, b"not enough memory"
        except lupa.LuaError as e:  # an error inside the error handler itself
            ok, value = False, str(e).encode()
        finally:
            self.run = None
        # _gc_tick and _result's commonest case, inline (this runs once per EVAL / FCALL).
        self._gc_count += 1
        if self._gc_count >= GC_CYCLE_PERIOD:
            self._gc_count = 0
            self._gc_step()
        if ok and type(value) is int and -_2_63 <= value < _2_63:
            return value
        return self._result(run, ok, value)

    def _gc_tick(self) -> None:
        """Redis's luaGC: after every run, compile and library load, a step every 50."""
        self._gc_count += 1
        if self._gc_count >= GC_CYCLE_PERIOD:
            self._gc_count = 0
            self._gc_step()

    def _result(self, run: ScriptRun, ok: bool, value: LuaValue) -> Reply:
        if ok:
            t = type(value)
            if t is bytes:
                return bytes(value)  # already bytes: no copy
            if t is int or t is float:
                return lua_number_to_int(value)
            if value is None:
                return None
            caller_resp3 = bool(run.caller.resp3)
            out = bytearray()
            errors: list[tuple[bytes, bool]] = []
            self.conv.lua_to_resp(value, out, caller_resp3, run.resp3, errors)
            if errors and out[:1] == b"-":
                msg, counted = errors[0]
                return counted_error(msg) if counted else ErrorReply(msg)
            return Raw(bytes(out))
        # An error: the handler made it {err=, source=, line=} (memory errors bypass it).
        if lupa.lua_type(value) != "table":
            text = _text(value) if value is not None else b"execution failure"
            return ErrorReply(b"ERR Error running script " + run.funcname + b", "
                              + text[:100])
        shape = self.shape(value)
        if shape[0] == b"err":
            msg, source, line = shape[1], shape[2], shape[3]
        else:
            msg = b"ERR unknown error"
            source, line = self.env[b"errinfo"](value)
        if source is not None and line is not None:
            if type(line) is float:
                line = int(line)
            msg += b" script: " + run.funcname + b", on " + _text(source) + b":" + (
                b"%d" % line if type(line) is int else _text(line)) + b"."
        msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")
        if shape[0] == b"err" and shape[4]:
            return counted_error(msg)
        return ErrorReply(msg)

    def used_memory(self) -> int:
        return int(self.lua.get_memory_used() or 0)



def _fmt_double(v: float) -> bytes:
    """A Lua number that is not an integer, as Redis formats a redis.call argument
    (fpconv_dtoa: the shortest form that reads back the same)."""
    if v != v:
        return b"nan"
    if v in (float("inf"), float("-inf")):
        return b"inf" if v > 0 else b"-inf"
    r = repr(v)
    if "e" in r:
        mant, exp = r.split("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        digits = exp.lstrip("+-").lstrip("0") or "0"
        r = f"{mant}e{sign}{digits.zfill(2)}"
    return r.encode()


def _lua_string(v: LuaValue) -> bytes | None:
    if type(v) is bytes:
        return v
    if type(v) is int:
        return b"%d" % v
    if type(v) is float:
        return b"%.14g" % v
    return None


def _text(v: LuaValue) -> bytes:
    if type(v) is bytes:
        return v
    if v is None:
        return b"nil"
    return str(v).encode()


def _valid_name(name: bytes) -> bool:
    return bool(name) and all(c == 95 or 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122
                              for c in name)

