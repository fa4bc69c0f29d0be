"""Hashes in files and payloads that move between Sluice and redis-server 8.6.3, both ways.

A dump.rdb with hashes of every encoding (listpack, listpackex with tied and distinct field
deadlines, hashtable with and without field TTLs, binary and integer-looking fields) written
by one server loads in the other with identical contents: fields, values, field deadlines,
encodings, and a listpack's field order. The same for AOF directories (RDB preamble or
commands, with the field-expiry commands in the incremental file) and DUMP payloads. And the
incremental AOF each server writes for the same hash commands (relative times turned
absolute, HGETEX/HGETDEL/HINCRBYFLOAT as their effects, deleted fields as HDEL) is the same
list of commands, deadlines aside.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.storage.aof import parse_commands
from tests.differential.test_persistence_diff import _check, _redis
from tests.support import ProcessServer, ThreadedServer, require_redis_server, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(180)]

FAR = 4102444800000
KEYS = ("lp", "lpex", "ties", "ht", "htex", "bin", "big")


def fill_hashes(r: redis.Redis) -> None:
    r.hset("lp", mapping={"z": "1", "a": "2", "m": "three", "12": "-7"})
    r.hset("lpex", mapping={"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
    r.hpexpireat("lpex", FAR + 5, "c")
    r.hpexpireat("lpex", FAR + 1, "e", "a")
    r.hpersist("lpex", "a")
    r.hset("ties", mapping={f"f{i}": str(i) for i in range(6)})
    for f in ("f3", "f1", "f5"):
        r.hpexpireat("ties", FAR, f)  # equal deadlines: each goes before the earlier ones
    r.hset("ht", mapping={f"field:{i}": "v" * (i % 90) for i in range(300)})
    r.hset("htex", mapping={f"k{i}": str(i) for i in range(600)})
    r.hpexpireat("htex", FAR, *[f"k{i}" for i in range(0, 600, 3)])
    r.hpexpireat("htex", FAR + 1000, "k1")
    r.hset("bin", mapping={b"\x00\xff": b"\r\n", "123456789012": "9223372036854775807",
                           "-0": "0x10", "": "empty field name"})
    r.hset("big", mapping={"f": "x" * 20000, "g": "abc" * 1000})
    r.execute_command("SELECT", 3)
    r.hset("db3", "a", "1")
    r.hpexpire("db3", 600_000, "a")
    r.execute_command("SELECT", 0)


def hash_snapshot(r: redis.Redis) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in KEYS:
        enc = r.object("encoding", key)
        fields = r.hkeys(key)
        out[key] = {
            "encoding": enc,
            # a listpack's order is behaviour; a hashtable's is its own business
            "fields": fields if enc != b"hashtable" else sorted(fields),
            "values": r.hgetall(key),
            "deadlines": dict(zip(sorted(fields), r.hpexpiretime(key, *sorted(fields)), strict=True)),
        }
    db3 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=3)
    ttl = db3.hpttl("db3", "a")[0]
    out["db3"] = (db3.hgetall("db3"), 0 < ttl <= 600_000)
    return out


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    require_redis_server()
    a, b = tmp_path / "sluice", tmp_path / "redis"
    a.mkdir()
    b.mkdir()
    return a, b


def test_sluice_rdb_with_hashes_loads_in_redis(dirs: tuple[Path, Path]) -> None:
    a, _ = dirs
    s = ThreadedServer([f"dir {a}"]).start()
    try:
        r = s.client()
        fill_hashes(r)
        ours = hash_snapshot(r)
        assert r.save()
    finally:
        s.stop()
    assert "RDB looks OK" in _check("redis-check-rdb", a / "dump.rdb")
    p = _redis(a)
    try:
        assert hash_snapshot(p.client()) == ours
    finally:
        p.stop()


def test_redis_rdb_with_hashes_loads_in_sluice(dirs: tuple[Path, Path]) -> None:
    _, b = dirs
    p = _redis(b)
    try:
        r = p.client()
        fill_hashes(r)
        theirs = hash_snapshot(r)
        assert r.save()
    finally:
        p.stop()
    from sluice.tools.check_rdb import main as check_rdb

    assert check_rdb([str(b / "dump.rdb")]) == 0
    s = ThreadedServer([f"dir {b}"]).start()
    try:
        assert hash_snapshot(s.client()) == theirs
    finally:
        s.stop()


def _expiry_writes(r: redis.Redis) -> None:
    """Field-expiry commands for the incremental AOF (deadlines far away or in the past)."""
    r.hset("inc", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
    r.hexpire("inc", 3600, "a")
    r.hincrbyfloat("inc", "b", "0.25")
    r.hgetex("inc", "c", px=7_200_000)
    r.hgetdel("inc", "d")
    r.hsetex("inc", "e", "5", ex=9000)


def _unordered_ties(snap: dict[str, Any]) -> dict[str, Any]:
    """A rewrite in command form replays HMSET + HPEXPIREAT field by field, which puts fields
    of equal deadline in the opposite order (each goes before the others): Redis does that to
    its own AOF too. Everything else must survive."""
    out = dict(snap)
    out["ties"] = dict(snap["ties"], fields=sorted(snap["ties"]["fields"]))
    return out


def _load_both(directory: Path, tmp: Path) -> tuple[Any, Any]:
    """What redis-server and Sluice each make of the same AOF directory."""
    import shutil

    copy = tmp / "copy"
    shutil.copytree(directory, copy)
    p = _redis(directory, "--appendonly", "yes")
    try:
        c = p.client()
        theirs = (hash_snapshot(c), c.hgetall("inc"), c.hpexpiretime("inc", "a", "b", "c", "e"))
    finally:
        p.stop()
    s = ThreadedServer([f"dir {copy}", "appendonly yes"]).start()
    try:
        c = s.client()
        ours = (hash_snapshot(c), c.hgetall("inc"), c.hpexpiretime("inc", "a", "b", "c", "e"))
    finally:
        s.stop()
    return ours, theirs


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_sluice_aof_with_hashes_loads_in_redis(dirs: tuple[Path, Path], tmp_path: Path,
                                               preamble: str) -> None:
    a, _ = dirs
    s = ThreadedServer([f"dir {a}", "appendonly yes", f"aof-use-rdb-preamble {preamble}"]).start()
    try:
        r = s.client()
        fill_hashes(r)
        assert r.bgrewriteaof()
        wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
        _expiry_writes(r)
        before = (hash_snapshot(r), r.hgetall("inc"), r.hpexpiretime("inc", "a", "b", "c", "e"))
    finally:
        s.stop()
    out = _check("redis-check-aof", a / "appendonlydir" / "appendonly.aof.manifest")
    assert "All AOF files and manifest are valid" in out
    ours, theirs = _load_both(a, tmp_path)
    assert ours == theirs
    if preamble == "yes":
        assert theirs == before
    else:
        assert _unordered_ties(theirs[0]) == _unordered_ties(before[0])
        assert theirs[1:] == before[1:]


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_redis_aof_with_hashes_loads_in_sluice(dirs: tuple[Path, Path], tmp_path: Path,
                                               preamble: str) -> None:
    _, b = dirs
    p = _redis(b, "--appendonly", "yes", "--aof-use-rdb-preamble", preamble)
    try:
        r = p.client()
        fill_hashes(r)
        r.bgrewriteaof()
        wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0
                   and r.info("persistence")["aof_rewrites"] >= 1, what="redis rewrite")
        _expiry_writes(r)
        before = (hash_snapshot(r), r.hgetall("inc"), r.hpexpiretime("inc", "a", "b", "c", "e"))
    finally:
        p.stop()
    from sluice.tools.check_aof import main as check_aof

    assert check_aof([str(b / "appendonlydir" / "appendonly.aof.manifest")]) == 0
    ours, theirs = _load_both(b, tmp_path)
    assert ours == theirs
    if preamble == "yes":
        assert ours == before
    else:
        assert _unordered_ties(ours[0]) == _unordered_ties(before[0])
        assert ours[1:] == before[1:]


@pytest.mark.parametrize("key", KEYS)
def test_dump_payloads_restore_both_ways(sluice: ThreadedServer, reference: ProcessServer,
                                         key: str) -> None:
    ours, theirs = sluice.client(), reference.client()
    try:
        fill_hashes(ours)
        fill_hashes(theirs)
        for src, dst in ((ours, theirs), (theirs, ours)):
            payload = src.dump(key)
            assert payload is not None
            assert dst.restore("copy", 0, payload, replace=True)
            assert dst.hgetall("copy") == src.hgetall(key)
            assert dst.object("encoding", "copy") == src.object("encoding", key)
            fields = sorted(src.hkeys(key))
            assert dst.hpexpiretime("copy", *fields) == src.hpexpiretime(key, *fields)
            if src.object("encoding", key) != b"hashtable":
                assert dst.hkeys("copy") == src.hkeys(key)
    finally:
        ours.flushall()
        theirs.flushall()


def _incr_commands(directory: Path) -> list[list[bytes]]:
    aof_dir = directory / "appendonlydir"
    incr = sorted(aof_dir.glob("*.incr.aof"))
    assert incr, list(aof_dir.iterdir())
    data = b"".join(f.read_bytes() for f in incr)
    # Deadlines depend on each server's clock: only their presence is compared.
    return [[re.sub(rb"^1[0-9]{12}$", b"<ms>", a) for a in argv] for argv, _ in parse_commands(data, 0)]


def test_both_servers_log_the_same_hash_effects(dirs: tuple[Path, Path]) -> None:
    """The same commands on both servers, appendonly: the same commands in the incremental
    AOF (a relative deadline becomes HPEXPIREAT/PXAT with an absolute one; HINCRBYFLOAT an
    HSETEX KEEPTTL; HGETEX and HGETDEL their effects; a deadline in the past HDELs)."""
    a, b = dirs

    def work(r: redis.Redis) -> None:
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
        r.hexpire("h", 3600, "a", "nope", nx=True)
        r.hpexpire("h", 7_200_000, "a", "b", gt=True)
        r.hexpireat("h", 1, "e")
        r.hset("h", mapping={"x": "1", "y": "2"})
        r.hpexpireat("h", 1, "x", "y", "nope")  # two HDELs from one command
        r.hincrbyfloat("h", "c", "1.25")
        r.hgetex("h", "c", ex=100)
        r.hgetex("h", "c", persist=True)
        r.hgetex("h", "c")
        r.hgetdel("h", "d", "zz")
        r.hsetex("h", "f", "6", px=5000)
        r.execute_command("HSETEX", "h", "FXX", "EXAT", "1", "FIELDS", "1", "f", "7")
        r.hpersist("h", "a", "f")
        r.hincrby("h", "n", 3)
        r.hsetnx("h", "n", "x")
        r.hdel("h", "n", "zz")
        r.hget("h", "a")
        with r.pipeline(transaction=True) as pipe:
            pipe.hset("h", "t", "1")
            pipe.hexpire("h", 50, "t")
            pipe.execute()

    s = ThreadedServer([f"dir {a}", "appendonly yes"]).start()
    try:
        work(s.client())
    finally:
        s.stop()
    p = _redis(b, "--appendonly", "yes")
    try:
        work(p.client())
    finally:
        p.stop()
    assert _incr_commands(a) == _incr_commands(b)
