"""AOF and RDB persistence through a real socket: restart, rewrite, disk errors, truncation."""

from __future__ import annotations

import errno
import os
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sluice.server.loading import LoadError
from sluice.storage.aof import Manifest, encode_command, parse_commands
from sluice.storage.keyspace import FakeClock
from sluice.storage.rdb_codec import crc64, enc_len, enc_string
from tests.support import REDIS_SERVER, ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]


def _aof(dir_: Path, *extra: str) -> list[str]:
    return [f"dir {dir_}", "appendonly yes", "appendfsync always", *extra]


def _incr_commands(dir_: Path) -> list[list[bytes]]:
    m = Manifest.parse((dir_ / "appendonlydir" / "appendonly.aof.manifest").read_text())
    out: list[list[bytes]] = []
    for info in m.incrs:
        out += [a for a, _ in parse_commands((dir_ / "appendonlydir" / info.name).read_bytes())]
    return out


def _restart(server: ThreadedServer, make_server: Factory, *lines: str) -> ThreadedServer:
    server.stop()
    return make_server(*lines)


def test_aof_replays_everything_after_restart(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    r = s.client()
    r.set("a", "1")
    r.set("ttl", "x", ex=1000)
    r.rpush("l", "x", "y", "z")
    r.lpop("l")
    r.incr("n")
    r.expire("a", 500)
    with r.pipeline(transaction=True) as p:
        p.incr("n").rpush("l", "w").execute()
    r3 = s.client(db=3)
    r3.set("in3", "v")
    before = {k: r.dump(k) for k in r.keys("*")}
    ttl = r.pttl("ttl")
    s = _restart(s, make_server, *_aof(tmp_path))
    r = s.client()
    assert {k: r.dump(k) for k in r.keys("*")} == before
    assert 0 < r.pttl("ttl") <= ttl
    assert s.client(db=3).get("in3") == b"v"
    logged = _incr_commands(tmp_path)
    names = [a[0].upper() for a in logged]
    assert [b"SELECT", b"0"] in logged and [b"SELECT", b"3"] in logged
    assert b"MULTI" in names and b"EXEC" in names
    assert any(a[0].upper() == b"PEXPIREAT" for a in logged)  # EXPIRE logged as absolute
    assert any(b"PXAT" in [x.upper() for x in a] for a in logged)  # SET EX logged as PXAT
    assert b"EX" not in [x.upper() for a in logged for x in a]


def test_reply_is_not_sent_before_fsync(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    aof = s.server.aof  # type: ignore[union-attr]
    entered, release = threading.Event(), threading.Event()
    real_fsync = aof.fsync

    def gated(fd: int) -> None:
        entered.set()
        release.wait(10)
        real_fsync(fd)

    aof.fsync = gated
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.sendall(encode_command([b"SET", b"k", b"v"]))
    assert entered.wait(10)
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):  # the command ran, but its reply waits for the disk
        sock.recv(100)
    sock.setblocking(True)
    sock.settimeout(10)
    release.set()
    assert sock.recv(100) == b"+OK\r\n"
    sock.close()


def test_one_fsync_for_a_pipelined_batch(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    aof = s.server.aof  # type: ignore[union-attr]
    calls = []
    real_fsync = aof.fsync
    aof.fsync = lambda fd: (calls.append(fd), real_fsync(fd))
    r = s.client()
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.set(f"k{i}", i)
        p.execute()
    assert 1 <= len(calls) <= 3
    assert r.dbsize() == 200


def test_disk_error_refuses_writes_holds_replies_and_recovers(make_server: Factory,
                                                              tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    aof = s.server.aof  # type: ignore[union-attr]
    r = s.client()
    r.set("before", "1")
    real_write = aof.write
    broken = threading.Event()
    broken.set()

    def flaky(fd: int, data: Any) -> int:
        if broken.is_set():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return int(real_write(fd, data))

    aof.write = flaky
    held = socket.create_connection(("127.0.0.1", s.port))
    held.sendall(encode_command([b"SET", b"during", b"1"]))
    # Wait on the server's state from its own thread: a reply produced in the same loop
    # iteration as the failed write is held too (it may have seen the unwritten data).
    wait_until(lambda: s.call(lambda: aof.write_error is not None), what="AOF error")
    assert r.info("persistence")["aof_last_write_status"] == "err"
    with pytest.raises(redis.ResponseError, match="^MISCONF Errors writing to the AOF file: No "
                                                  "space left on device"):
        r.set("refused", "1")
    with pytest.raises(redis.ResponseError, match="MISCONF"):
        r.ping()
    assert r.get("before") == b"1"  # reads go on
    held.setblocking(False)
    with pytest.raises(BlockingIOError):  # not on disk: not acknowledged
        held.recv(100)
    held.setblocking(True)
    held.settimeout(10)
    broken.clear()  # the disk heals; the cron retries the write
    assert held.recv(100) == b"+OK\r\n"
    wait_until(lambda: r.info("persistence")["aof_last_write_status"] == "ok", what="recovery")
    r.set("after", "1")
    held.close()
    s = _restart(s, make_server, *_aof(tmp_path))
    assert s.client().mget("before", "during", "after") == [b"1", b"1", b"1"]


def _write_then_tear(make_server: Factory, tmp_path: Path) -> tuple[Path, bytes]:
    s = make_server(*_aof(tmp_path))
    r = s.client()
    for i in range(5):
        r.set(f"k{i}", i)
    s.stop()
    m = Manifest.parse((tmp_path / "appendonlydir" / "appendonly.aof.manifest").read_text())
    path = tmp_path / "appendonlydir" / m.incrs[-1].name
    return path, path.read_bytes()


def test_torn_tail_is_cut_with_truncated_yes(make_server: Factory, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    path, data = _write_then_tear(make_server, tmp_path)
    whole = len(data)
    path.write_bytes(data + b"*3\r\n$3\r\nSET\r\n$2\r\nk9\r\n$1")
    s = make_server(*_aof(tmp_path))
    assert s.client().dbsize() == 5
    assert path.stat().st_size == whole
    assert f"Truncating the AOF {path.name} at offset {whole}" in caplog.text


def test_torn_tail_is_refused_with_truncated_no(make_server: Factory, tmp_path: Path) -> None:
    path, data = _write_then_tear(make_server, tmp_path)
    path.write_bytes(data + b"*2\r\n$3\r\nDEL")
    with pytest.raises(LoadError, match=rf"{path.name} \(valid up to offset {len(data)} "):
        make_server(*_aof(tmp_path, "aof-load-truncated no"))


def test_corruption_in_the_middle_is_refused_with_offset_and_hint(make_server: Factory,
                                                                    tmp_path: Path) -> None:
    path, data = _write_then_tear(make_server, tmp_path)
    cut = data.index(b"*3", 40)
    path.write_bytes(data[:cut] + b"GARBAGE" + data[cut:])
    with pytest.raises(LoadError, match=rf"at offset {cut} .*sluice-check-aof --fix"):
        make_server(*_aof(tmp_path))


@pytest.mark.parametrize(("command", "message"), [
    ([b"NOSUCH", b"k"], "Unknown command 'NOSUCH' reading the append only file"),
    ([b"GET"], "ERR wrong number of arguments for 'get' command reading the append only file"),
])
def test_a_command_that_cannot_run_refuses_the_load(make_server: Factory, tmp_path: Path,
                                                     command: list[bytes], message: str) -> None:
    path, data = _write_then_tear(make_server, tmp_path)
    path.write_bytes(data + encode_command(command))
    with pytest.raises(LoadError, match=rf"^{message} {path.name}$"):
        make_server(*_aof(tmp_path))


def test_bgrewriteaof_compacts_and_keeps_everything(make_server: Factory,
                                                    tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    r = s.client()
    for i in range(300):
        r.set(f"k{i % 30}", i)
        r.rpush("list", i)
    r.set("ttl", "v", px=100_000)
    size_before = r.info("persistence")["aof_current_size"]
    assert r.bgrewriteaof()
    r.set("during", "1")  # lands in the new incremental file
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    info = r.info("persistence")
    assert info["aof_current_size"] < size_before
    files = sorted(os.listdir(tmp_path / "appendonlydir"))
    assert files == ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof",
                     "appendonly.aof.manifest"]
    expected = {k: r.dump(k) for k in r.keys("*")}
    s = _restart(s, make_server, *_aof(tmp_path))
    r = s.client()
    assert {k: r.dump(k) for k in r.keys("*")} == expected
    assert 0 < r.pttl("ttl") <= 100_000


def test_rewrite_without_rdb_preamble_writes_commands(make_server: Factory,
                                                      tmp_path: Path) -> None:
    lines = _aof(tmp_path, "aof-use-rdb-preamble no")
    s = make_server(*lines)
    r = s.client()
    r.rpush("l", *range(100))
    r.set("s", "v", px=50_000)
    r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    base = (tmp_path / "appendonlydir" / "appendonly.aof.2.base.aof").read_bytes()
    cmds = [a for a, _ in parse_commands(base)]
    assert [c[0] for c in cmds].count(b"RPUSH") == 2  # 64 items per command, as Redis
    assert [b"PEXPIREAT", b"s"] in [c[:2] for c in cmds]
    s = _restart(s, make_server, *lines)
    assert s.client().lrange("l", 0, -1) == [str(i).encode() for i in range(100)]


def test_rewrite_without_rdb_preamble_keeps_idempotent_ids(make_server: Factory,
                                                           tmp_path: Path) -> None:
    """XCFGSET and XIDMPRECORD carry the IDMP state through a command-form rewrite (Redis
    8.6's rewriteStreamObject); a retried XADD after the restart is still a duplicate."""
    lines = _aof(tmp_path, "aof-use-rdb-preamble no")
    s = make_server(*lines)
    r = s.client()
    r.execute_command("XADD", "s", "*", "f", "v")  # created with the default settings
    r.execute_command("XCFGSET", "s", "IDMP-DURATION", "600", "IDMP-MAXSIZE", "50")
    first = r.execute_command("XADD", "s", "IDMP", "p", "i1", "*", "f", "1")
    auto = r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "a", "1", "b", "2")
    gone = r.execute_command("XADD", "s", "IDMP", "q", "x", "*", "f", "2")
    r.xdel("s", gone)  # its iid is not rewritten: XIDMPRECORD would refuse a missing entry
    r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    base = (tmp_path / "appendonlydir" / "appendonly.aof.2.base.aof").read_bytes()
    cmds = [a for a, _ in parse_commands(base)]
    assert [b"XCFGSET", b"s", b"IDMP-DURATION", b"600", b"IDMP-MAXSIZE", b"50"] in cmds
    assert [c[2] for c in cmds if c[0] == b"XIDMPRECORD"] == [b"p", b"p"]
    s = _restart(s, make_server, *lines)
    r = s.client()
    assert r.execute_command("XADD", "s", "IDMP", "p", "i1", "*", "f", "9") == first
    assert r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "b", "2", "a", "1") == auto
    assert r.xlen("s") == 3
    info = r.execute_command("XINFO", "STREAM", "s")
    fields = dict(zip(info[::2], info[1::2], strict=True)) if isinstance(info, list) else info
    assert fields[b"idmp-duration"] == 600 and fields[b"idmp-maxsize"] == 50


def test_auto_rewrite_on_growth(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path, "auto-aof-rewrite-min-size 4kb",
                          "auto-aof-rewrite-percentage 100"))
    r = s.client()
    for i in range(200):
        r.set("same-key", "x" * 50 + str(i))
    wait_until(lambda: r.info("persistence")["aof_rewrites"] >= 1, what="automatic rewrite")


def test_config_set_appendonly_starts_an_aof(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    r.set("early", "1")
    r.config_set("appendonly", "yes")  # a background rewrite writes the first base
    r.set("late", "2")
    assert r.info("persistence")["aof_enabled"] == 1
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="first base")
    r.set("later", "3")
    files = sorted(os.listdir(tmp_path / "appendonlydir"))
    assert files == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof",
                     "appendonly.aof.manifest"]
    s = _restart(s, make_server, *_aof(tmp_path))
    assert s.client().mget("early", "late", "later") == [b"1", b"2", b"3"]


def test_shutdown_waits_for_the_first_base(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    r.set("k", "v")
    r.config_set("appendonly", "yes")
    s = _restart(s, make_server, *_aof(tmp_path))  # stop at once, maybe mid-rewrite
    assert s.client().get("k") == b"v"


def test_rdb_key_save_delay_keeps_a_bgsave_child_busy(make_server: Factory,
                                                      tmp_path: Path) -> None:
    """The hidden rdb-key-save-delay slows the child per key (Redis's tests rely on it to
    catch a BGSAVE in progress); FLUSHALL stops that child, as Redis's does."""
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    assert r.config_get("rdb-key-save-delay") == {"rdb-key-save-delay": "0"}
    r.config_set("rdb-key-save-delay", 1_000_000)  # a second per key
    r.mset({"a": "1", "b": "2", "c": "3"})
    assert r.bgsave()
    assert r.info("persistence")["rdb_bgsave_in_progress"] == 1
    r.flushall()
    wait_until(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0,
               what="the child stopped")
    assert not any(p.name.startswith("temp-") for p in tmp_path.iterdir())


def test_save_bgsave_lastsave_and_reload(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}", "enable-debug-command yes")
    r = s.client()
    r.set("s", "v")
    r.rpush("l", "a", "b")
    r.set("t", "x", px=100_000)
    assert r.save()
    assert (tmp_path / "dump.rdb").exists()
    first = r.lastsave()
    r.set("s", "v2")
    assert r.info("persistence")["rdb_changes_since_last_save"] == 1
    assert r.bgsave()
    wait_until(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0
               and r.info("persistence")["rdb_changes_since_last_save"] == 0, what="bgsave")
    assert r.lastsave() >= first
    if b"debug" in s.server.table:  # type: ignore[union-attr]
        assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.get("s") == b"v2" and r.lrange("l", 0, -1) == [b"a", b"b"]
    s = _restart(s, make_server, f"dir {tmp_path}")
    r = s.client()
    assert r.get("s") == b"v2" and 0 < r.pttl("t") <= 100_000


def test_save_schedule_triggers_bgsave(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}", "save 0 3")
    r = s.client()
    for i in range(3):
        r.set(f"k{i}", i)
    wait_until(lambda: r.info("persistence")["rdb_saves"] >= 1, what="scheduled bgsave")
    assert (tmp_path / "dump.rdb").exists()


def test_shutdown_save(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    if b"shutdown" not in s.server.table:  # type: ignore[union-attr]
        pytest.skip("SHUTDOWN arrives with the server admin commands")
    r = s.client(retry=Retry(NoBackoff(), 0))  # the dropped connection is the answer
    r.set("k", "v")
    r.shutdown(save=True)  # redis-py takes the dropped connection as success
    s.stop()
    s = make_server(f"dir {tmp_path}")
    assert s.client().get("k") == b"v"


def test_failed_bgsave_refuses_writes_when_configured(make_server: Factory,
                                                      tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}", "save 3600 1")
    r = s.client()
    p = s.server.persistence  # type: ignore[union-attr]
    s.call(lambda: setattr(p, "last_bgsave_ok", False) or p.refresh_disk_error())
    with pytest.raises(redis.ResponseError, match="^MISCONF Redis is configured to save RDB"):
        r.set("k", "v")
    assert r.save()
    r.set("k", "v")


def test_dump_restore(r: redis.Redis) -> None:
    r.set("s", "hello")
    r.rpush("l", *range(10))
    for key in ("s", "l"):
        payload = r.dump(key)
        assert payload is not None
        with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists."):
            r.restore(key, 0, payload)
        assert r.restore(key, 0, payload, replace=True)
        assert r.restore(key + "2", 5000, payload)
        assert 0 < r.pttl(key + "2") <= 5000
    assert r.lrange("l2", 0, -1) == r.lrange("l", 0, -1)
    payload = r.dump("s")
    assert payload is not None
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong"):
        r.restore("x", 0, payload[:-1] + bytes([payload[-1] ^ 1]))
    with pytest.raises(redis.ResponseError, match="^Invalid TTL value, must be >= 0"):
        r.restore("x", -1, payload)
    assert r.restore("x", 1, payload, replace=True, absttl=True)  # long expired: not created
    assert r.exists("x") == 0
    assert r.dump("missing") is None
    # A set written as a plain member list (type 2) loads, as an intset or listpack as Redis.
    body = b"\x02" + enc_len(1) + enc_string(b"m") + struct.pack("<H", 13)
    assert r.restore("set", 0, body + struct.pack("<Q", crc64(body)))
    assert r.smembers("set") == {b"m"} and r.object("encoding", "set") == b"listpack"
    # A module value: Redis would load it with its module; Sluice has none and says so after
    # Redis's words.
    body = b"\x07" + enc_len(12345 << 10) + struct.pack("<H", 13)
    with pytest.raises(redis.ResponseError,
                       match=r"^Bad data format: RDB value type 7 \(module type '"):
        r.restore("x", 0, body + struct.pack("<Q", crc64(body)))
    # A payload newer than RDB version 13 (Redis 8.6's) is refused as Redis 8.6 refuses it.
    body = payload[:-10] + struct.pack("<H", 14)
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong"):
        r.restore("x", 0, body + struct.pack("<Q", crc64(body)))
    assert r.exists("x") == 0


def test_timestamp_annotations_are_written_and_skipped(make_server: Factory,
                                                      tmp_path: Path) -> None:
    lines = _aof(tmp_path, "aof-timestamp-enabled yes")
    s = make_server(*lines)
    s.client().set("k", "v")
    s.stop()
    incr = tmp_path / "appendonlydir" / "appendonly.aof.1.incr.aof"
    assert incr.read_bytes().startswith(b"#TS:")
    if REDIS_SERVER:  # Redis's checker skips the annotations too
        # The reference redis-server is redis-check-aof when argv[0] says so. Not Debian's
        # 7.0.15 one on PATH: the base file is an RDB of version 13 (Redis 8.6's), which 7.0
        # refuses as it refuses 8.6's own.
        out = subprocess.run(["redis-check-aof", str(incr.parent / "appendonly.aof.manifest")],
                             executable=REDIS_SERVER, capture_output=True, text=True)
        assert "All AOF files and manifest are valid" in out.stdout
    assert make_server(*lines).client().get("k") == b"v"


def test_a_redis6_single_file_aof_is_upgraded(make_server: Factory, tmp_path: Path) -> None:
    (tmp_path / "appendonly.aof").write_bytes(
        encode_command([b"SELECT", b"0"]) + encode_command([b"SET", b"old", b"1"]))
    s = make_server(*_aof(tmp_path))
    r = s.client()
    assert r.get("old") == b"1"
    r.set("new", "2")
    manifest = (tmp_path / "appendonlydir" / "appendonly.aof.manifest").read_text()
    assert manifest.startswith("file appendonly.aof seq 1 type b\n")
    assert not (tmp_path / "appendonly.aof").exists()
    s = _restart(s, make_server, *_aof(tmp_path))
    assert s.client().mget("old", "new") == [b"1", b"2"]


def test_info_persistence_fields(make_server: Factory, tmp_path: Path) -> None:
    r = make_server(*_aof(tmp_path)).client()
    info = r.info("persistence")
    for field in ("loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
                  "rdb_last_save_time", "rdb_last_bgsave_status", "aof_enabled",
                  "aof_rewrite_in_progress", "aof_last_bgrewrite_status",
                  "aof_last_write_status", "aof_current_size", "aof_base_size",
                  "aof_buffer_length", "aof_pending_bio_fsync", "aof_delayed_fsync"):
        assert field in info, field
    r.set("k", "v")
    assert r.info("persistence")["aof_current_size"] > info["aof_current_size"]


def test_bgrewriteaof_inside_exec_is_scheduled_not_split(make_server: Factory,
                                                         tmp_path: Path) -> None:
    s = make_server(*_aof(tmp_path))
    r = s.client()
    with r.pipeline(transaction=True) as p:
        p.set("a", "1").bgrewriteaof().set("b", "2").execute()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="scheduled rewrite")
    r.set("c", "3")
    s = _restart(s, make_server, *_aof(tmp_path))
    assert s.client().mget("a", "b", "c") == [b"1", b"2", b"3"]


def test_bgrewriteaof_with_appendonly_no_writes_a_base(make_server: Factory,
                                                       tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    r.set("k", "v")
    assert r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="offline rewrite")
    d = tmp_path / "appendonlydir"
    assert sorted(os.listdir(d)) == ["appendonly.aof.1.base.rdb", "appendonly.aof.manifest"]
    assert (d / "appendonly.aof.manifest").read_text() == \
        "file appendonly.aof.1.base.rdb seq 1 type b\n"
    s = _restart(s, make_server, *_aof(tmp_path))  # the base is what the AOF starts from
    assert s.client().get("k") == b"v"


def test_only_changes_are_logged(make_server: Factory, tmp_path: Path) -> None:
    """SAVE resets the change count: it is not a change, and must not be replayed from the
    AOF (it would rewrite dump.rdb from half-loaded data). A read that finds a key expired
    logs the key's DEL, not itself."""
    clock = FakeClock(1_700_000_000_000)
    s = make_server(*_aof(tmp_path), "enable-debug-command yes", clock=clock)
    r = s.client()
    r.set("a", "1")
    assert r.save()
    r.set("t", "v", px=100)
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    clock.advance(200)
    assert r.get("t") is None
    r.set("b", "2")
    assert [c[0] for c in _incr_commands(tmp_path) if c[0] != b"SELECT"] == [
        b"SET", b"SET", b"DEL", b"SET"]
