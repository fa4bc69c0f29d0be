"""Scripting over a real socket with redis-py, RESP2 and RESP3: EVAL/EVALSHA, functions,
redis-py's Lock (acquire, extend, release: all scripts), effects in the AOF, MONITOR."""

from __future__ import annotations

import pytest
import redis


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
