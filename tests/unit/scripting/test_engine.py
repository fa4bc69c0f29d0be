"""The Lua engine on its own: a fake host, the sandbox's walls, the libraries, conversions."""

from __future__ import annotations

from typing import Any

import pytest

from sluice.protocol import ErrorReply, Raw
from sluice.scripting.engine import LuaEngine
from sluice.scripting.lib_bit import FUNCTIONS as BIT
from sluice.scripting.lib_struct import pack, size, unpack
from sluice.scripting.run import ScriptError, ScriptRun
from sluice.scripting.scripts import extract_shebang, split_args


class Host:
    busy_reply_threshold = 5000

    def __init__(self) -> None:
        self.calls: list[list[bytes]] = []
        self.logged: list[tuple[int, bytes]] = []

    def script_call(self, run: ScriptRun, argv: list[bytes]) -> Any:
        self.calls.append(argv)
        if argv[0] == b"get":
            return b"value"
        if argv[0] == b"fail":
            return ErrorReply(b"ERR failed")
        raise ScriptError(b"Unknown Redis command called from script")

    def script_busy(self, run: ScriptRun) -> None:
        pass

    def acl_check_cmd(self, run: ScriptRun, argv: list[bytes]) -> bytes | bool:
        return True

    def script_log(self, level: int, message: bytes) -> None:
        self.logged.append((level, message))

    def deprecated_api(self) -> bool:
        return False


class Caller:
    resp3 = False


@pytest.fixture(scope="module")
def engine() -> LuaEngine:
    return LuaEngine("eval", Host())


def run(engine: LuaEngine, src: str, keys: tuple[bytes, ...] = (), args: tuple[bytes, ...] = ()
        ) -> Any:
    fn, err = engine.compile(src.encode())
    assert fn is not None, err
    caller: Any = Caller()  # only what the engine reads of a Context
    return engine.call(ScriptRun(caller, caller, caller, b"f" * 40, True, False, False), fn,
                       list(keys), list(args))


def test_values_and_conversions(engine: LuaEngine) -> None:
    assert run(engine, "return 1") == 1
    assert run(engine, "return 3.99") == 3
    assert run(engine, "return 'x'") == b"x"
    assert run(engine, "return nil") is None
    assert run(engine, "return {1, 'a', {true, false}, nil, 9}") == \
        Raw(b"*3\r\n:1\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n")
    assert run(engine, "return KEYS[1] .. ARGV[1]", (b"k",), (b"a",)) == b"ka"
    assert run(engine, "return redis.call('get', 'k')") == b"value"


@pytest.mark.parametrize("src,message", [
    ("return x", b"Script attempted to access nonexistent global variable 'x'"),
    ("x = 1", b"user_script:1: Attempt to modify a readonly table"),
    ("rawset(_G, 'x', 1)", b"ERR Attempt to modify a readonly table script:"),
    ("setmetatable(_G, {})", b"ERR Attempt to modify a readonly table"),
    ("getmetatable(_G).__index = {}", b"Attempt to modify a readonly table"),
    ("getmetatable('').__index = {}", b"Attempt to modify a readonly table"),
    ("redis.call = 1", b"Attempt to modify a readonly table"),
    ("string.rep = 1", b"Attempt to modify a readonly table"),
    ("table.insert(cjson, 1)", b"Attempt to modify a readonly table"),
    ("return loadstring(string.dump(function() return 1 end))()",
     b"attempt to call a nil value"),
    ("return setfenv", b"nonexistent global variable 'setfenv'"),
    ("return getfenv", b"nonexistent global variable 'getfenv'"),
    ("return newproxy", b"nonexistent global variable 'newproxy'"),
    ("return debug", b"nonexistent global variable 'debug'"),
    ("return python", b"nonexistent global variable 'python'"),
    ("return io", b"nonexistent global variable 'io'"),
    ("return require", b"nonexistent global variable 'require'"),
    ("return os.execute()", b"attempt to call field 'execute'"),
    ("return redis.log.__globals__", b"access denied"),
    # redis.call is a Lua function (the sandbox's packing wrapper), as Redis's is a function
    ("return redis.call.__globals__", b"attempt to index field 'call' (a function value)"),
    ("local t = {} for i = 1, 1e9 do t[i] = i end", b"not enough memory"),
    # Lua 5.1.5's unpack overflows its count and crashes the process on this range
    ("return {unpack({1,2,3}, -2, 2147483647)}", b"too many results to unpack"),
    ("error({})", b"ERR unknown error script: " + b"f" * 40 + b", on @user_script:1."),
    ("error({err='ERR table error'})", b"ERR table error script: "),
    ("return redis.call('nosuch')",
     b"ERR Unknown Redis command called from script script: " + b"f" * 40
     + b", on @user_script:1."),
])
def test_escapes_fail_with_redis_errors(engine: LuaEngine, src: str, message: bytes) -> None:
    reply = run(engine, src)
    text = bytes(reply)
    assert message in text, text
    assert run(engine, "return 'still alive'") == b"still alive"


def test_escape_via_loadstring_gets_the_sandbox(engine: LuaEngine) -> None:
    """Code loaded at run time and code in coroutines see the same locked globals."""
    assert b"readonly" in bytes(run(engine, "loadstring('y = 1')()"))
    assert b"nonexistent" in bytes(run(engine, "return loadstring('return debug')()"))
    out = run(engine, "local co = coroutine.create(function() return io end) "
                      "local ok, e = coroutine.resume(co) return e")
    assert b"nonexistent global variable 'io'" in out


def test_pcall_returns_the_error_string(engine: LuaEngine) -> None:
    assert run(engine, "local ok, e = pcall(redis.call, 'nosuch') return e") == \
        b"ERR Unknown Redis command called from script"
    assert run(engine, "return redis.pcall('fail')") == Raw(b"-ERR failed\r\n")


def test_random_is_redis_lrand48(engine: LuaEngine) -> None:
    a = run(engine, "math.randomseed(42) return tostring(math.random())")
    b = run(engine, "math.randomseed(42) return tostring(math.random())")
    c = run(engine, "return tostring(math.random())")
    assert a == b != c


def test_cjson(engine: LuaEngine) -> None:
    assert run(engine, "return cjson.encode({1, 2, {a='x/y'}})") == b'[1,2,{"a":"x\\/y"}]'
    assert run(engine, "return cjson.encode({})") == b"{}"
    assert run(engine, "return cjson.encode(0.1)") == b"0.1"
    assert b"excessively sparse" in bytes(run(engine, "return cjson.encode({[1]=1, [20]=2})"))
    assert run(engine, "cjson.decode_array_with_array_mt(true) "
                       "local r = cjson.encode(cjson.decode('[]')) "
                       "cjson.decode_array_with_array_mt(false) return r") == b"[]"
    assert b"readonly" in bytes(run(engine, "cjson.decode_array_with_array_mt(true) "
                                            "getmetatable(cjson.decode('[]')).x = 1"))


def test_struct_bit_and_shebang() -> None:
    assert pack(b">I2i4", 258, -2) == (False, b"\x01\x02\xff\xff\xff\xfe")
    assert unpack(b"<h", b"\xff\xff") == (False, 2, -1, 3)
    assert size(b"i") == (False, 4)
    assert BIT["tohex"](65535, -4) == (False, b"FFFF")
    assert BIT["bnot"](0) == (False, -1)
    assert BIT["tobit"](2**32 + 5) == (False, 5)
    assert extract_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1") == (3, 31)
    assert split_args(b'#!lua name="a b"') == [b"#!lua", b"name=a b"]


def test_runs_step_the_collector_as_redis() -> None:
    """10,000 small runs leave the runtime under 100 kB, as unit/scripting's "EVAL does not
    leak in the Lua stack" checks: Lua's own pace collects too late without the steps."""
    eng = LuaEngine("eval", Host())
    start = eng.used_memory()
    for _ in range(10000):
        assert run(eng, "return redis.call('get', KEYS[1])", (b"k",)) == b"value"
    assert eng.used_memory() < 100 * 1024, (start, eng.used_memory())


# -- many arguments, and tail calls ---------------------------------------------------------

@pytest.mark.parametrize("n", [4_095, 4_096, 7_990, 7_999])  # unpack gives 7,999 at most
def test_redis_call_takes_as_many_arguments_as_unpack_gives(engine: LuaEngine, n: int) -> None:
    """lupa's bridge refuses more than ~7,997 values (LUAI_MAXCSTACK); the sandbox's
    redis.call packs them past a threshold, so 8,000 arguments (unpack's most, after one
    more; the Tcl test's 8,001 after two) arrive whole and in order, for call and pcall."""
    host = engine.host
    assert isinstance(host, Host)
    host.calls.clear()
    src = f"local a = {{}} for i = 1, {n} do a[i] = i end a[3] = 'x' " \
          "redis.pcall('get', unpack(a)) return redis.call('get', unpack(a))"
    assert run(engine, src) == b"value"
    expected = [b"get", b"1", b"2", b"x", *(b"%d" % i for i in range(4, n + 1))]
    assert host.calls == [expected, expected]


def test_return_redis_call_keeps_the_scripts_line(engine: LuaEngine) -> None:
    """``return redis.call(...)`` is a tail call of a Lua function: compiled as a plain call
    (bytecode.py), so the error names the script's line, as Redis's C redis.call does."""
    reply = bytes(run(engine, "\n\nreturn redis.call('nosuch')"))
    assert reply.endswith(b", on @user_script:3.\r\n"), reply
    lib = bytes(run(engine, "local function f() return redis.call('nosuch') end\nreturn f()"))
    assert lib.endswith(b", on @user_script:1.\r\n"), lib


def test_without_tail_calls_rewrites_only_tail_calls() -> None:
    import lupa.lua51 as lupa

    from sluice.scripting.bytecode import OP_CALL, OP_TAILCALL, without_tail_calls

    lua = lupa.LuaRuntime(encoding=None)
    dump = lua.eval("function(s) return string.dump(assert(loadstring(s))) end")
    src = b"local function f(n) if n == 0 then return 'done' end return f(n - 1) end " \
          b"local t = {g = function(...) return select('#', ...) end} return f(3), t.g(1, 2)"
    chunk = dump(src)
    patched = without_tail_calls(chunk)
    assert patched is not None and len(patched) == len(chunk)
    # opcodes (low 6 bits of each little-endian instruction) differ only TAILCALL -> CALL
    diffs = [(a & 0x3F, b & 0x3F) for a, b in zip(chunk, patched, strict=True) if a != b]
    assert diffs and set(diffs) == {(OP_TAILCALL, OP_CALL)}
    assert without_tail_calls(patched) is None  # nothing left to change
    fn = lua.eval("function(c) return assert(loadstring(c)) end")(patched)
    assert fn() == (b"done", 2)
    assert without_tail_calls(dump(b"return 1")) is None  # no tail call
    assert without_tail_calls(b"\x1bLua\x52\x00junk") is None  # not a 5.1 chunk
    assert without_tail_calls(chunk[:-3]) is None  # truncated
