"""Function libraries across restarts and across servers: an RDB written by redis-server 8.6.3
with libraries loads in Sluice, Sluice's loads in redis-server (both checked by the reference's
redis-check-rdb), and Sluice's AOF keeps them through a rewrite, with and without the RDB
preamble. The libraries are compared with FUNCTION LIST WITHCODE on both sides."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support import ProcessServer, require_redis_server, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

LIBS = [
    "#!lua name=math\n"
    "redis.register_function('double', function(keys, args) return args[1] * 2 end)\n"
    "redis.register_function{function_name='ro_get', callback=function(keys) "
    "return redis.call('get', keys[1]) end, flags={'no-writes'}, description='read'}",
    "#!lua name=bump\nredis.register_function('bump', function(keys) "
    "return redis.call('incr', keys[1]) end)",
]


def _load(r: redis.Redis) -> None:
    for code in LIBS:
        r.function_load(code)
    r.set("k", "v")


def _check(r: redis.Redis) -> Any:
    assert r.fcall("double", 0, 21) == 42
    assert r.fcall_ro("ro_get", 1, "k") == b"v"
    assert r.fcall("bump", 1, "n") == int(r.get("n") or 0)
    # FUNCTION LIST's order is not deterministic on Redis (its dicts): libraries and their
    # functions are sorted by name before comparing.
    libs = []
    for lib in r.function_list(withcode=True):
        fields = dict(zip(lib[::2], lib[1::2], strict=True))
        fields[b"functions"] = sorted(fields[b"functions"], key=lambda f: f[1])
        libs.append(fields)
    return sorted(libs, key=lambda lib: lib[b"library_name"])


def _server(kind: str, dir_: Path, *args: str) -> ProcessServer:
    return ProcessServer(kind, ["--dir", str(dir_), *args], cwd=str(dir_)).start()


def _check_rdb(path: Path) -> None:
    proc = subprocess.run(["redis-check-rdb", str(path)], executable=require_redis_server(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("writer,reader", [("redis", "sluice"), ("sluice", "redis")])
def test_an_rdb_with_libraries_moves_between_servers(tmp_path: Path, writer: str,
                                                     reader: str) -> None:
    require_redis_server()
    first = _server(writer, tmp_path)
    try:
        r = first.client()
        _load(r)
        r.save()
    finally:
        first.stop()
    _check_rdb(tmp_path / "dump.rdb")
    second = _server(reader, tmp_path)
    try:
        loaded = _check(second.client())
    finally:
        second.stop()
    (tmp_path / "fresh").mkdir()
    fresh = _server("redis", tmp_path / "fresh")
    try:
        _load(fresh.client())
        assert loaded == _check(fresh.client())  # what a server that loaded them directly says
    finally:
        fresh.stop()


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_libraries_survive_an_aof_rewrite(tmp_path: Path, preamble: str) -> None:
    args = ("--appendonly", "yes", "--aof-use-rdb-preamble", preamble)
    s = _server("sluice", tmp_path, *args)
    try:
        r = s.client()
        _load(r)
        before = _check(r)
        r.bgrewriteaof()
        wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0
                   and r.info("persistence")["aof_rewrites"] >= 1, what="the rewrite")
        r.function_delete("bump")  # after the rewrite: in the new incremental file
    finally:
        s.stop()
    s = _server("sluice", tmp_path, *args)
    try:
        r = s.client()
        assert [lib[1] for lib in r.function_list()] == [b"math"]
        with pytest.raises(redis.ResponseError, match="Function not found"):
            r.fcall("bump", 1, "n")
        r.function_load(LIBS[1])
        assert _check(r)[0] == before[0]  # math, unchanged
    finally:
        s.stop()


def _lib(name: str) -> str:
    return f"#!lua name={name}\nredis.register_function('{name}', function() return '{name}' end)"


def _libraries(r: redis.Redis) -> list[bytes]:
    return sorted(lib[1] for lib in r.function_list())


def test_debug_reload_and_libraries(tmp_path: Path) -> None:
    """Tcl functions 'test debug reload different options': DEBUG RELOAD empties the
    libraries with the keys; NOFLUSH keeps them and a library in the snapshot that is still
    loaded fails the load, unless MERGE."""
    require_redis_server()
    seen = []
    for kind in ("sluice", "redis"):
        (tmp_path / kind).mkdir()
        server = _server(kind, tmp_path / kind, "--enable-debug-command", "yes")
        try:
            r = server.client()
            steps: list[Any] = []
            r.function_load(_lib("one"))
            r.save()
            r.function_load(_lib("two"))
            for argv in (("NOSAVE",), ("NOSAVE", "NOFLUSH"), ("NOSAVE", "NOFLUSH", "MERGE")):
                try:
                    steps.append(r.execute_command("DEBUG", "RELOAD", *argv))
                except redis.ResponseError as e:
                    steps.append(str(e))
                steps.append(_libraries(r))
                r.function_load(_lib("two"), replace=True)
            seen.append(steps)
        finally:
            server.stop()
    assert seen[0] == seen[1]
    assert seen[0][1] == [b"one"]  # RELOAD NOSAVE: two, never saved, is gone
    assert seen[0][2].startswith("Error trying to load the RDB")  # NOFLUSH: one is there
