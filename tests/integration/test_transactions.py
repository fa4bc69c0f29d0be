"""MULTI/EXEC/DISCARD/WATCH/UNWATCH through redis-py (RESP2 and RESP3): queueing, aborts,
and every way a watched key can change under a transaction, including expiry on virtual time,
FLUSHDB/FLUSHALL and SWAPDB; redis-py pipelines and its WATCH retry loop."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import redis

from sluice.commands import errors
from sluice.storage.keyspace import FakeClock
from tests.support import ThreadedServer

NOW = 1_700_000_000_000


def _m(message: str) -> str:
    """redis-py drops the ``ERR `` code from messages; match the rest literally."""
    return re.escape(message.removeprefix("ERR "))


class Raw:
    """One connection of ``r``'s pool, without redis-py's reply callbacks (they would turn
    ``QUEUED`` into ``False``); MULTI state belongs to a connection, so tests keep one."""

    def __init__(self, r: redis.Redis) -> None:
        self.pool = r.connection_pool
        self.conn = self.pool.get_connection()

    def __call__(self, *args: object) -> object:
        self.conn.send_command(*args)
        return self.conn.read_response()

    def release(self) -> None:
        self.conn.disconnect()  # never hand a connection left inside MULTI back to the pool
        self.pool.release(self.conn)


@pytest.fixture
def raw(rr: redis.Redis) -> Iterator[Raw]:
    conn = Raw(rr)
    yield conn
    conn.release()


@pytest.fixture
def other(sluice: ThreadedServer) -> Iterator[redis.Redis]:
    """A second connection, to change keys under a transaction."""
    client = sluice.client()
    yield client
    client.close()


def test_multi_exec_queues_and_runs(rr: redis.Redis, raw: Raw) -> None:
    assert raw("MULTI") == b"OK"
    assert raw("SET", "a", "1") == b"QUEUED"
    assert raw("INCR", "a") == b"QUEUED"
    assert raw("GET", "a") == b"QUEUED"
    assert raw("EXEC") == [b"OK", 2, b"2"]


def test_exec_discard_without_multi(rr: redis.Redis, raw: Raw) -> None:
    with pytest.raises(redis.ResponseError, match=_m(errors.EXEC_WITHOUT_MULTI)):
        raw("EXEC")
    with pytest.raises(redis.ResponseError, match=_m(errors.DISCARD_WITHOUT_MULTI)):
        raw("DISCARD")


def test_nested_multi_and_watch_inside_multi_do_not_abort(rr: redis.Redis, raw: Raw) -> None:
    raw("MULTI")
    with pytest.raises(redis.ResponseError, match=_m(errors.MULTI_NESTED)):
        raw("MULTI")
    with pytest.raises(redis.ResponseError, match=_m(errors.WATCH_IN_MULTI)):
        raw("WATCH", "a")
    raw("SET", "a", "1")
    assert raw("EXEC") == [b"OK"]


def test_queue_time_errors_abort_with_execabort(rr: redis.Redis, raw: Raw) -> None:
    raw("MULTI")
    raw("SET", "a", "1")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        raw("NOSUCHCMD")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        raw("GET")
    with pytest.raises(redis.exceptions.ExecAbortError, match="previous errors"):
        raw("EXEC")
    assert rr.exists("a") == 0


def test_runtime_errors_do_not_stop_the_others(rr: redis.Redis) -> None:
    rr.set("s", "text")
    pipe = rr.pipeline()
    pipe.incr("s")
    pipe.set("b", "2")
    pipe.get("b")
    res = pipe.execute(raise_on_error=False)
    assert isinstance(res[0], redis.ResponseError) and res[1:] == [True, b"2"]


def test_discard_drops_the_queue_and_the_watches(rr: redis.Redis, raw: Raw, other: redis.Redis) -> None:
    raw("WATCH", "w")
    raw("MULTI")
    raw("SET", "a", "1")
    assert raw("DISCARD") == b"OK"
    assert rr.exists("a") == 0
    other.set("w", "changed")  # no longer watched
    raw("MULTI")
    raw("SET", "a", "1")
    assert raw("EXEC") == [b"OK"]


def _select(r: redis.Redis, db: int) -> None:
    r.execute_command("SELECT", db)


# Every write that must make a watcher's EXEC fail, as (setup, write) on the other connection.
INVALIDATING: dict[str, tuple[Callable[[redis.Redis], object], Callable[[redis.Redis], object]]] = {
    "set": (lambda r: r.set("w", "1"), lambda r: r.set("w", "2")),
    "set-same-value": (lambda r: r.set("w", "1"), lambda r: r.set("w", "1")),
    "create": (lambda r: None, lambda r: r.set("w", "1")),
    "del": (lambda r: r.set("w", "1"), lambda r: r.delete("w")),
    "unlink": (lambda r: r.set("w", "1"), lambda r: r.unlink("w")),
    "expire": (lambda r: r.set("w", "1"), lambda r: r.expire("w", 100)),
    "expire-past": (lambda r: r.set("w", "1"), lambda r: r.expire("w", -1)),
    "persist": (lambda r: r.set("w", "1", ex=100), lambda r: r.persist("w")),
    "incr": (lambda r: r.set("w", "1"), lambda r: r.incr("w")),
    "incrbyfloat": (lambda r: None, lambda r: r.incrbyfloat("w", 1.5)),
    "append": (lambda r: r.set("w", "1"), lambda r: r.append("w", "x")),
    "setrange": (lambda r: r.set("w", "1"), lambda r: r.setrange("w", 0, "x")),
    "getdel": (lambda r: r.set("w", "1"), lambda r: r.getdel("w")),
    "getex": (lambda r: r.set("w", "1"), lambda r: r.getex("w", ex=100)),
    "getset": (lambda r: r.set("w", "1"), lambda r: r.getset("w", "2")),
    "mset": (lambda r: None, lambda r: r.mset({"x": 1, "w": 2})),
    "rename-from": (lambda r: r.set("w", "1"), lambda r: r.rename("w", "x")),
    "rename-to": (lambda r: r.set("x", "1"), lambda r: r.rename("x", "w")),
    "copy-to": (lambda r: r.set("x", "1"), lambda r: r.copy("x", "w")),
    "move": (lambda r: r.set("w", "1"), lambda r: r.move("w", 3)),
    "flushdb": (lambda r: r.set("w", "1"), lambda r: r.flushdb()),
    "flushall": (lambda r: r.set("w", "1"), lambda r: r.flushall()),
    "swapdb": (lambda r: r.set("w", "1"), lambda r: r.swapdb(0, 5)),
    "swapdb-brings-key": (lambda r: (_select(r, 5), r.set("w", "1"), _select(r, 0)),
                          lambda r: r.swapdb(0, 5)),
    "rpush": (lambda r: None, lambda r: r.rpush("w", "x")),
}

# Writes that must not disturb the watcher.
HARMLESS: dict[str, tuple[Callable[[redis.Redis], object], Callable[[redis.Redis], object]]] = {
    "read": (lambda r: r.set("w", "1"), lambda r: (r.get("w"), r.exists("w"), r.ttl("w"))),
    "other-key": (lambda r: r.set("w", "1"), lambda r: r.set("x", "2")),
    "other-db": (lambda r: r.set("w", "1"), lambda r: (_select(r, 3), r.set("w", "2"), _select(r, 0))),
    "failed-setnx": (lambda r: r.set("w", "1"), lambda r: r.setnx("w", "2")),
    "del-missing": (lambda r: None, lambda r: r.delete("w")),
    "flush-empty-db": (lambda r: r.set("x", "1"), lambda r: r.flushdb()),
    "swapdb-both-missing": (lambda r: r.set("x", "1"), lambda r: r.swapdb(0, 5)),
    "persist-no-ttl": (lambda r: r.set("w", "1"), lambda r: r.persist("w")),
}


def _watched_exec(r: Raw, other: redis.Redis, write: Callable[[redis.Redis], object]) -> object:
    r("WATCH", "w")
    write(other)
    r("MULTI")
    r("SET", "result", "done")
    return r("EXEC")


@pytest.mark.parametrize("name", list(INVALIDATING))
def test_watch_is_invalidated_by(name: str, rr: redis.Redis, raw: Raw, other: redis.Redis) -> None:
    setup, write = INVALIDATING[name]
    setup(other)
    try:
        assert _watched_exec(raw, other, write) is None
        assert rr.exists("result") == 0
    finally:
        other.flushall()


@pytest.mark.parametrize("name", list(HARMLESS))
def test_watch_survives(name: str, raw: Raw, other: redis.Redis) -> None:
    setup, write = HARMLESS[name]
    setup(other)
    try:
        assert _watched_exec(raw, other, write) == [b"OK"]
    finally:
        other.flushall()


def test_own_writes_invalidate_too(rr: redis.Redis, raw: Raw) -> None:
    raw("WATCH", "w")
    rr.set("w", "mine")
    raw("MULTI")
    raw("GET", "w")
    assert raw("EXEC") is None


def test_exec_and_unwatch_forget_the_watches(rr: redis.Redis, raw: Raw, other: redis.Redis) -> None:
    raw("WATCH", "w")
    raw("MULTI")
    raw("PING")
    raw("EXEC")
    other.set("w", "1")
    raw("MULTI")
    raw("PING")
    assert raw("EXEC") is not None
    raw("WATCH", "w")
    other.set("w", "2")
    assert raw("UNWATCH") == b"OK"
    raw("MULTI")
    raw("PING")
    assert raw("EXEC") is not None


@pytest.fixture
def timed(make_server):  # type: ignore[no-untyped-def]
    clock = FakeClock(NOW)
    server = make_server(clock=clock)
    a, b = server.client(), server.client()
    yield a, b, clock
    a.close()
    b.close()


def test_expiry_of_a_watched_key_fails_exec(timed) -> None:  # type: ignore[no-untyped-def]
    r, _, clock = timed
    c = Raw(r)
    r.set("w", "v", px=100)
    c("WATCH", "w")
    clock.advance(100)  # expired, not yet deleted by anyone
    c("MULTI")
    c("PING")
    assert c("EXEC") is None


def test_expiry_then_deletion_of_a_watched_key_fails_exec(timed) -> None:  # type: ignore[no-untyped-def]
    r, other, clock = timed
    c = Raw(r)
    r.set("w", "v", px=100)
    c("WATCH", "w")
    clock.advance(100)
    assert other.get("w") is None  # the lookup deletes the expired key
    c("MULTI")
    c("PING")
    assert c("EXEC") is None


def test_a_key_already_expired_when_watched_does_not_fail_exec(timed) -> None:  # type: ignore[no-untyped-def]
    r, other, clock = timed
    c = Raw(r)
    r.set("w", "v", px=100)
    clock.advance(100)
    c("WATCH", "w")  # logically expired already
    assert other.exists("w") == 0  # deleting it changes nothing logically
    c("MULTI")
    c("PING")
    assert c("EXEC") == [b"PONG"]


def test_an_expired_watched_key_that_is_rewritten_fails_exec(timed) -> None:  # type: ignore[no-untyped-def]
    r, other, clock = timed
    c = Raw(r)
    r.set("w", "v", px=100)
    clock.advance(100)
    c("WATCH", "w")
    other.set("w", "new")
    c("MULTI")
    c("PING")
    assert c("EXEC") is None


def test_redis_py_transaction_pipeline(rr: redis.Redis) -> None:
    pipe = rr.pipeline()  # transaction=True by default: MULTI ... EXEC
    pipe.set("a", 1).incr("a").get("a").delete("a")
    assert pipe.execute() == [True, 2, b"2", 1]
    with pytest.raises(redis.ResponseError):
        rr.pipeline().set("a", 1).execute_command("NOSUCHCMD").execute()
    assert rr.exists("a") == 0


def test_redis_py_watch_retry_loop(rr: redis.Redis, other: redis.Redis) -> None:
    """The first attempt is disturbed by another client, so redis-py retries once."""
    rr.set("counter", 10)
    attempts = []

    def body(pipe: redis.client.Pipeline) -> None:
        value = int(pipe.get("counter"))
        attempts.append(value)
        if len(attempts) == 1:
            other.incr("counter")  # changes the watched key: EXEC must fail
        pipe.multi()
        pipe.set("counter", value * 2)

    rr.transaction(body, "counter")
    assert attempts == [10, 11]
    assert rr.get("counter") == b"22"


def test_pipeline_watch_raises_watch_error(rr: redis.Redis, other: redis.Redis) -> None:
    with rr.pipeline() as pipe:
        pipe.watch("k")
        other.set("k", "x")
        pipe.multi()
        pipe.set("k", "y")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert rr.get("k") == b"x"


def test_blocking_commands_inside_multi_do_not_block(rr: redis.Redis, sluice: ThreadedServer) -> None:
    assert sluice.server is not None
    if b"blpop" not in sluice.server.table:
        pytest.skip("BLPOP not in this build")
    pipe = rr.pipeline()
    pipe.blpop(["nothing"], timeout=0)
    pipe.set("after", "1")
    assert pipe.execute() == [None, True]
