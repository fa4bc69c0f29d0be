"""Scripting over a real socket with redis-py, RESP2 and RESP3: EVAL/EVALSHA, functions,
redis-py's Lock (acquire, extend, release: all scripts), scripts that do not block, and a busy
script served from the Lua hook (BUSY for others, SCRIPT KILL)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from tests.support import wait_until


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


def _busy(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.ResponseError as e:
        return "BUSY" in str(e)
    return False
