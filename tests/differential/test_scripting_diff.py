"""EVAL, EVALSHA, SCRIPT and FUNCTION against redis-server 8.6.3: reply bytes compared in
RESP2 and RESP3, for hand-picked scripts (conversions both ways, errors with their
``script: <sha>, on @user_script:<line>.`` suffixes, sandbox escapes, the libraries) and for
hypothesis-generated small scripts built from return values and redis.call."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, RawClient, wait_until

pytestmark = pytest.mark.differential

SCRIPTS = [
    "return 1", "return -3.9", "return 'x'", "return true", "return false", "return nil",
    "return {1, 2, {3, 'a'}, false, 5}", "return {1, nil, 3}", "return {ok='FINE'}",
    "return {err='MYERR bad'}", "return redis.error_reply('E1 x')", "return redis.error_reply('x')",
    "return redis.status_reply('OK2')", "return {double=3.5}", "return {big_number='123'}",
    "return {map={a=1}}", "return {set={a=true}}",
    "return {verbatim_string={format='txt', string='hi'}}",
    "redis.setresp(3); return {double=1.5}", "redis.setresp(3); return true",
    "redis.setresp(3); return false", "redis.setresp(3); return redis.call('get', 'nokey')",
    "redis.setresp(3); return {map={k='v'}}", "redis.setresp(3); return {set={x=true}}",
    "return redis.call('set', KEYS[1], ARGV[1])", "return redis.call('get', KEYS[1])",
    "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[1])",
    "return redis.call('get', 'nokey')", "return redis.call('nosuch')",
    "return redis.pcall('nosuch')", "return redis.call('incr', 'a', 'b')",
    "return redis.call('rpush', 'l', 'a', 'b'); ", "redis.call('rpush', 'l2', 'a'); "
    "return redis.call('lrange', 'l2', 0, -1)",
    "return redis.call('xadd', 's', '1-1', 'f', 'v')",
    "redis.call('xadd', 's2', '1-1', 'f', 'v'); return redis.call('xrange', 's2', '-', '+')",
    "redis.setresp(3); redis.call('xadd', 's3', '1-1', 'f', 'v'); "
    "return redis.call('xread', 'streams', 's3', '0')",
    "return redis.call('ping')", "return redis.pcall('select', 99)",
    "return redis.call('select', 99)", "return a", "a = 1", "rawset(_G, 'a', 1)",
    "setmetatable(_G, {})", "local g = getmetatable(_G); g.__index = {}",
    "redis.call = function() end", "cjson.encode = 1", "getmetatable('').__index = 1",
    "return loadstring(string.dump(function() return 1 end))()", "return print",
    "return dofile", "return loadfile", "return require", "return io", "return setfenv",
    "return os.execute()", "error('boom')", "error({err='CODE x'})",
    "return pcall(function() error('x') end)",
    "local ok, e = pcall(redis.call, 'nosuch'); return e",
    "return cjson.encode({1, 2, {a=1}})", "return cjson.encode({})",
    "return cjson.encode({a={1,2}, b='x/y'})", "return cjson.decode('[1,2,3]')",
    "return cjson.decode('{')", "return cjson.encode({[1]=1,[15]=2})",
    "return cjson.encode('a\\1\\127')", "return cjson.encode(1.5)",
    "return cjson.encode(0.1)", "return cjson.encode(1e20)",
    "return cmsgpack.pack({1, 2, 'x', {a=1}})", "return cmsgpack.pack(0.1, -1, 300, -300)",
    "return cmsgpack.unpack(cmsgpack.pack({1,2,3}))",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 0)}",
    "return struct.pack('>I2i4', 258, -2)", "return {struct.unpack('<h', '\\255\\255')}",
    "return struct.pack('q', 1)", "return bit.tohex(65535, -4)",
    "return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(3, 1), bit.bnot(0)}",
    "return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(1, 33)}",
    "return bit.tobit(2^32 + 5)", "return redis.sha1hex('abc')",
    "return redis.REDIS_VERSION", "return redis.REDIS_VERSION_NUM",
    "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", "return type(redis.call)",
    "return redis.setresp(4)", "return redis.log(redis.LOG_WARNING)",
    "return redis.call('get', 1.5)", "return redis.call('set', 'n', 3.0)",
    "return tostring(1/0)", "return 1/0", "return 0/0", "return 2^63",
    "return string.format('%d', 3)", "return #KEYS", "return redis.acl_check_cmd('get', 'x')",
    "return redis.acl_check_cmd('nosuch')", "return redis.set_repl(7)",
    "return redis.call('eval', 'return 1', 0)", "return redis.call('blpop', 'nolist', 0)",
    "return coroutine.resume(coroutine.create(function() return redis.call('ping') end))",
    "local t = {} t[1] = t return cmsgpack.pack(t)",
    # more arguments than lupa's bridge takes (packed by the sandbox), and tail calls of
    # redis.call, which must keep the script's line in errors
    "local a = {} for i = 1, 7999 do a[i] = 1 end return redis.call('lpush', KEYS[1], unpack(a))",
    "local a = {} for i = 1, 7999 do a[i] = 'x' end return redis.pcall('nosuch', unpack(a))",
    "local a = {} for i = 1, 7999 do a[i] = 'x' end return redis.call('nosuch', unpack(a))",
    "\n\nreturn redis.call('nosuch')",
    "local function f(n) if n == 0 then return redis.call('nosuch') end return f(n - 1) end\n"
    "return f(3)",
    "return loadstring('return redis.call(1)')()", "return type(redis.pcall)",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_reply(raw_pair: tuple[Any, Any], script: str) -> None:
    ours, theirs = raw_pair
    for c in (ours, theirs):
        c.call("SCRIPT", "FLUSH")
    args = ["EVAL", script, "1", "key1", "arg1"]
    assert ours.call(*args) == theirs.call(*args), script


FUNCTION_CASES = [
    [["FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function(k, a) "
      "return {k[1], a[1]} end)"], ["FCALL", "f1", "1", "k", "a"], ["FCALL", "F1", "0"],
     ["FCALL_RO", "f1", "0"], ["FUNCTION", "LIST"], ["FUNCTION", "LIST", "WITHCODE"],
     ["FUNCTION", "STATS"], ["FUNCTION", "DELETE", "lib1"], ["FUNCTION", "DELETE", "lib1"]],
    [["FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function{function_name='f2', "
      "callback=function() return redis.call('set', 'x', 1) end, flags={'no-writes'}}"],
     ["FCALL", "f2", "0"], ["FCALL_RO", "f2", "0"], ["FUNCTION", "LIST"]],
    [["FUNCTION", "LOAD", "#!lua name=lib3\nredis.call('ping')"],
     ["FUNCTION", "LOAD", "#!lua name=lib3\nreturn 1"],
     ["FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('f', 1)"],
     ["FUNCTION", "LOAD", "#!lua\nredis.register_function('f', function() end)"],
     ["FUNCTION", "LOAD", "#!nolua name=x\nredis.register_function('f', function() end)"],
     ["FUNCTION", "LOAD", "#!lua name=a-b\nredis.register_function('f', function() end)"],
     ["FUNCTION", "LOAD", "#!lua name=lib4\nlocal x = math.random()"],
     ["FUNCTION", "LOAD", "#!lua name=lib5 foo=bar\n"], ["FUNCTION", "LOAD", "no shebang"],
     ["FUNCTION", "LOAD", "#!lua name=lib6\nredis.register_function('f', function() end)\n"
      "redis.register_function('f', function() end)"]],
    [["EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'x', 1)", "0"],
     ["EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "0"],
     ["EVAL_RO", "return redis.call('set', 'x', 1)", "0"],
     ["EVAL_RO", "#!lua\nreturn 1", "0"], ["EVAL", "#!lua flags=bogus\nreturn 1", "0"],
     ["EVAL", "#!nolua\nreturn 1", "0"], ["EVAL", "#!lua", "0"],
     ["EVAL", "#!lua foo=bar\nreturn 1", "0"]],
    [["SCRIPT", "LOAD", "return 'hi'"], ["EVALSHA", "4b2e6e0ce5e8d1cd5e2e4e9e1c04b9e5d0b8d2e7", "0"],
     ["EVALSHA", "short", "0"], ["SCRIPT", "EXISTS", "a", "b"], ["EVAL", "return 1", "x"],
     ["EVAL", "return 1", "-1"], ["EVAL", "return 1", "2", "a"], ["SCRIPT", "FLUSH", "bad"],
     ["SCRIPT", "KILL"], ["FUNCTION", "KILL"], ["SCRIPT", "HELP"], ["FUNCTION", "HELP"],
     ["EVAL", "return 1 +", "0"], ["FUNCTION", "RESTORE", "bad"],
     ["FUNCTION", "RESTORE", "x", "bad"]],
]


@pytest.mark.parametrize("steps", FUNCTION_CASES, ids=range(len(FUNCTION_CASES)))
def test_functions_and_flags(raw_pair: tuple[Any, Any], steps: list[list[str]]) -> None:
    ours, theirs = raw_pair
    for c in (ours, theirs):
        c.call("FUNCTION", "FLUSH")
        c.call("SCRIPT", "FLUSH")
    for argv in steps:
        assert ours.call(*argv) == theirs.call(*argv), argv


def test_function_dump_moves_between_servers(raw_pair: tuple[Any, Any]) -> None:
    """A FUNCTION DUMP from Redis restores on Sluice and the other way round."""
    ours, theirs = raw_pair
    code = ("#!lua name=moved\nredis.register_function('mf', function(k, a) return 7 end)\n"
            "redis.register_function{function_name='mf2', callback=function() return 8 end,"
            " flags={'no-writes', 'allow-oom'}, description='two'}")
    for c in (ours, theirs):
        c.call("FUNCTION", "FLUSH")
    theirs.call("FUNCTION", "LOAD", code)
    dump = _bulk(theirs.call("FUNCTION", "DUMP"))
    assert ours.call("FUNCTION", "RESTORE", dump) == b"+OK\r\n"
    assert ours.call("FCALL", "mf", "0") == b":7\r\n"
    assert ours.call("FCALL_RO", "mf2", "0") == theirs.call("FCALL_RO", "mf2", "0")
    # FUNCTION LIST's order of functions is a dict's (nondeterministic_output_order)
    assert ours.call("FUNCTION", "LIST", "LIBRARYNAME", "nomatch") == \
        theirs.call("FUNCTION", "LIST", "LIBRARYNAME", "nomatch")
    assert _bulk(ours.call("FUNCTION", "DUMP")) == dump
    theirs.call("FUNCTION", "FLUSH")
    assert theirs.call("FUNCTION", "RESTORE", _bulk(ours.call("FUNCTION", "DUMP"))) == b"+OK\r\n"
    for policy in ("APPEND", "REPLACE", "FLUSH"):
        assert ours.call("FUNCTION", "RESTORE", dump, policy) == \
            theirs.call("FUNCTION", "RESTORE", dump, policy), policy
    for c in (ours, theirs):
        c.call("FUNCTION", "FLUSH")


def _bulk(reply: bytes) -> bytes:
    head, _, rest = reply.partition(b"\r\n")
    assert head.startswith(b"$"), reply
    return rest[:int(head[1:])]


_VALUES = st.sampled_from([
    "1", "0", "-7", "2.5", "-0.5", "'s'", "''", "true", "false", "nil", "{}", "{1,2}",
    "{ok='S'}", "{err='E x'}", "{double=0.25}", "{map={x=1}}", "{set={y=true}}",
    "redis.call('get', KEYS[1])", "redis.call('incr', KEYS[1])", "redis.pcall('nosuch')",
    "redis.call('set', KEYS[1], ARGV[1])", "redis.call('exists', KEYS[1])",
    "redis.call('lpush', 'list', ARGV[1])", "redis.call('lrange', 'list', 0, -1)",
    "redis.call('ttl', KEYS[1])", "{big_number='12345678901234567890'}",
])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(resp=st.sampled_from(["", "redis.setresp(3); "]),
       values=st.lists(_VALUES, min_size=1, max_size=4), nest=st.booleans())
def test_generated_scripts(raw_pair: tuple[Any, Any], resp: str, values: list[str],
                           nest: bool) -> None:
    ours, theirs = raw_pair
    body = ", ".join(values)
    script = resp + (f"return {{{body}}}" if nest else f"return {values[0]}")
    for c in (ours, theirs):
        c.call("DEL", "k", "list")
    args = ["EVAL", script, "1", "k", "v"]
    assert ours.call(*args) == theirs.call(*args), script


def _stat(raw: Any, name: bytes) -> int:
    info = raw.call("INFO", "stats")
    line = next(x for x in info.split(b"\r\n") if x.startswith(name + b":"))
    return int(line.split(b":")[1])


def test_script_commands_count_as_processed(raw_pair: tuple[Any, Any]) -> None:
    # Redis's call() counts every command a script runs (a refused one is not): the EVAL,
    # SET and GET below and the INFO that reads the counter before them.
    for raw in raw_pair:
        before = _stat(raw, b"total_commands_processed")
        raw.call("EVAL", "redis.call('set', 'a', 1); redis.call('get', 'a'); "
                 "return redis.pcall('nosuch')", "0")
        assert _stat(raw, b"total_commands_processed") - before == 4


def test_evicted_scripts_and_config_resetstat(raw_pair: tuple[Any, Any]) -> None:
    """EVAL's cache keeps 500 bodies; the 501st evicts one. CONFIG RESETSTAT zeroes the
    count, as Redis's resetServerStats (Tcl scripting "Lua scripts eviction is plain LRU")."""
    seen = []
    for raw in raw_pair:
        raw.call("SCRIPT", "FLUSH")
        raw.call("CONFIG", "RESETSTAT")
        for j in range(501):
            raw.call("EVAL", f"return {j}", "0")
        evicted = _stat(raw, b"evicted_scripts")
        raw.call("CONFIG", "RESETSTAT")
        seen.append((evicted, _stat(raw, b"evicted_scripts")))
        raw.call("SCRIPT", "FLUSH")
    assert seen[0] == seen[1] == (1, 0)


def test_debug_set_disable_deny_scripts(make_server: Any) -> None:
    # A DEBUG helper of Redis's own suite: scripts may then call noscript commands (DEBUG
    # itself is one).
    ours = make_server("enable-debug-command yes")
    theirs = ProcessServer("redis", ["--enable-debug-command", "yes"]).start()
    clients = [RawClient(ours.port), RawClient(theirs.port)]
    try:
        script = "return redis.pcall('debug', 'protocol', 'bignum')"
        for c in clients:
            assert c.call("EVAL", script, "0").startswith(
                b"-ERR This Redis command is not allowed from script")
            assert c.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1") == b"+OK\r\n"
            assert c.call("EVAL", script, "0") == b"$37\r\n1234567999999999999999999999999999999\r\n"
            assert c.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0") == b"+OK\r\n"
            assert c.call("EVAL", script, "0").startswith(b"-ERR This Redis command is not")
    finally:
        for c in clients:
            c.close()
        theirs.stop()


_SPIN = "local t0 = os.clock(); while os.clock() - t0 < 0.01 do end; "


def test_time_stands_still_while_a_script_runs(raw_pair: tuple[Any, Any]) -> None:
    # Redis 7: the commands of a script see the time it started; a key set to expire in 1 ms
    # is still there 10 ms later in the same script, and gone after it.
    set_and_check = ("redis.call('set', KEYS[1], 'v', 'px', 1); " + _SPIN
                     + "return redis.call('exists', KEYS[1])")
    time_twice = ("local a = redis.call('time'); " + _SPIN + "local b = redis.call('time'); "
                  "return {a[1] == b[1] and 1 or 0, a[2] == b[2] and 1 or 0}")
    for raw in raw_pair:
        assert raw.call("EVAL", set_and_check, "1", "k") == b":1\r\n"
        wait_until(lambda raw=raw: raw.call("EXISTS", "k") == b":0\r\n", what="expiry")
        assert raw.call("EVAL", time_twice, "0") == b"*2\r\n:1\r\n:1\r\n"


def test_acl_checks_script_commands_as_the_calling_user(raw_pair: tuple[Any, Any]) -> None:
    # scriptVerifyACL: the caller's user; a denial is "ACL failure in script" and an ACL LOG
    # entry with context lua naming the command or the key.
    steps = [
        ("ACL", "SETUSER", "scripter", "on", "nopass", "+eval", "+evalsha", "+get",
         "+acl|log", "~allowed*", "-set"),
        ("AUTH", "scripter", "x"),
        ("EVAL", "return redis.call('get', 'allowed1')", "0"),
        ("EVAL", "return redis.call('set', 'allowed1', 'v')", "0"),
        ("EVAL", "return redis.pcall('get', 'secret')", "0"),
        ("EVAL", "return redis.acl_check_cmd('set', 'allowed1', 'v')", "0"),
        ("EVAL", "return redis.acl_check_cmd('get', 'allowed1')", "0"),
    ]
    try:
        for step in steps:
            replies = [raw.call(*step) for raw in raw_pair]
            assert replies[0] == replies[1], step
        logs = []
        for raw in raw_pair:
            log = raw.call("ACL", "LOG", "2")
            # the entries' reason, context, object and username (not times or client info)
            logs.append([line for line in log.split(b"\r\n")
                         if line in (b"command", b"key", b"lua", b"set", b"secret",
                                     b"scripter")])
        assert logs[0] == logs[1] and b"lua" in logs[0] and b"secret" in logs[0]
    finally:
        for raw in raw_pair:
            raw.call("AUTH", "default", "x")
            raw.call("ACL", "DELUSER", "scripter")
            raw.call("ACL", "LOG", "RESET")


def test_a_scripts_sort_of_a_set_is_ordered(raw_pair: tuple[Any, Any]) -> None:
    # sort.c: SORT BY <constant> of a set from a script (CLIENT_SCRIPT) is sorted ALPHA, so
    # the script does not see the set's layout; a list keeps its order.
    for raw in raw_pair:
        raw.call("SADD", "myset", "d", "a", "c", "b", "e", "10", "2")
        raw.call("RPUSH", "mylist", "d", "a", "c")
        raw.call("SET", "w_a", "1")
    steps = [("EVAL", "return redis.call('sort', KEYS[1], 'by', '_')", "1", "myset"),
             ("EVAL", "return redis.call('sort', KEYS[1], 'by', '_', 'get', '#', 'get', "
              "'w_*')", "1", "myset"),
             ("EVAL", "return redis.call('sort', KEYS[1], 'by', '_', 'desc')", "1", "myset"),
             ("EVAL", "return redis.call('sort', KEYS[1], 'by', '_')", "1", "mylist"),
             ("EVAL", "return redis.call('sort', KEYS[1], 'desc', 'alpha')", "1", "myset")]
    for step in steps:
        assert raw_pair[0].call(*step) == raw_pair[1].call(*step), step
    assert raw_pair[0].call(*steps[0]) == (b"*7\r\n$2\r\n10\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\nb\r\n"
                                           b"$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n")
