"""Scripting over a real socket with redis-py, RESP2 and RESP3: EVAL/EVALSHA, functions,
redis-py's Lock (acquire, extend, release: all scripts), scripts that do not block, and a busy
script served from the Lua hook (BUSY for others, SCRIPT KILL)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.storage.aof import Manifest, parse_commands
from tests.support import RawClient, ThreadedServer, wait_blocked, wait_until


def test_eval_and_evalsha(rr: redis.Redis) -> None:
    assert rr.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "k", "v") in (b"OK", "OK",
                                                                                    True)
    sha = rr.script_load("return redis.call('get', KEYS[1])")
    assert rr.evalsha(sha, 1, "k") == b"v"
    assert rr.script_exists(sha) == [True]
    rr.script_flush()
    assert rr.script_exists(sha) == [False]
    with pytest.raises(redis.exceptions.NoScriptError):
        rr.evalsha(sha, 1, "k")


def test_functions(rr: redis.Redis) -> None:
    rr.function_flush()
    code = ("#!lua name=lib\nredis.register_function{function_name='hello', "
            "callback=function(k, a) return a[1] end, flags={'no-writes'}}")
    assert rr.function_load(code) == b"lib"
    assert rr.fcall("hello", 0, "x") == b"x"
    assert rr.fcall_ro("hello", 0, "y") == b"y"
    dump = rr.function_dump()
    rr.function_flush()
    rr.function_restore(dump)
    assert rr.fcall("hello", 0, "z") == b"z"
    rr.function_flush()


def test_redis_py_lock(rr: redis.Redis) -> None:
    lock = rr.lock("resource", timeout=5)
    assert lock.acquire(blocking=False)
    assert not rr.lock("resource", timeout=5).acquire(blocking=False)
    assert lock.extend(10)
    assert rr.pttl("resource") > 5000
    assert lock.reacquire()
    lock.release()
    assert rr.exists("resource") == 0
    with pytest.raises(redis.exceptions.LockError):  # no token left to release
        lock.release()
    other = rr.lock("resource", timeout=5)
    assert other.acquire(blocking=False)
    rr.set("resource", "stolen")
    with pytest.raises(redis.exceptions.LockNotOwnedError):  # the release script says 0
        other.release()


def test_script_writes_wake_blocked_readers_after_the_script(r: redis.Redis) -> None:
    r.delete("q")
    assert r.eval("redis.call('rpush', KEYS[1], 'a'); redis.call('rpush', KEYS[1], 'b');"
                  " return redis.call('llen', KEYS[1])", 1, "q") == 2
    assert r.lrange("q", 0, -1) == [b"a", b"b"]


def test_script_does_not_block(r: redis.Redis) -> None:
    assert r.eval("return redis.call('blpop', 'nolist', 0)", 0) is None


def test_busy_script_answers_busy_and_can_be_killed(make_server: Any) -> None:
    """Past busy-reply-threshold other clients (old and new connections) get BUSY, and
    SCRIPT KILL stops the script: the event loop is served from the Lua hook."""
    server = make_server("busy-reply-threshold 100")
    runner = redis.Redis(port=server.port, protocol=2)
    other = redis.Redis(port=server.port, protocol=2)
    other.ping()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            runner.eval("local a = 0 while true do a = a + 1 end", 0)
        except redis.ResponseError as e:
            result["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: _busy(other))
    fresh = redis.Redis(port=server.port, protocol=2)
    with pytest.raises(redis.ResponseError,
                       match="BUSY Redis is busy running a script"):
        fresh.set("x", 1)
    assert other.execute_command("SCRIPT", "KILL") in (True, b"OK")
    t.join(10)
    assert result["error"].startswith("Script killed by user with SCRIPT KILL...")
    assert other.ping()
    assert fresh.ping()


def test_clients_served_during_a_busy_script_do_not_wake_blocked_ones(make_server: Any
                                                                      ) -> None:
    """A command allowed while a script is busy (HELLO ... SETNAME) must not serve a client
    blocked on a key the script already pushed to: BLPOP gets the script's last push, after
    the script (unit/scripting's 'Timedout scripts and unblocked command')."""
    server = make_server("busy-reply-threshold 10", "enable-debug-command yes")
    ctl = server.client()
    blocked = RawClient(server.port)
    runner = RawClient(server.port)
    third = RawClient(server.port)
    try:
        ctl.execute_command("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")  # CLIENT LIST in Lua
        blocked.send("BLPOP", "x", "0")
        wait_blocked(ctl, 1)
        runner.send("EVAL", "redis.call('lpush', KEYS[1], 'y'); local c; while true do "
                    "c = redis.call('client', 'list'); "
                    "if string.find(c, 'abortscript') then break end end; "
                    "redis.call('lpush', KEYS[1], 'z'); return 'done'", "1", "x")
        wait_until(lambda: _busy(ctl), what="the script is busy")
        assert third.call("HELLO", "2", "SETNAME", "abortscript").startswith(b"*")
        assert runner.read_reply() == b"$4\r\ndone\r\n"
        assert blocked.read_reply() == b"*2\r\n$1\r\nx\r\n$1\r\nz\r\n"
        assert ctl.lrange("x", 0, -1) == [b"y"]
    finally:
        for c in (blocked, runner, third):
            c.close()
        ctl.close()


def _busy(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.ResponseError as e:
        return "BUSY" in str(e)
    return False


# -- CLIENT PAUSE WRITE and a script's declared flags (getCommandFlags) --------------------------

_NO_WRITES = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
_WRITES = "#!lua\nreturn redis.call('incr', KEYS[1])"


def test_pause_write_spares_scripts_that_cannot_write(make_server: Any) -> None:
    server = make_server()
    ctl = server.client(socket_timeout=10)
    other = RawClient(server.port)
    try:
        ctl.set("k", "1")
        ctl.function_load("#!lua name=lib\nredis.register_function{function_name='ro', "
                          "callback=function(k) return redis.call('get', k[1]) end, "
                          "flags={'no-writes'}}")
        sha = ctl.script_load(_NO_WRITES)
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        # Declared no-writes (EVAL, EVALSHA, FCALL), or run read-only: answered at once.
        assert other.call("EVAL", _NO_WRITES, "1", "k") == b"$1\r\n1\r\n"
        assert other.call("EVALSHA", sha, "1", "k") == b"$1\r\n1\r\n"
        assert other.call("FCALL", "ro", "1", "k") == b"$1\r\n1\r\n"
        assert other.call("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k") \
            == b"$1\r\n1\r\n"
        # ... and inside a transaction.
        assert other.call("MULTI") == b"+OK\r\n"
        assert other.call("EVAL", _NO_WRITES, "1", "k") == b"+QUEUED\r\n"
        assert other.call("EXEC") == b"*1\r\n$1\r\n1\r\n"
        # A script that declares flags without no-writes is a write: held until UNPAUSE.
        other.send_raw(b"*4\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n1\r\n$1\r\nk\r\n"
                       % (len(_WRITES), _WRITES.encode()))
        wait_until(lambda: _held(server) == 1, what="EVAL held")
        assert ctl.get("k") == b"1"
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert other.read_reply() == b":2\r\n"
    finally:
        other.close()
        ctl.close()


def test_pause_write_holds_a_script_without_flags(make_server: Any) -> None:
    # No shebang: EVAL keeps its row's may-replicate flag, so a pause holds it, read or not.
    server = make_server()
    ctl = server.client(socket_timeout=10)
    other = RawClient(server.port)
    try:
        ctl.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        other.send_raw(b"*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n")
        wait_until(lambda: _held(server) == 1, what="EVAL held")
        ctl.execute_command("CLIENT", "UNPAUSE")
        assert other.read_reply() == b":1\r\n"
    finally:
        other.close()
        ctl.close()


def test_read_only_scripts_may_not_publish(r: redis.Redis) -> None:
    # PUBLISH is may-replicate: a write for a read-only script (script.c), as on Redis.
    with pytest.raises(redis.ResponseError, match="^Write commands are not allowed from "
                       "read-only scripts"):
        r.eval_ro("return redis.call('publish', 'ch', 'msg')", 0)
    with pytest.raises(redis.ResponseError, match="^Write commands are not allowed"):
        r.eval("#!lua flags=no-writes\nreturn redis.call('publish', 'ch', 'msg')", 0)
    assert r.eval("return redis.call('publish', 'ch', 'msg')", 0) == 0


def _held(server: ThreadedServer) -> int:
    return server.call(lambda: len(server.server.pause.held))  # type: ignore[no-any-return]


# -- effects in the AOF (Redis 7's effects replication) -------------------------------------------


def test_script_effects_are_logged_not_the_script(make_server: Any, tmp_path: Path) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    server = make_server(*lines)
    r = server.client()
    # Two writes: wrapped in MULTI/EXEC; EXPIRE logged as PEXPIREAT, as any client's.
    r.eval("redis.call('set', KEYS[1], 'a'); redis.call('expire', KEYS[1], 100)", 1, "k")
    r.eval("return redis.call('incr', KEYS[1])", 1, "n")  # one write: logged as it is
    r.eval("return redis.call('get', KEYS[1])", 1, "k")  # no write: nothing
    # redis.set_repl(REPL_NONE) keeps a write out of the log (it stays in memory).
    r.eval("redis.set_repl(redis.REPL_NONE); redis.call('set', 'hidden', 1); "
           "redis.set_repl(redis.REPL_ALL); redis.call('set', 'shown', 1)", 0)
    r.function_load("#!lua name=lib\nredis.register_function('w', function(k) "
                    "return redis.call('rpush', k[1], 'x') end)")
    r.fcall("w", 1, "l")
    logged = _incr_commands(tmp_path)
    names = [a[0].upper() for a in logged if a[0].upper() != b"SELECT"]
    assert b"EVAL" not in names and b"FCALL" not in names
    assert names == [b"MULTI", b"SET", b"PEXPIREAT", b"EXEC", b"INCR", b"SET",
                     b"FUNCTION", b"RPUSH"]
    assert [b"set", b"shown", b"1"] in logged  # as the script wrote it
    server.stop()
    r = make_server(*lines).client()  # the log replays to the same data, without the hidden
    assert r.get("k") == b"a" and 0 < r.ttl("k") <= 100
    assert r.get("n") == b"1" and r.get("shown") == b"1" and r.get("hidden") is None
    assert r.fcall("w", 1, "l") == 2


def _incr_commands(dir_: Path) -> list[list[bytes]]:
    m = Manifest.parse((dir_ / "appendonlydir" / "appendonly.aof.manifest").read_text())
    out: list[list[bytes]] = []
    for info in m.incrs:
        out += [a for a, _ in parse_commands((dir_ / "appendonlydir" / info.name).read_bytes())]
    return out
