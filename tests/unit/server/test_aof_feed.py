"""What the AOF writer logs (server/persistence.py): SELECT, MULTI/EXEC, absolute expiries;
and what stream writes log where Redis counts them differently."""

from __future__ import annotations

import pytest

from sluice.server.app import Server
from sluice.server.dispatch import process_command
from sluice.server.persistence import AppendOnlyFile, _absolute
from sluice.storage.aof import Manifest, encode_command, parse_commands
from sluice.storage.keyspace import FakeClock
from sluice.storage.streamid import format_id
from tests.support import RecordingAof

NOW = 1_700_000_000_000


@pytest.mark.parametrize("argv,logged", [
    ([b"EXPIRE", b"k", b"10"], [b"PEXPIREAT", b"k", b"%d" % (NOW + 10_000)]),
    ([b"pexpire", b"k", b"10", b"NX"], [b"PEXPIREAT", b"k", b"%d" % (NOW + 10), b"NX"]),
    ([b"EXPIREAT", b"k", b"5"], [b"PEXPIREAT", b"k", b"5000"]),
    ([b"SETEX", b"k", b"2", b"v"], [b"SET", b"k", b"v", b"PXAT", b"%d" % (NOW + 2000)]),
    ([b"PSETEX", b"k", b"2", b"v"], [b"SET", b"k", b"v", b"PXAT", b"%d" % (NOW + 2)]),
    ([b"SET", b"k", b"v", b"ex", b"3", b"NX"], [b"SET", b"k", b"v", b"PXAT", b"%d" % (NOW + 3000),
                                                b"NX"]),
    ([b"SET", b"k", b"v", b"EXAT", b"3"], [b"SET", b"k", b"v", b"PXAT", b"3000"]),
    ([b"SET", b"k", b"v", b"PXAT", b"3"], [b"SET", b"k", b"v", b"PXAT", b"3"]),
    ([b"GETEX", b"k", b"PX", b"7"], [b"PEXPIREAT", b"k", b"%d" % (NOW + 7)]),
    ([b"GETEX", b"k", b"PERSIST"], [b"PERSIST", b"k"]),
    ([b"RPUSH", b"l", b"EX", b"1"], [b"RPUSH", b"l", b"EX", b"1"]),
    ([b"EXPIRE", b"k", b"notanumber"], [b"EXPIRE", b"k", b"notanumber"]),
])
def test_relative_expiries_become_absolute(argv: list[bytes], logged: list[bytes]) -> None:
    assert _absolute(argv, NOW) == logged


def _aof(tmp_path: object) -> AppendOnlyFile:
    server = Server(clock=FakeClock(NOW))
    return AppendOnlyFile(server, str(tmp_path), Manifest())


def test_select_only_when_the_db_changes(tmp_path: object) -> None:
    aof = _aof(tmp_path)
    aof.feed(0, [[b"SET", b"a", b"1"]])
    aof.feed(0, [[b"SET", b"b", b"1"]])
    aof.feed(3, [[b"SET", b"c", b"1"], [b"DEL", b"d"]])
    aof.feed(0, [[b"SET", b"e", b"1"]])
    cmds = [a for a, _ in parse_commands(bytes(aof.buf))]
    assert [c[0] for c in cmds] == [b"SELECT", b"SET", b"SET", b"SELECT", b"SET", b"DEL",
                                    b"SELECT", b"SET"]
    assert cmds[3] == [b"SELECT", b"3"]


def test_multi_is_written_lazily_and_exec_only_after_it(tmp_path: object) -> None:
    aof = _aof(tmp_path)
    aof.begin_multi(2)
    aof.end_multi()  # nothing changed inside: nothing logged
    assert aof.buf == b""
    aof.begin_multi(2)
    aof.feed(2, [[b"INCR", b"n"]])
    aof.feed(2, [[b"INCR", b"n"]])
    aof.end_multi()
    # MULTI before the SELECT, as redis-server 8.6.3 writes it (Tcl multi "MULTI with
    # FLUSHALL and AOF"): Redis propagates MULTI with no database of its own.
    assert bytes(aof.buf) == b"".join(encode_command(c) for c in (
        [b"MULTI"], [b"SELECT", b"2"], [b"INCR", b"n"], [b"INCR", b"n"], [b"EXEC"]))
    aof.begin_multi(2)  # a lone write is logged bare
    aof.feed(2, [[b"INCR", b"n"]])
    aof.end_multi()
    assert bytes(aof.buf).endswith(encode_command([b"EXEC"]) + encode_command([b"INCR", b"n"]))


def _run(server: Server, client: object, *words: str) -> None:
    process_command(server, client, [w.encode() for w in words])  # type: ignore[arg-type]


def test_what_stream_writes_log_where_redis_counts_differently() -> None:
    """A retried idempotent XADD counts a change, as in Redis, but logs nothing: replayed once
    its IID expired it would add the entry again. XDELEX DELREF of entries already deleted
    drops their references from the PELs; Redis neither counts nor propagates that, which a
    restart would undo, so it is counted and logged."""
    server = Server(clock=FakeClock(NOW))
    aof = RecordingAof()
    server.aof = aof  # type: ignore[assignment]
    client = server.new_client(None)
    _run(server, client, "XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert server.dirty == len(aof.logged) == 1
    dirty, logged = server.dirty, len(aof.logged)
    _run(server, client, "XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert (server.dirty, len(aof.logged)) == (dirty + 1, logged)
    _run(server, client, "XGROUP", "CREATE", "s", "g", "0")
    _run(server, client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    gone = format_id(server.keyspace[0].peek(b"s").last_id)
    _run(server, client, "XDEL", "s", gone.decode())  # still pending in g
    dirty, logged = server.dirty, len(aof.logged)
    _run(server, client, "XDELEX", "s", "DELREF", "IDS", "1", gone.decode())
    assert server.dirty == dirty + 1
    assert aof.logged[logged:] == [[b"XDELEX", b"s", b"DELREF", b"IDS", b"1", gone]]
    assert not server.keyspace[0].peek(b"s").groups[b"g"].pel


def test_a_transaction_logging_one_command_logs_it_bare(tmp_path: object) -> None:
    """Redis 7+ wraps propagated commands in MULTI/EXEC only when there are several
    (propagatePendingCommands), so ``MULTI; INCR n; GET n; EXEC`` logs a bare INCR, and
    master_repl_offset (what WAITAOF counts) advances by one, not three."""
    aof = _aof(tmp_path)
    offset = aof.repl.master_repl_offset
    aof.begin_multi(0)
    aof.feed(0, [[b"INCR", b"n"]])
    aof.end_multi()
    assert bytes(aof.buf) == b"".join(encode_command(c) for c in (
        [b"SELECT", b"0"], [b"INCR", b"n"]))
    assert aof.repl.master_repl_offset == offset + 1
    aof.begin_multi(0)
    aof.feed(0, [[b"INCR", b"a"], [b"INCR", b"b"]])  # one command's two effects
    aof.end_multi()
    assert bytes(aof.buf).endswith(b"".join(encode_command(c) for c in (
        [b"MULTI"], [b"INCR", b"a"], [b"INCR", b"b"], [b"EXEC"])))
    assert aof.repl.master_repl_offset == offset + 5
