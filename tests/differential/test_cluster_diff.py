"""CLUSTER, READONLY/READWRITE/ASKING, MODULE and MIGRATE: Sluice against redis-server 8.6.3.

* Replies byte for byte: every CLUSTER subcommand (the table test checks the rows are Redis's,
  this checks what they answer), their arity and unknown-subcommand errors, CLUSTER RESET from
  a script, MODULE with enable-module-command at its default and at ``yes``, COMMAND GETKEYS
  of MIGRATE.
* MIGRATE between two servers: the same scenario run from a Sluice source and from a Redis
  source to the same target gives the same reply bytes, the same keys left at the source and
  the same data at the target; keys of every type go Sluice -> Redis and Redis -> Sluice with
  their contents and TTLs; both log the same commands to the AOF.

Where they differ on purpose: 8.6.3 ships the vectorset module built in, so its MODULE LIST
names it and MODULE UNLOAD vectorset says it cannot be unloaded; Sluice has no modules.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.commands import load_table
from tests.differential.test_set_propagation_diff import AofSide
from tests.integration.test_cluster import _contents, _fill
from tests.support import ProcessServer, RawClient, ThreadedServer, free_port

pytestmark = [pytest.mark.differential, pytest.mark.timeout(180)]

CLUSTER_ROWS = sorted(load_table()[b"cluster"].subcommands.values(), key=lambda c: c.name)


def _same(pair: tuple[RawClient, RawClient], *argv: Any) -> bytes:
    ours, theirs = pair
    mine, real = ours.call(*argv), theirs.call(*argv)
    assert mine == real, (argv, mine, real)
    return mine


@pytest.mark.parametrize("sub", CLUSTER_ROWS, ids=lambda c: c.name)
def test_cluster_subcommand_replies(raw_pair: tuple[RawClient, RawClient], sub: Any) -> None:
    name = sub.name.split("|")[1]
    fill = ["1"] * (abs(sub.arity) - 2)
    assert _same(raw_pair, "CLUSTER", name, *fill).startswith(b"-ERR This instance has cluster")
    _same(raw_pair, "CLUSTER", name.upper(), *fill, *(["x"] if sub.arity < 0 else []))
    if sub.arity > 2 or sub.arity < -2:
        _same(raw_pair, "CLUSTER", name)  # too few: the arity error names cluster|<sub>
    if sub.arity > 0:
        _same(raw_pair, "CLUSTER", name, *fill, "extra")


@pytest.mark.parametrize("argv", [
    ["CLUSTER"], ["CLUSTER", "nope"], ["CLUSTER", "nope", "a"], ["READONLY"], ["READWRITE"],
    ["ASKING"], ["READONLY", "x"], ["ASKING", "x"], ["TRIMSLOTS", "RANGES", "1", "0", "5"],
    ["TRIMSLOTS", "RANGES"], ["MODULE"], ["MODULE", "nope"], ["MODULE", "LIST", "x"],
    ["MODULE", "LOAD", "/no/such.so"], ["MODULE", "LOADEX", "/x"], ["MODULE", "UNLOAD", "m"],
    ["MODULE", "UNLOAD"], ["MODULE", "HELP", "x"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0", "5"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "", "0", "5", "KEYS", "a", "b"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "", "0", "5", "AUTH", "keys", "KEYS", "a"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "", "0", "5", "AUTH2", "u", "p", "KEYS", "a"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0", "5", "KEYS", "a"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "", "0", "5", "KEYS"],
    ["COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "p", "", "0", "5", "COPY", "KEYS", "a"],
    ["COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0"],
    ["COMMAND", "GETKEYS", "CLUSTER", "KEYSLOT", "k"],
    ["COMMAND", "GETKEYS", "RESTORE-ASKING", "k", "0", "x"],
    ["EVAL", "return redis.call('cluster', 'reset', 'hard')", "0"],
    ["EVAL", "return redis.call('cluster', 'info')", "0"],
    ["EVAL", "return redis.pcall('module', 'list')", "0"],
    ["EVAL", "return redis.pcall('migrate', '127.0.0.1', '1', 'k', '0', '10')", "0"],
    ["CONFIG", "GET", "enable-module-command"],
    ["CONFIG", "SET", "enable-module-command", "yes"],
])
def test_replies(raw_pair: tuple[RawClient, RawClient], argv: list[str]) -> None:
    _same(raw_pair, *argv)


def test_module_help_and_list(raw_pair: tuple[RawClient, RawClient]) -> None:
    ours, theirs = raw_pair
    mine, real = ours.call("MODULE", "HELP"), theirs.call("MODULE", "HELP")
    # The explanations are in our own words; the shape and the subcommands are Redis's.
    assert mine.split(b"\r\n")[:2] == real.split(b"\r\n")[:2]
    assert mine.count(b"\r\n+") == real.count(b"\r\n+")
    assert ours.call("MODULE", "LIST") == b"*0\r\n"
    assert b"vectorset" in theirs.call("MODULE", "LIST")  # built into 8.6.3, not in Sluice


@pytest.fixture(scope="module")
def modules_enabled() -> Iterator[tuple[RawClient, RawClient]]:
    ours = ThreadedServer(["enable-module-command yes"]).start()
    theirs = ProcessServer("redis", ["--enable-module-command", "yes"]).start()
    a, b = RawClient(ours.port), RawClient(theirs.port)
    yield a, b
    a.close()
    b.close()
    ours.stop()
    theirs.stop()


@pytest.mark.parametrize("argv", [
    ["LOAD", "/no/such.so"], ["LOAD", "/no/such.so", "a", "b"], ["LOADEX", "/x"],
    ["LOADEX", "/x", "CONFIG", "a", "b", "ARGS", "c"], ["LOADEX", "/x", "CONFIG", "a"],
    ["LOADEX", "/x", "ARGS"], ["LOADEX", "/x", "nope"], ["UNLOAD", "nope"], ["UNLOAD"],
])
def test_module_commands_when_enabled(modules_enabled: tuple[RawClient, RawClient],
                                      argv: list[str]) -> None:
    _same(modules_enabled, "MODULE", *argv)


# -- MIGRATE ----------------------------------------------------------------------------------

def test_migrate_key_permissions(sluice: ThreadedServer, reference: ProcessServer) -> None:
    """ACL checks MIGRATE's keys as Redis finds them (migrateGetKeys: its key specs are
    incomplete), each needing read and write access."""
    admins = [RawClient(sluice.port), RawClient(reference.port)]
    users = [RawClient(sluice.port), RawClient(reference.port)]
    try:
        for admin, user in zip(admins, users, strict=True):
            admin.call("ACL", "SETUSER", "mig", "on", ">p", "~a*", "%R~r*", "+@all")
            assert user.call("AUTH", "mig", "p") == b"+OK\r\n"
        port = free_port()
        for keys in (["a1"], ["b1"], ["r1"], ["", "KEYS", "a1", "a2"], ["", "KEYS", "a1", "b1"],
                     ["", "COPY", "AUTH", "KEYS", "KEYS", "a1"], ["", "AUTH2", "u", "KEYS", "KEYS", "b1"],
                     ["a1", "KEYS", "b1"], ["", "KEYS"]):
            argv = ["MIGRATE", "127.0.0.1", port, keys[0], 0, 100, *keys[1:]]
            assert users[0].call(*argv) == users[1].call(*argv), argv
    finally:
        for admin in admins:
            admin.call("ACL", "DELUSER", "mig")
            admin.close()
        for user in users:
            user.close()


@pytest.fixture(scope="module")
def targets() -> Iterator[dict[str, Any]]:
    """A Redis and a Sluice target, both with a password and a second user."""
    t_redis = ProcessServer("redis").start()
    t_ours = ThreadedServer().start()
    out = {"redis": t_redis, "sluice": t_ours}
    for t in out.values():
        c = redis.Redis(port=t.port)
        c.execute_command("ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all")
        c.config_set("requirepass", "sec")
        c.close()
    yield out
    t_redis.stop()
    t_ours.stop()


@pytest.fixture(scope="module")
def sources(sluice: ThreadedServer, reference: ProcessServer) -> Iterator[dict[str, Any]]:
    clients = {"sluice": redis.Redis(port=sluice.port), "redis": redis.Redis(port=reference.port)}
    yield clients
    for c in clients.values():
        c.flushall()
        c.close()


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield srv.getsockname()[1]
    srv.close()


def _raw(r: redis.Redis, *argv: Any) -> bytes:
    """One command's reply bytes, on a raw connection to ``r``'s server."""
    client = RawClient(r.connection_pool.connection_kwargs["port"])
    try:
        return client.call(*argv)
    finally:
        client.close()


Setup = Callable[[redis.Redis], Any]
SCENARIOS: dict[str, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[Any]]] = {
    # name: (commands on the source, commands on the target, MIGRATE arguments after port)
    "nokey": ([], [], ["nokey", 0, 1000, "AUTH", "sec"]),
    "one": ([("SET", "k", "v")], [], ["k", 0, 1000, "AUTH", "sec"]),
    "ttl": ([("SET", "k", "v", "PX", 90000)], [], ["k", 3, 1000, "AUTH2", "mover", "pw"]),
    "copy": ([("SET", "k", "v")], [], ["k", 0, 1000, "COPY", "AUTH", "sec"]),
    "busykey": ([("SET", "k", "v")], [("SET", "k", "old")], ["k", 0, 1000, "AUTH", "sec"]),
    "replace": ([("SET", "k", "v")], [("SET", "k", "old")],
                ["k", 0, 1000, "REPLACE", "AUTH", "sec"]),
    "keys": ([("SET", "a", "1"), ("SET", "b", "2"), ("SET", "c", "3")], [("SET", "b", "x")],
             ["", 0, 1000, "AUTH", "sec", "KEYS", "a", "gone", "b", "c"]),
    "keys-replace": ([("SET", "a", "1"), ("SET", "b", "2")], [("SET", "b", "x")],
                     ["", 0, 1000, "REPLACE", "AUTH", "sec", "KEYS", "a", "b", "a"]),
    "bad-db": ([("SET", "k", "v")], [], ["k", 99, 1000, "AUTH", "sec"]),
    "neg-db": ([("SET", "k", "v")], [], ["k", -1, 1000, "AUTH", "sec"]),
    "no-auth": ([("SET", "k", "v")], [], ["k", 0, 1000]),
    "bad-pass": ([("SET", "k", "v")], [], ["k", 0, 1000, "AUTH", "nope"]),
    "bad-user": ([("SET", "k", "v")], [], ["k", 0, 1000, "AUTH2", "who", "pw"]),
    "zero-timeout": ([("SET", "k", "v")], [], ["k", 0, 0, "COPY", "AUTH", "sec"]),
    "syntax": ([("SET", "k", "v")], [], ["k", 0, 1000, "AUTH"]),
    "keys-not-empty": ([("SET", "k", "v")], [], ["k", 0, 1000, "KEYS", "k"]),
    "bad-timeout": ([("SET", "k", "v")], [], ["k", 0, "soon"]),
    "bad-db-arg": ([("SET", "k", "v")], [], ["k", "zero", 1000]),
}


def _run(source: redis.Redis, target: Any, setup_src: list[tuple[Any, ...]],
         setup_dst: list[tuple[Any, ...]], args: list[Any]) -> tuple[bytes, Any, Any]:
    source.flushall()
    dst = redis.Redis(port=target.port, password="sec")
    dst.flushall()
    for c in setup_src:
        source.execute_command(*c)
    for c in setup_dst:
        dst.execute_command(*c)
    reply = _raw(source, "MIGRATE", "127.0.0.1", target.port, *args)
    left = sorted(source.keys())
    landed = {}
    for db in (0, 3):
        dst.select(db)
        for k in sorted(dst.keys()):
            ttl = dst.pttl(k)
            landed[(db, k)] = (dst.get(k), ttl if ttl < 0 else 80_000 < ttl <= 90_000)
    dst.close()
    return reply, left, landed


@pytest.mark.parametrize("target_kind", ["redis", "sluice"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_migrate_scenario(sources: dict[str, Any], targets: dict[str, Any], name: str,
                          target_kind: str) -> None:
    setup_src, setup_dst, args = SCENARIOS[name]
    target = targets[target_kind]
    ours = _run(sources["sluice"], target, setup_src, setup_dst, args)
    real = _run(sources["redis"], target, setup_src, setup_dst, args)
    assert ours == real


def test_migrate_to_nowhere(sources: dict[str, Any], silent_port: int) -> None:
    closed = free_port()
    for source in sources.values():
        source.set("k", "v")
    for host, port, timeout in (("127.0.0.1", closed, 500), ("", 6379, 500),
                                ("127.0.0.1", "-1", 500), ("127.0.0.1", "badport", 500),
                                ("127.0.0.1", silent_port, 100)):
        argv = ("MIGRATE", host, port, "k", 0, timeout, "COPY")
        assert _raw(sources["sluice"], *argv) == _raw(sources["redis"], *argv), argv
    for source in sources.values():
        assert source.get("k") == b"v"


@pytest.mark.parametrize("direction", ["sluice->redis", "redis->sluice"])
def test_every_type_crosses(sources: dict[str, Any], targets: dict[str, Any],
                            direction: str) -> None:
    """Keys of every type move between the two servers with their contents and TTLs: the
    same as when Redis migrates them to Redis."""
    src_kind, dst_kind = direction.split("->")
    results = []
    for source, target in ((sources[src_kind], targets[dst_kind]),
                           (sources["redis"], targets["redis"])):
        source.flushall()
        dst = redis.Redis(port=target.port, password="sec")
        dst.flushall()
        keys = _fill(source)
        before = {k: _contents(source, k) for k in keys}
        ttls = {k: source.pttl(k) for k in keys}
        assert _raw(source, "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "AUTH", "sec",
                    "KEYS", *keys) == b"+OK\r\n"
        assert source.keys() == []
        after = {k: _contents(dst, k) for k in keys}
        assert after == before
        for k, ttl in ttls.items():
            got = dst.pttl(k)
            assert (got == ttl) if ttl < 0 else (ttl - 5000 < got <= ttl), (k, ttl, got)
        # (the field's expiry time is absolute: equal to the source's, checked above, but
        # the two runs set it at different moments)
        after["hash"] = after["hash"][:2]
        results.append(after)
        dst.close()
    assert results[0] == results[1]


def test_migrate_aof(tmp_path: Path, targets: dict[str, Any]) -> None:
    """What MIGRATE logs: DEL of the keys the target took, nothing with COPY or NOKEY."""
    sides = {kind: AofSide(kind, tmp_path) for kind in ("sluice", "redis")}
    target = targets["redis"]
    dst = redis.Redis(port=target.port, password="sec")
    try:
        cases = [
            [("SET", "a", "1"), ("SET", "b", "2"),
             ("MIGRATE", "127.0.0.1", target.port, "", 0, 1000, "AUTH", "sec", "KEYS", "a", "b")],
            [("SET", "c", "3"), ("MIGRATE", "127.0.0.1", target.port, "c", 0, 1000, "COPY",
                                 "AUTH", "sec")],
            [("MIGRATE", "127.0.0.1", target.port, "none", 0, 1000, "AUTH", "sec")],
            [("SET", "x", "1"), ("SET", "y", "2"), ("SETBUSY",),
             ("MIGRATE", "127.0.0.1", target.port, "", 0, 1000, "AUTH", "sec", "KEYS", "x", "y")],
        ]
        for case in cases:
            logged = {}
            for kind, side in sides.items():
                dst.flushall()
                for c in case:
                    if c == ("SETBUSY",):
                        dst.set("y", "taken")
                        continue
                    side.client.call(*c)
                logged[kind] = side.logged()
            assert logged["sluice"] == logged["redis"], (case, logged)
    finally:
        dst.close()
        for side in sides.values():
            side.close()
