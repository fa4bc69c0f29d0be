"""CLUSTER, READONLY/READWRITE/ASKING, MODULE and MIGRATE over a real socket, RESP2 and RESP3.

Sluice is a standalone server: the cluster commands answer "cluster support disabled" after
their arity and flag checks, MODULE cannot load anything, and MIGRATE really moves keys to
another server (here another Sluice on its own loop thread), with its TTLs, its options,
its errors, its cached connection and what it logs.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sluice.commands import load_table
from sluice.commands.errors import (
    CLUSTER_DISABLED,
    MIGRATE_IOERR,
    MIGRATE_IOERR_CONNECT,
    MIGRATE_KEYS_NEED_EMPTY_KEY,
    MIGRATE_TARGET_ERROR,
    MODULE_LOAD_FAILED,
    MODULE_NO_SUCH_MODULE,
    MODULE_UNLOAD_FAILED,
    PROTECTED_COMMAND,
    SCRIPT_NOSCRIPT,
    SYNTAX,
)
from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof, ThreadedServer, free_port, wait_until

pytestmark = pytest.mark.timeout(120)

CLUSTER_SUBCOMMANDS = sorted(load_table()[b"cluster"].subcommands.values(), key=lambda c: c.name)


def _args_for(arity: int) -> list[str]:
    """Just enough arguments to pass the arity check."""
    return ["1"] * (abs(arity) - 2)


# -- CLUSTER and friends ----------------------------------------------------------------------

@pytest.mark.parametrize("sub", CLUSTER_SUBCOMMANDS, ids=lambda c: c.name)
def test_every_cluster_subcommand_says_disabled(rr: redis.Redis, sub: Any) -> None:
    with pytest.raises(redis.ResponseError, match=f"^{CLUSTER_DISABLED[4:]}$"):
        rr.execute_command("CLUSTER", sub.name.split("|")[1], *_args_for(sub.arity))


@pytest.mark.parametrize("argv", [["READONLY"], ["READWRITE"], ["ASKING"],
                                  ["TRIMSLOTS", "RANGES", "1", "0", "5"]])
def test_connection_cluster_commands_say_disabled(rr: redis.Redis, argv: list[str]) -> None:
    with pytest.raises(redis.ResponseError, match=f"^{CLUSTER_DISABLED[4:]}$"):
        rr.execute_command(*argv)


def test_cluster_checks_before_the_handler(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'cluster|keyslot'"):
        rr.execute_command("CLUSTER", "KEYSLOT")
    with pytest.raises(redis.ResponseError, match=r"unknown subcommand 'nope'. Try CLUSTER HELP."):
        rr.execute_command("CLUSTER", "nope")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'cluster'"):
        rr.execute_command("CLUSTER")


def test_cluster_reset_is_not_allowed_from_scripts(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError) as info:
        rr.eval("return redis.call('cluster', 'reset', 'hard')", 0)
    assert SCRIPT_NOSCRIPT.decode()[4:] in str(info.value)
    with pytest.raises(redis.ResponseError, match="cluster support disabled"):  # not noscript
        rr.eval("return redis.call('cluster', 'info')", 0)


def test_command_list_has_the_cluster_table(rr: redis.Redis) -> None:
    listed = {n.decode() if isinstance(n, bytes) else n for n in rr.command_list(pattern="cl*help")}
    assert {"client|help", "cluster|help"} <= listed
    listed = {n.decode() if isinstance(n, bytes) else n for n in rr.command_list(pattern="cluster*")}
    assert len(listed) == 1 + len(CLUSTER_SUBCOMMANDS)


def test_restore_asking_is_restore(rr: redis.Redis) -> None:
    rr.set("src", "v")
    payload = rr.dump("src")
    assert rr.execute_command("RESTORE-ASKING", "dst", "0", payload) in (b"OK", "OK")
    assert rr.get("dst") == b"v"
    # A TTL already past: nothing is added, and INFO counts one more expired key (Tcl dump's
    # "RESTORE with ABSTTL in the past").
    expired = rr.info("stats")["expired_keys"]
    past = int(time.time() * 1000) - 3000
    for name in ("RESTORE", "RESTORE-ASKING"):
        assert rr.execute_command(name, "gone", past, payload, "ABSTTL") in (b"OK", "OK")
    assert rr.exists("gone") == 0
    assert rr.info("stats")["expired_keys"] == expired + 2


# -- MODULE -----------------------------------------------------------------------------------

def test_module_help_and_list(rr: redis.Redis) -> None:
    lines = rr.execute_command("MODULE", "HELP")
    first = lines[0].decode() if isinstance(lines[0], bytes) else lines[0]
    assert first.startswith("MODULE <subcommand> ")
    assert rr.execute_command("MODULE", "LIST") == []


@pytest.mark.parametrize("argv", [["LOAD", "/no/such.so"], ["LOADEX", "/x", "ARGS", "a"],
                                  ["UNLOAD", "m"]])
def test_module_changes_are_refused_by_default(rr: redis.Redis, argv: list[str]) -> None:
    with pytest.raises(redis.ResponseError) as info:
        rr.execute_command("MODULE", *argv)
    assert str(info.value) == (PROTECTED_COMMAND % ("MODULE", "enable-module-command"))[4:]
    assert rr.config_get("enable-module-command") == {"enable-module-command": "no"}
    with pytest.raises(redis.ResponseError, match="immutable"):
        rr.config_set("enable-module-command", "yes")


def test_module_load_fails_as_a_failed_load(make_server: Any) -> None:
    r = make_server("enable-module-command yes").client()
    for argv in (["LOAD", "/no/such.so"], ["LOAD", "/x", "a", "b"],
                 ["LOADEX", "/x", "CONFIG", "a", "b", "ARGS", "c"]):
        with pytest.raises(redis.ResponseError, match=f"^{MODULE_LOAD_FAILED[4:]}$"):
            r.execute_command("MODULE", *argv)
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command("MODULE", "UNLOAD", "vectorset")
    assert str(info.value) == (MODULE_UNLOAD_FAILED % MODULE_NO_SUCH_MODULE)[4:]
    assert r.execute_command("MODULE", "LIST") == []


# -- MIGRATE ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def target() -> Iterator[ThreadedServer]:
    server = ThreadedServer(["requirepass sec", "user mover on >pw ~* +@all"]).start()
    yield server
    server.stop()


@pytest.fixture
def tr(target: ThreadedServer) -> Iterator[redis.Redis]:
    client = target.client(password="sec", socket_timeout=10)
    yield client
    client.flushall()
    client.close()


def _fill(r: redis.Redis) -> list[str]:
    """One key of every type, some with a TTL; returns the key names."""
    r.set("str", "v", px=100_000)
    r.rpush("list", *[f"e{i}" for i in range(300)])
    r.hset("hash", mapping={"a": "1", "b": "2"})
    r.execute_command("HEXPIRE", "hash", "100", "FIELDS", "1", "a")
    r.sadd("set", "x", "y", "3")
    r.zadd("zset", {"m": 1.5, "n": -2})
    r.xadd("stream", {"f": "v"}, id="5-1")
    r.xgroup_create("stream", "g", id="0")
    r.xreadgroup("g", "c", {"stream": ">"})
    r.pfadd("hll", "a", "b", "c")
    r.expire("zset", 50)
    return ["str", "list", "hash", "set", "zset", "stream", "hll"]


def _contents(r: redis.Redis, key: str) -> Any:
    kind = r.type(key)
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if kind == "string":
        return kind, r.get(key)
    if kind == "list":
        return kind, r.lrange(key, 0, -1)
    if kind == "hash":
        return kind, r.hgetall(key), r.execute_command("HPEXPIRETIME", key, "FIELDS", "1", "a")
    if kind == "set":
        return kind, sorted(r.smembers(key))
    if kind == "zset":
        return kind, r.zrange(key, 0, -1, withscores=True)
    if kind == "stream":
        return kind, r.xrange(key), r.xinfo_groups(key)
    return kind, None


def _ttl_ok(r: redis.Redis, key: str, was: int) -> bool:
    ttl = r.pttl(key)
    return ttl == was if was < 0 else 0 < was - 5000 < ttl <= was


def _migrate(r: redis.Redis, port: int, *args: Any) -> Any:
    return r.execute_command("MIGRATE", "127.0.0.1", port, *args)


def test_migrate_moves_every_type_with_its_ttl(r: redis.Redis, tr: redis.Redis,
                                               target: ThreadedServer) -> None:
    keys = _fill(r)
    before = {k: (_contents(r, k), r.pttl(k)) for k in keys}
    assert _migrate(r, target.port, "", 0, 5000, "AUTH", "sec", "KEYS", *keys) in (b"OK", "OK")
    for k in keys:
        assert r.exists(k) == 0
        contents, ttl = before[k]
        assert _contents(tr, k) == contents, k
        assert _ttl_ok(tr, k, ttl), (k, ttl, tr.pttl(k))
    assert r.info("stats")["migrate_cached_sockets"] == 1


def test_migrate_options_and_replies(r: redis.Redis, tr: redis.Redis,
                                     target: ThreadedServer) -> None:
    port = target.port
    r.set("k", "1")
    assert _migrate(r, port, "nokey", 0, 1000, "AUTH", "sec") in (b"NOKEY", "NOKEY")
    assert _migrate(r, port, "k", 0, 1000, "COPY", "AUTH", "sec") in (b"OK", "OK")
    assert r.get("k") == b"1" and tr.get("k") == b"1"
    with pytest.raises(redis.ResponseError) as info:
        _migrate(r, port, "k", 0, 1000, "COPY", "AUTH", "sec")
    assert str(info.value) == (MIGRATE_TARGET_ERROR % b"BUSYKEY Target key name already "
                               b"exists.").decode()[4:]
    r.set("k", "2")
    assert _migrate(r, port, "k", 0, 1000, "REPLACE", "AUTH2", "mover", "pw") in (b"OK", "OK")
    assert r.exists("k") == 0 and tr.get("k") == b"2"
    r.set("k", "3")  # another database on the target, then back: SELECT is sent again
    assert _migrate(r, port, "k", 3, 1000, "AUTH", "sec") in (b"OK", "OK")
    r.set("k", "4")
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        _migrate(r, port, "k", 0, 1000, "AUTH", "sec")
    assert r.get("k") == b"4"  # refused: kept here
    tr.select(3)
    assert tr.get("k") == b"3"
    tr.flushall()
    tr.select(0)
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        _migrate(r, port, "k", 99, 1000, "AUTH", "sec")
    with pytest.raises(redis.ResponseError, match="NOAUTH|WRONGPASS"):
        _migrate(r, port, "k", 0, 1000, "AUTH", "wrong")


def test_migrate_keys_form_takes_what_exists(r: redis.Redis, tr: redis.Redis,
                                             target: ThreadedServer) -> None:
    r.mset({"a": "1", "b": "2"})
    tr.set("b", "old")
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        _migrate(r, target.port, "", 0, 1000, "AUTH", "sec", "KEYS", "a", "none", "b")
    assert r.exists("a") == 0 and r.get("b") == b"2"  # a went, b was refused
    assert tr.get("a") == b"1" and tr.get("b") == b"old"


@pytest.mark.parametrize(("args", "error"), [
    (["k", 0, 1000, "FOO"], SYNTAX),
    (["k", 0, 1000, "AUTH"], SYNTAX),
    (["k", 0, 1000, "AUTH2", "u"], SYNTAX),
    (["k", 0, 1000, "KEYS", "a"], MIGRATE_KEYS_NEED_EMPTY_KEY),
    (["k", "x", 1000], "ERR value is not an integer or out of range"),
    (["k", 0, "1.5"], "ERR value is not an integer or out of range"),
])
def test_migrate_argument_errors(rr: redis.Redis, args: list[Any], error: str) -> None:
    with pytest.raises(redis.ResponseError) as info:
        _migrate(rr, 1, *args)
    assert str(info.value) == error[4:]


def test_migrate_to_nothing_is_an_ioerr(r: redis.Redis) -> None:
    r.set("k", "v")
    cached = r.info("stats")["migrate_cached_sockets"]
    with pytest.raises(redis.ResponseError, match=f"^{MIGRATE_IOERR % 'writing'}$"):
        _migrate(r, free_port(), "k", 0, 500)
    with pytest.raises(redis.ResponseError, match=f"^{MIGRATE_IOERR_CONNECT}$"):
        r.execute_command("MIGRATE", "", 6379, "k", 0, 500)  # no host: no DNS asked
    assert r.get("k") == b"v"
    # a failed connection is not kept
    assert r.info("stats")["migrate_cached_sockets"] == cached


def test_migrate_read_timeout(r: redis.Redis) -> None:
    """A target that accepts and never answers: the reply is not waited for past the
    timeout, and a timeout is not retried."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        r.set("k", "v")
        start = time.monotonic()
        with pytest.raises(redis.ResponseError, match=f"^{MIGRATE_IOERR % 'reading'}$"):
            _migrate(r, silent.getsockname()[1], "k", 0, 200)
        assert 0.15 < time.monotonic() - start < 5
        assert r.get("k") == b"v"
    finally:
        silent.close()


def test_a_cached_connection_closed_by_the_target_is_retried(
        r: redis.Redis, tr: redis.Redis, target: ThreadedServer) -> None:
    r.mset({"a": "1", "b": "2"})
    assert _migrate(r, target.port, "a", 0, 1000, "AUTH", "sec") in (b"OK", "OK")
    # The target drops every other connection, MIGRATE's cached one included.
    tr.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    wait_until(lambda: tr.info("clients")["connected_clients"] == 1, what="the kill")
    assert _migrate(r, target.port, "b", 0, 1000, "AUTH", "sec") in (b"OK", "OK")
    assert tr.mget("a", "b") == [b"1", b"2"]


def test_migrate_logs_del_and_hides_passwords(make_server: Any, target: ThreadedServer,
                                              tr: redis.Redis) -> None:
    src = make_server("notify-keyspace-events KEA", "slowlog-log-slower-than 0")
    rec = RecordingAof()
    src.call(lambda: setattr(src.server, "aof", rec))
    r = src.client()
    events = r.pubsub()
    events.psubscribe("__keyevent@0__:del")
    events.get_message(timeout=5)
    r.mset({"a": "1", "b": "2", "c": "3"})
    rec.logged.clear()
    assert _migrate(r, target.port, "", 0, 1000, "AUTH2", "mover", "pw",
                    "KEYS", "a", "b") in (b"OK", "OK")
    assert rec.logged == [[b"DEL", b"a", b"b"]]
    got = [events.get_message(timeout=5) for _ in range(2)]
    assert [m["data"] for m in got if m] == [b"a", b"b"]
    rec.logged.clear()
    assert _migrate(r, target.port, "c", 0, 1000, "COPY", "AUTH", "sec") in (b"OK", "OK")
    assert rec.logged == []  # COPY changes nothing here: nothing is logged
    logged = [e["command"].decode() for e in r.slowlog_get(10)]
    migrates = [c for c in logged if c.startswith("MIGRATE")]
    assert migrates and all("(redacted)" in c and "pw" not in c and " sec" not in c
                            for c in migrates), migrates
    events.close()


def test_cached_connections_close_after_10_s(make_server: Any, target: ThreadedServer,
                                             tr: redis.Redis) -> None:
    """The cron closes a connection no MIGRATE used for more than 10 s (server clock)."""
    clock = FakeClock()
    src = make_server(clock=clock)
    r = src.client()
    r.mset({"a": "1", "b": "2"})
    assert _migrate(r, target.port, "a", 0, 1000, "AUTH", "sec") in (b"OK", "OK")
    assert r.info("stats")["migrate_cached_sockets"] == 1

    def after_cron(ms: int) -> None:
        src.call(lambda: clock.advance(ms))
        loops = src.call(lambda: src.server.cronloops)
        wait_until(lambda: src.call(lambda: src.server.cronloops) > loops + 1, what="cron")

    after_cron(10_000)
    assert r.info("stats")["migrate_cached_sockets"] == 1  # 10 s: not more than 10 s yet
    assert _migrate(r, target.port, "b", 0, 1000, "AUTH", "sec") in (b"OK", "OK")  # used again
    after_cron(10_000)
    assert r.info("stats")["migrate_cached_sockets"] == 1
    after_cron(1)
    assert r.info("stats")["migrate_cached_sockets"] == 0
    assert tr.mget("a", "b") == [b"1", b"2"]
