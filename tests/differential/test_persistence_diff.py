"""Files and payloads move between Sluice and the reference redis-server (8.6.3) both ways.

* a dump.rdb written by Sluice loads in redis-server (and redis-check-rdb accepts it), and one
  written by redis-server loads in Sluice, with the same data: strings, lists, TTLs, streams
  with consumer groups, PELs (owners, delivery counts and times), consumers, tombstones, sets
  and sorted sets of every encoding (members, scores as printed, OBJECT ENCODING);
* an AOF directory written by Sluice (RDB preamble or commands) passes redis-check-aof and
  loads in redis-server; one written by redis-server loads in Sluice;
* DUMP payloads restore on the other server;
* FLUSHALL with save points survives a SIGKILL right after it on both (the empty snapshot is
  written at once; a BGSAVE of the old data in flight is stopped).

XINFO STREAM FULL is compared whole, ``active-time`` and the IDMP fields included: both write
RDB version 13 with Redis 8.6's stream type, which carries them (with the 7.0.15 reference
they had to be left out).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support import (
    ProcessServer,
    RawClient,
    ThreadedServer,
    require_redis_server,
    wait_until,
)

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

def fill(r: redis.Redis) -> None:
    """The same dataset on either server (IDs and times come from the server's clock)."""
    r.set("str", "hello")
    r.set("int", "12345")
    r.set("long", "abc" * 300)
    r.set("ttl", "x", px=600_000)
    r.rpush("list", *range(2000), "big" * 5000)
    for i in range(250):
        fields = {"a": str(i), "b": "x" * (i % 7)} if i % 5 else {"other": "y", "n": str(i)}
        r.xadd("s", fields)  # type: ignore[arg-type]
    ids = [e[0] for e in r.xrange("s")]
    r.xdel("s", ids[3], ids[100])
    r.xgroup_create("s", "g1", "0")
    r.xgroup_create("s", "g2", "$")
    r.xreadgroup("g1", "alice", {"s": ">"}, count=10)
    r.xreadgroup("g1", "bob", {"s": ">"}, count=5)
    r.xack("s", "g1", ids[0], ids[1])
    r.xclaim("s", "g1", "carol", 0, [ids[5]])
    r.xadd("s2", {"f": "v"}, id="5-5")
    r.xgroup_create("s2", "empty", "0")
    r.xgroup_createconsumer("s2", "empty", "nobody")
    r.execute_command("SELECT", 5)
    r.set("db5", "five")
    r.execute_command("SELECT", 0)
    fill_sets(r)


# Sets and sorted sets of every encoding: intsets of each width, a listpack with integer and
# string members, a hash table; listpack and skiplist sorted sets with every kind of score.
SET_KEYS = ("set_int16", "set_int32", "set_int64", "set_lp", "set_ht")
ZSET_KEYS = ("z_lp", "z_sl")


def fill_sets(r: redis.Redis) -> None:
    r.sadd("set_int16", *range(-50, 50))
    r.sadd("set_int32", *range(-70_000, -69_900), 70_000)
    r.sadd("set_int64", 1, 2**40, -(2**62))
    r.sadd("set_lp", *[f"m{i}" for i in range(40)], 7, -3, "x" * 60)
    r.srem("set_lp", "m3", 7)
    r.sadd("set_ht", *[f"member:{i}" for i in range(600)], 12, "y" * 200)
    r.srem("set_ht", *[f"member:{i}" for i in range(0, 600, 3)])
    scores = {"neg": -2.5, "zero": 0, "negzero": -0.0, "inf": float("inf"),
              "ninf": float("-inf"), "tiny": 1e-7, "third": 1 / 3, "big": 1e18, "huge": 5e18,
              "frac": 123456789.123}
    r.zadd("z_lp", {**scores, **{f"m{i}": i * 1.5 for i in range(30)}})
    r.zadd("z_sl", {**scores, **{f"s{i}": i / 7 for i in range(400)}, "w" * 100: 3})
    r.zrem("z_sl", "s5", "s77")


def set_snapshot(r: redis.Redis) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in SET_KEYS:
        out[key] = (sorted(r.smembers(key)), r.object("encoding", key))
    for key in ZSET_KEYS:
        # raw replies: -0 and the text of every score, not redis-py's floats
        out[key] = (r.execute_command("ZRANGE", key, 0, -1, "WITHSCORES", NEVER_DECODE=True),
                    r.object("encoding", key))
    return out


def snapshot(r: redis.Redis) -> dict[str, Any]:
    out: dict[str, Any] = {
        "str": r.get("str"), "int": r.get("int"), "long": r.get("long"), "ttl": r.get("ttl"),
        "ttl_ok": 0 < r.pttl("ttl") <= 600_000, "list": r.lrange("list", 0, -1),
        "db5": redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=5).get("db5"),
    }
    for key in ("s", "s2"):
        out[key] = r.execute_command("XINFO", "STREAM", key, "FULL")
    out.update(set_snapshot(r))
    return out


@pytest.fixture
def tmp_dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    require_redis_server()
    a, b = tmp_path / "sluice", tmp_path / "redis"
    a.mkdir()
    b.mkdir()
    yield a, b


def _redis(dir_: Path, *args: str) -> ProcessServer:
    return ProcessServer("redis", ["--dir", str(dir_), *args], cwd=str(dir_)).start()


def _check(tool: str, path: Path) -> str:
    """Run the reference's redis-check-rdb / redis-check-aof (redis-server picks the tool by
    argv[0]). Not Debian's 7.0.15 tools on PATH: Sluice writes RDB version 13, as Redis 8.6
    does, and 7.0 refuses that version in our files as in 8.6's."""
    proc = subprocess.run([tool, str(path)], executable=require_redis_server(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_sluice_rdb_loads_in_redis(tmp_dirs: tuple[Path, Path]) -> None:
    a, _ = tmp_dirs
    s = ThreadedServer([f"dir {a}"]).start()
    try:
        r = s.client()
        fill(r)
        ours = snapshot(r)
        assert r.save()
    finally:
        s.stop()
    assert "RDB looks OK" in _check("redis-check-rdb", a / "dump.rdb")
    p = _redis(a)
    try:
        assert snapshot(p.client()) == ours
    finally:
        p.stop()


def test_redis_rdb_loads_in_sluice(tmp_dirs: tuple[Path, Path]) -> None:
    _, b = tmp_dirs
    p = _redis(b)
    try:
        r = p.client()
        fill(r)
        theirs = snapshot(r)
        assert r.save()
    finally:
        p.stop()
    from sluice.tools.check_rdb import main as check_rdb

    assert check_rdb([str(b / "dump.rdb")]) == 0
    s = ThreadedServer([f"dir {b}"]).start()
    try:
        assert snapshot(s.client()) == theirs
    finally:
        s.stop()


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_sluice_aof_passes_redis_check_aof_and_loads_in_redis(tmp_dirs: tuple[Path, Path],
                                                              preamble: str) -> None:
    a, _ = tmp_dirs
    lines = [f"dir {a}", "appendonly yes", f"aof-use-rdb-preamble {preamble}"]
    s = ThreadedServer(lines).start()
    try:
        r = s.client()
        fill(r)
        assert r.bgrewriteaof()
        wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
        r.set("after-rewrite", "1")  # in the incremental file
        r.rpush("list", "tail")
        ours = snapshot(r)
    finally:
        s.stop()
    out = _check("redis-check-aof", a / "appendonlydir" / "appendonly.aof.manifest")
    assert "All AOF files and manifest are valid" in out
    p = _redis(a, "--appendonly", "yes")
    try:
        theirs = snapshot(p.client())
        # A rewrite in command form recreates consumers with XGROUP CREATECONSUMER / XCLAIM:
        # their seen-time and active-time are the load time on either server, as in Redis.
        assert _no_seen(theirs) == _no_seen(ours)
        assert p.client().get("after-rewrite") == b"1"
    finally:
        p.stop()


def _no_seen(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _no_seen(v) for k, v in x.items() if k not in (b"seen-time", b"active-time")}
    if isinstance(x, list):
        return [_no_seen(v) for v in x]
    return x


def test_redis_aof_loads_in_sluice(tmp_dirs: tuple[Path, Path]) -> None:
    _, b = tmp_dirs
    p = _redis(b, "--appendonly", "yes")
    try:
        r = p.client()
        r.set("before", "1")
        r.bgrewriteaof()
        wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0
                   and r.info("persistence")["aof_rewrites"] >= 1, what="redis rewrite")
        fill(r)  # logged as commands in the incremental file
        theirs = snapshot(r)
    finally:
        p.stop()
    from sluice.tools.check_aof import main as check_aof

    assert check_aof([str(b / "appendonlydir" / "appendonly.aof.manifest")]) == 0
    s = ThreadedServer([f"dir {b}", "appendonly yes"]).start()
    try:
        # Replayed commands: consumers' seen-time and active-time are the replay time, as
        # when Redis replays.
        assert _no_seen(snapshot(s.client())) == _no_seen(theirs)
        assert s.client().get("before") == b"1"
    finally:
        s.stop()


@pytest.mark.parametrize("key", ["str", "int", "long", "list", "s", "s2", *SET_KEYS,
                                 *ZSET_KEYS])
def test_dump_payloads_restore_both_ways(sluice: ThreadedServer, reference: ProcessServer,
                                         key: str) -> None:
    ours, theirs = sluice.client(), reference.client()
    try:
        fill(ours)
        fill(theirs)
        for src, dst in ((ours, theirs), (theirs, ours)):
            payload = src.dump(key)
            assert payload is not None
            dst.restore("copy", 0, payload, replace=True)
            if key in ("s", "s2"):
                assert dst.execute_command("XINFO", "STREAM", "copy", "FULL") == \
                    src.execute_command("XINFO", "STREAM", key, "FULL")
            else:
                assert dst.dump("copy") is not None
                assert dst.type("copy") == src.type(key)
                assert dst.object("encoding", "copy") == src.object("encoding", key)
                if key in SET_KEYS:
                    assert sorted(dst.smembers("copy")) == sorted(src.smembers(key))
                elif key in ZSET_KEYS:
                    assert dst.execute_command("ZRANGE", "copy", 0, -1, "WITHSCORES",
                                               NEVER_DECODE=True) == src.execute_command(
                        "ZRANGE", key, 0, -1, "WITHSCORES", NEVER_DECODE=True)
                elif key == "list":
                    assert dst.lrange("copy", 0, -1) == src.lrange(key, 0, -1)
                else:
                    assert dst.get("copy") == src.get(key)
    finally:
        ours.flushall()
        theirs.flushall()


def test_stream_idmp_state_survives_dump_restore_both_ways(sluice: ThreadedServer,
                                                          reference: ProcessServer) -> None:
    """The IDMP settings, history and counters (stream type 26) move with the stream: on the
    other server XINFO agrees and a retried XADD IDMP gets the original entry ID back."""
    ours, theirs = sluice.client(), reference.client()
    first: dict[redis.Redis, bytes] = {}
    try:
        for r in (ours, theirs):
            r.xadd("s", {"f": "plain"})
            r.execute_command("XCFGSET", "s", "IDMP-DURATION", 3600, "IDMP-MAXSIZE", 7)
            for pid, iid in (("p1", "a"), ("p1", "b"), ("p0", "a"), ("p1", "a")):
                sid = r.execute_command("XADD", "s", "IDMP", pid, iid, "*", "f", iid)
                first.setdefault(r, sid)
        for src, dst in ((ours, theirs), (theirs, ours)):
            payload = src.dump("s")
            assert payload is not None
            dst.restore("copy", 0, payload, replace=True)
            assert dst.execute_command("XINFO", "STREAM", "copy") == \
                src.execute_command("XINFO", "STREAM", "s")
            again = dst.execute_command("XADD", "copy", "IDMP", "p1", "a", "*", "f", "a")
            assert again == first[src]
            assert dst.execute_command("XINFO", "STREAM", "copy")[b"iids-duplicates"] == 2
    finally:
        ours.flushall()
        theirs.flushall()


@pytest.mark.parametrize("make, what", [
    (("VADD", "k", "VALUES", "2", "1", "2", "el"), r"type 7 \(module type 'vectorset'\)"),
])
def test_payloads_of_types_sluice_lacks_are_refused_by_name(
        sluice: ThreadedServer, reference: ProcessServer, make: tuple[str, ...], what: str
) -> None:
    theirs = reference.client()
    try:
        theirs.execute_command(*make)
        payload = theirs.dump("k")
        assert payload is not None
        # Redis's "Bad data format", saying which type Sluice does not have.
        with pytest.raises(redis.ResponseError, match=f"^Bad data format: RDB value {what} is "
                                                      f"not supported"):
            sluice.client().restore("k", 0, payload)
        assert sluice.client().exists("k") == 0
    finally:
        theirs.flushall()


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_flushall_survives_a_crash(tmp_path: Path, appendonly: str) -> None:
    """FLUSHALL with save points writes the empty snapshot at once (and is logged to the AOF,
    whose count of changes the snapshot resets): killed right after it, neither server
    brings the flushed keys back, nor their BGSAVE in flight."""
    require_redis_server()
    outcomes = []
    for kind in ("sluice", "redis"):
        d = tmp_path / kind
        d.mkdir()
        args = ["--dir", str(d), "--save", "3600 1", "--appendonly", appendonly]
        server = ProcessServer(kind, args, cwd=str(d)).start()
        try:
            r = server.client()
            r.set("k", "v")
            r.rpush("l", "a", "b")
            assert r.save()
            r.set("after", "save")
            r.bgsave()  # may still be writing the old data when FLUSHALL comes
            r.flushall()
            changes = r.info("persistence")["rdb_changes_since_last_save"]
            server.kill()
            server = ProcessServer(kind, args, cwd=str(d)).start()
            outcomes.append((changes, server.client().keys("*")))
        finally:
            server.stop()
    assert outcomes[0] == outcomes[1] == (0, [])


def test_a_failed_flushall_snapshot_does_not_refuse_writes(tmp_path: Path) -> None:
    """The snapshot FLUSHALL writes may fail (here: its directory is gone). Redis logs it and
    goes on: writes are not refused, and INFO rdb_saves does not count it."""
    require_redis_server()
    outcomes = []
    for kind in ("sluice", "redis"):
        d = tmp_path / kind
        d.mkdir()
        server = ProcessServer(kind, ["--dir", str(d), "--save", "3600 1"], cwd=str(d)).start()
        try:
            r = server.client()
            r.set("k", "v")
            d.rmdir()
            r.flushall()
            info = r.info("persistence")
            outcomes.append((r.set("after", "1"), info["rdb_saves"],
                             info["rdb_last_bgsave_status"]))
        finally:
            server.kill()
    assert outcomes[0] == outcomes[1] == (True, 0, "ok")


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_bgrewriteaof_inside_exec_is_scheduled(tmp_dirs: tuple[Path, Path],
                                               appendonly: str) -> None:
    """Inside a transaction BGREWRITEAOF is only scheduled (Redis's in_exec check, Tcl multi
    "MULTI with BGREWRITEAOF"): EXEC's reply says so on both servers, and the rewrite then
    runs once the transaction is over (a fork counted, a rewrite done)."""
    ours_dir, theirs_dir = tmp_dirs
    servers = [ProcessServer(kind, ["--dir", str(d), "--appendonly", appendonly], cwd=str(d))
               for kind, d in (("sluice", ours_dir), ("redis", theirs_dir))]
    replies = []
    try:
        for server in servers:
            server.start()
            r = server.client()
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the first rewrite")
            forks = r.info("stats")["total_forks"]
            raw = RawClient(server.port)
            for command in (["MULTI"], ["SET", "foo", "bar"], ["BGREWRITEAOF"]):
                raw.call(*command)
            replies.append(raw.call("EXEC"))
            wait_until(lambda r=r, forks=forks: r.info("stats")["total_forks"] > forks,
                       what="the scheduled rewrite")
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the rewrite to end")
    finally:
        for server in servers:
            server.stop()
    assert replies[0] == replies[1] == (
        b"*2\r\n+OK\r\n+Background append only file rewriting scheduled\r\n")


def test_appendonly_turned_on_inside_exec_is_scheduled(tmp_dirs: tuple[Path, Path]) -> None:
    """CONFIG SET appendonly yes inside a transaction forks nothing there: the first rewrite
    is scheduled, the log says so in Redis's words, the cron starts it after EXEC, and the
    transaction's write is in the new AOF (Tcl multi "MULTI with config set appendonly")."""
    outcomes = []
    for kind, d in zip(("sluice", "redis"), tmp_dirs, strict=True):
        log = d / "server.log"
        server = ProcessServer(kind, ["--dir", str(d), "--logfile", str(log),
                                      "--enable-debug-command", "yes"], cwd=str(d))
        server.start()
        try:
            r = server.client()
            forks = r.info("stats")["total_forks"]
            raw = RawClient(server.port)
            for command in (["MULTI"], ["SET", "foo", "bar"],
                            ["CONFIG", "SET", "appendonly", "yes"]):
                raw.call(*command)
            reply = raw.call("EXEC")
            wait_until(lambda r=r, forks=forks: r.info("stats")["total_forks"] > forks,
                       what="the scheduled rewrite")
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the rewrite to end")
            r.execute_command("DEBUG", "LOADAOF")
            scheduled = [line[line.index("AOF was"):] for line in log.read_text().splitlines()
                         if "AOF was enabled" in line]
            outcomes.append((reply, scheduled, r.get("foo")))
            r.close()
        finally:
            server.stop()
    assert outcomes[0] == outcomes[1] == (
        b"*2\r\n+OK\r\n+OK\r\n",
        ["AOF was enabled during a transaction. An AOF background was scheduled to start "
         "when possible."], b"bar")


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_bgrewriteaof_waits_for_a_bgsave_and_refuses_a_second(tmp_dirs: tuple[Path, Path],
                                                              appendonly: str) -> None:
    """While a BGSAVE child runs, BGREWRITEAOF is scheduled (INFO aof_rewrite_scheduled),
    and once its own child runs a second BGREWRITEAOF is refused: the replies of both
    servers, byte for byte (Tcl aofrw "BGREWRITEAOF is delayed if BGSAVE is in progress").
    rdb-key-save-delay keeps each child busy; killing it lets the next one start."""
    ours_dir, theirs_dir = tmp_dirs
    servers = [ProcessServer(kind, ["--dir", str(d), "--appendonly", appendonly], cwd=str(d))
               for kind, d in (("sluice", ours_dir), ("redis", theirs_dir))]
    replies: list[list[bytes]] = []
    try:
        for server in servers:
            server.start()
            r = server.client()
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the first rewrite")
            raw = RawClient(server.port)
            got = [raw.call("SET", "k", "v"),
                   raw.call("CONFIG", "SET", "rdb-key-save-delay", "10000000"),
                   raw.call("BGSAVE"), raw.call("BGREWRITEAOF")]
            info = r.info("persistence")
            assert (info["aof_rewrite_scheduled"], info["rdb_bgsave_in_progress"]) == (1, 1)
            raw.call("CONFIG", "SET", "rdb-key-save-delay", "0")
            subprocess.run(["pkill", "-9", "-P", str(server.proc.pid)], check=False)
            wait_until(lambda r=r: r.info("persistence")["aof_rewrite_in_progress"] == 1
                       or r.info("persistence")["aof_rewrite_scheduled"] == 0,
                       what="the scheduled rewrite to start")
            raw.call("CONFIG", "SET", "rdb-key-save-delay", "10000000")
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the scheduled rewrite to end")
            got += [raw.call("BGREWRITEAOF"), raw.call("BGREWRITEAOF")]
            replies.append(got)
            raw.call("CONFIG", "SET", "rdb-key-save-delay", "0")
            subprocess.run(["pkill", "-9", "-P", str(server.proc.pid)], check=False)
    finally:
        for server in servers:
            server.stop()
    assert replies[0] == replies[1]
    assert replies[0][3] == b"+Background append only file rewriting scheduled\r\n"
    assert replies[0][5].startswith(b"-ERR Background append only file rewriting already")


def test_debug_reload_options_and_loadaof(tmp_dirs: tuple[Path, Path]) -> None:
    """DEBUG RELOAD [NOSAVE] [NOFLUSH], DEBUG LOADAOF, and their errors: each reply byte for
    byte as redis-server's, and the data after each step the same (DEBUG DIGEST equal)."""
    ours_dir, theirs_dir = tmp_dirs
    script: list[list[str]] = [
        ["RPUSH", "l", "a", "b"], ["HSET", "h", "f", "v"], ["SET", "t", "x", "EX", "1000"],
        ["DEBUG", "LOADAOF"], ["DEBUG", "DIGEST"],
        ["SET", "k", "1"], ["DEBUG", "RELOAD"], ["DEBUG", "DIGEST"],
        ["SET", "lost", "1"], ["DEBUG", "RELOAD", "NOSAVE"], ["EXISTS", "lost"],
        ["SET", "kept", "1"], ["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"],
        ["EXISTS", "kept", "k"], ["DEBUG", "DIGEST"],
        ["DEBUG", "RELOAD", "BOGUS"], ["DEBUG", "RELOAD", "nosave", "noflush", "merge"],
        ["CONFIG", "SET", "appendonly", "no"], ["DEBUG", "LOADAOF"], ["DEBUG", "DIGEST"],
    ]
    outcomes = []
    for kind, d in (("sluice", ours_dir), ("redis", theirs_dir)):
        server = ProcessServer(kind, ["--dir", str(d), "--appendonly", "yes",
                                      "--enable-debug-command", "yes"], cwd=str(d)).start()
        try:
            r = server.client()
            wait_until(lambda r=r: not r.info("persistence")["aof_rewrite_in_progress"],
                       what="the first rewrite")
            raw = RawClient(server.port)
            outcomes.append([raw.call(*command) for command in script])
        finally:
            server.stop()
    for command, ours, theirs in zip(script, *outcomes, strict=True):
        assert ours == theirs, (command, ours, theirs)
    assert outcomes[0][script.index(["EXISTS", "lost"])] == b":0\r\n"
    assert outcomes[0][script.index(["EXISTS", "kept", "k"])] == b":2\r\n"


def test_debug_loadaof_without_an_aof_fails_as_redis(tmp_dirs: tuple[Path, Path]) -> None:
    replies = []
    for kind, d in (("sluice", tmp_dirs[0]), ("redis", tmp_dirs[1])):
        server = ProcessServer(kind, ["--dir", str(d), "--enable-debug-command", "yes"],
                               cwd=str(d)).start()
        try:
            raw = RawClient(server.port)
            replies.append([raw.call("SET", "k", "v"), raw.call("DEBUG", "LOADAOF"),
                            raw.call("DBSIZE")])
        finally:
            server.stop()
    assert replies[0] == replies[1]
