"""Dead-letter policies (Sluice, opt-in: ``SLUICE.XPOLICY DEADLETTER``), RESP2 and RESP3.

A group with a policy moves an entry that was delivered ``MAXDELIVERIES`` times to the
dead-letter stream at its next delivery attempt (XREADGROUP history and CLAIM, XCLAIM,
XAUTOCLAIM) or at ``XNACK ... FATAL``, with its origin, and acknowledges it; atomically, and
logged as MULTI / XADD / XACK / EXEC. Without a policy nothing changes (the whole stream
suite, differential tests included, runs without one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.commands import errors
from tests.support import RecordingAof, ThreadedServer, wait_blocked, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]
LLONG_MAX = 2**63 - 1


def _raw(r: redis.Redis, *args: Any) -> Any:
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def _map(reply: Any) -> dict[bytes, Any]:
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


def xrg(r: redis.Redis, consumer: str, last: str) -> Any:
    return _raw(r, "XREADGROUP", "GROUP", "workers", consumer, "STREAMS", "jobs", last)


def _entries(reply: Any) -> list[Any]:
    if not reply:
        return []
    pairs = reply.items() if isinstance(reply, dict) else reply
    return [e for _, es in pairs for e in es]


def setup(r: redis.Redis, n: int = 3, max_deliveries: int = 2) -> None:
    for i in range(1, n + 1):
        r.xadd("jobs", {"job": str(i)}, id=f"{i}-0")
    r.xgroup_create("jobs", "workers", "0")
    assert _raw(r, "SLUICE.XPOLICY", "DEADLETTER", "jobs", "workers", "jobs:dead",
                "MAXDELIVERIES", max_deliveries) == b"OK"


def dead(r: redis.Redis) -> list[dict[bytes, bytes]]:
    out = []
    for _, fields in r.xrange("jobs:dead"):
        out.append(fields)
    return out


def test_policy_commands(rr: redis.Redis) -> None:
    setup(rr)
    got = _map(_raw(rr, "SLUICE.XPOLICY", "GET", "jobs"))
    assert got[b"retention"] is None
    assert [_map(m) for m in got[b"dead-letter"]] == [
        {b"group": b"workers", b"stream": b"jobs:dead", b"max-deliveries": 2}]
    assert _raw(rr, "SLUICE.XPOLICY", "CLEAR", "jobs", "workers") == 1
    assert _raw(rr, "SLUICE.XPOLICY", "CLEAR", "jobs", "workers") == 0
    assert _map(_raw(rr, "SLUICE.XPOLICY", "GET", "jobs"))[b"dead-letter"] == []
    help_text = b"\n".join(_raw(rr, "SLUICE.XPOLICY", "HELP"))
    assert b"DEADLETTER" in help_text and b"RETENTION" in help_text


def test_policy_errors(rr: redis.Redis) -> None:
    rr.xadd("s", {"f": "v"})
    rr.xgroup_create("s", "g", "0")
    rr.set("str", "x")

    def error(*args: Any) -> str:
        with pytest.raises(redis.ResponseError) as e:
            _raw(rr, "SLUICE.XPOLICY", *args)
        return str(e.value)

    assert error("DEADLETTER", "nokey", "g", "d", "MAXDELIVERIES", 1).startswith("NOGROUP")
    assert error("DEADLETTER", "s", "nogroup", "d", "MAXDELIVERIES", 1).startswith("NOGROUP")
    assert error("DEADLETTER", "s", "g", "d", "MAXDELIVERIES", 0) == \
        errors.XPOLICY_MAX_DELIVERIES.split(" ", 1)[1]
    assert error("DEADLETTER", "s", "g", "s", "MAXDELIVERIES", 1) == \
        errors.XPOLICY_SAME_KEY.split(" ", 1)[1]
    assert "WRONGTYPE" in error("DEADLETTER", "s", "g", "str", "MAXDELIVERIES", 1)
    assert "WRONGTYPE" in error("DEADLETTER", "str", "g", "d", "MAXDELIVERIES", 1)
    assert "syntax" in error("DEADLETTER", "s", "g", "d", "MAXTRIES", 1)
    assert "no such stream" in error("RETENTION", "nokey", "MAXAGE", 10)
    assert "MAXAGE" in error("RETENTION", "s", "MAXAGE", 0)
    assert "syntax" in error("RETENTION", "s", "MAXAGE", 10, "SOMETIMES")
    assert "unknown subcommand" in error("BOGUS").lower() or "syntax" in error("BOGUS")


def test_history_reads_count_as_deliveries(rr: redis.Redis) -> None:
    setup(rr, n=2, max_deliveries=2)
    assert len(_entries(xrg(rr, "w1", ">"))) == 2  # delivery 1
    assert len(_entries(xrg(rr, "w1", "0"))) == 2  # delivery 2
    # the third attempt moves both instead of delivering them
    assert _entries(xrg(rr, "w1", "0")) == []
    assert rr.xpending("jobs", "workers")["pending"] == 0
    assert dead(rr) == [
        {b"origin-stream": b"jobs", b"origin-group": b"workers", b"origin-id": b"1-0",
         b"delivery-count": b"2", b"last-consumer": b"w1", b"reason": b"max-deliveries",
         b"job": b"1"},
        {b"origin-stream": b"jobs", b"origin-group": b"workers", b"origin-id": b"2-0",
         b"delivery-count": b"2", b"last-consumer": b"w1", b"reason": b"max-deliveries",
         b"job": b"2"}]


def test_claims_count_as_deliveries(rr: redis.Redis) -> None:
    setup(rr, n=3, max_deliveries=1)
    rr.xreadgroup("workers", "w1", {"jobs": ">"})
    assert rr.xclaim("jobs", "workers", "w2", 0, ["1-0"]) == []  # XCLAIM: moved
    # JUSTID does not count as a delivery (Redis does not increment for it): claimed
    assert rr.xclaim("jobs", "workers", "w2", 0, ["2-0"], justid=True) == [b"2-0"]
    got = _raw(rr, "XAUTOCLAIM", "jobs", "workers", "w3", "0", "0-0")  # XAUTOCLAIM: moved
    assert got[1] == [] and got[2] == []
    assert [f[b"origin-id"] for f in dead(rr)] == [b"1-0", b"2-0", b"3-0"]
    assert rr.xpending("jobs", "workers")["pending"] == 0


def test_xreadgroup_claim_moves_instead_of_claiming(rr: redis.Redis) -> None:
    setup(rr, n=2, max_deliveries=1)
    rr.xreadgroup("workers", "w1", {"jobs": ">"}, count=1)  # 1-0 delivered once
    rr.xadd("jobs", {"job": "3"}, id="3-0")
    got = _raw(rr, "XREADGROUP", "GROUP", "workers", "w2", "CLAIM", "0", "STREAMS", "jobs", ">")
    assert [e[0] for e in _entries(got)] == [b"2-0", b"3-0"]  # new ones still come
    assert [f[b"origin-id"] for f in dead(rr)] == [b"1-0"]


def test_xnack_fatal_moves_at_once(rr: redis.Redis) -> None:
    setup(rr, n=3, max_deliveries=10)
    rr.xreadgroup("workers", "w1", {"jobs": ">"})
    assert _raw(rr, "XNACK", "jobs", "workers", "FATAL", "IDS", "2", "3-0", "1-0") == 2
    assert [(f[b"origin-id"], f[b"reason"], f[b"delivery-count"], f[b"last-consumer"])
            for f in dead(rr)] == [(b"3-0", b"fatal", str(LLONG_MAX).encode(), b""),
                                   (b"1-0", b"fatal", str(LLONG_MAX).encode(), b"")]
    assert [p["message_id"] for p in rr.xpending_range("jobs", "workers", "-", "+", 10)] == \
        [b"2-0"]
    # FAIL and SILENT do not move anything
    assert _raw(rr, "XNACK", "jobs", "workers", "FAIL", "IDS", "1", "2-0") == 1
    assert len(dead(rr)) == 2


def test_without_a_policy_nothing_moves(rr: redis.Redis) -> None:
    setup(rr, n=1, max_deliveries=1)
    _raw(rr, "SLUICE.XPOLICY", "CLEAR", "jobs", "workers")
    rr.xreadgroup("workers", "w1", {"jobs": ">"})
    for _ in range(5):
        assert len(_entries(xrg(rr, "w1", "0"))) == 1
    _raw(rr, "XNACK", "jobs", "workers", "FATAL", "IDS", "1", "1-0")
    assert not rr.exists("jobs:dead")
    assert rr.xpending("jobs", "workers")["pending"] == 1


def test_a_dead_letter_key_of_another_type_leaves_entries_pending(
        make_server: Factory) -> None:
    srv = make_server()
    r = srv.client()
    setup(r, n=1, max_deliveries=1)
    r.xreadgroup("workers", "w1", {"jobs": ">"})
    r.set("jobs:dead", "not a stream")
    assert _entries(xrg(r, "w1", "0")) == []  # not delivered
    assert r.xpending("jobs", "workers")["pending"] == 1  # not lost either
    assert srv.call(lambda: srv.server.stats["sluice_dead_letter_errors"]) == 1


def test_a_reader_blocked_on_the_dead_letter_stream_wakes(rr: redis.Redis) -> None:
    setup(rr, n=1, max_deliveries=1)
    rr.xadd("jobs:dead", {"init": "1"}, id="1-0")
    port = rr.connection_pool.connection_kwargs["port"]
    got: dict[str, Any] = {}

    def reader() -> None:
        c = redis.Redis(port=port)
        got["r"] = c.xread({"jobs:dead": "$"}, block=0)
        c.close()

    t = threading.Thread(target=reader)
    t.start()
    wait_blocked(rr, 1)
    rr.xreadgroup("workers", "w1", {"jobs": ">"})
    rr.xclaim("jobs", "workers", "w2", 0, ["1-0"])
    t.join(10)
    assert got["r"][0][1][0][1][b"origin-id"] == b"1-0"


def test_the_log_is_one_transaction_of_redis_commands(make_server: Factory) -> None:
    srv = make_server()
    rec = RecordingAof()
    srv.call(lambda: setattr(srv.server, "aof", rec))
    r = srv.client()
    setup(r, n=2, max_deliveries=1)
    r.xreadgroup("workers", "w1", {"jobs": ">"})
    start = len(rec.logged)
    r.xclaim("jobs", "workers", "w2", 0, ["1-0", "2-0"])
    logged = rec.logged[start:]
    names = [a[0] for a in logged]
    assert names[0] == b"MULTI" and names[-1] == b"EXEC"
    # the new consumer (named by no XCLAIM record, since nothing was claimed), then the moves
    assert names[1:-1] == [b"XGROUP", b"XADD", b"XACK", b"XADD", b"XACK"]
    xadd = next(a for a in logged if a[0] == b"XADD")
    assert xadd[1] == b"jobs:dead" and xadd[2] != b"*"  # the ID that was made, not "*"

    # Replayed as the AOF loader would, on a server with no policy: the same state.
    from sluice.server.client import Client
    from sluice.server.dispatch import call, lookup

    replay = make_server()

    def run() -> None:
        server = replay.server
        client = Client(server, 999, None)
        client.kind = "aof"
        for argv in rec.logged:
            call(server, client, lookup(server.table, argv), argv)

    replay.call(run)
    r2 = replay.client()
    assert r2.xrange("jobs:dead") == r.xrange("jobs:dead")
    assert r2.xpending("jobs", "workers")["pending"] == 0


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_policies_and_dead_letters_survive_restarts(make_server: Factory, tmp_path: Path,
                                                    preamble: str) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always",
             f"aof-use-rdb-preamble {preamble}", "enable-debug-command yes"]
    s = make_server(*lines)
    r = s.client()
    setup(r, n=3, max_deliveries=1)
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "jobs", "MAXAGE", "86400000000", "ACKED")
    r.xreadgroup("workers", "w1", {"jobs": ">"})
    r.xclaim("jobs", "workers", "w2", 0, ["1-0"])

    def state(r: redis.Redis) -> Any:
        return (_map(_raw(r, "SLUICE.XPOLICY", "GET", "jobs")), r.xrange("jobs:dead"),
                [p["message_id"] for p in r.xpending_range("jobs", "workers", "-", "+", 9)])

    before = state(r)
    assert len(before[1]) == 1
    s.stop()
    s = make_server(*lines)  # the AOF as written
    r = s.client()
    assert state(r) == before
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"  # an RDB with the AUX field
    assert state(r) == before
    r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    s.stop()
    s = make_server(*lines)
    r = s.client()
    assert state(r) == before
    # and the policy still acts
    r.xclaim("jobs", "workers", "w3", 0, ["2-0"])
    assert [f[b"origin-id"] for f in dead(r)] == [b"1-0", b"2-0"]


def test_a_torn_dead_letter_transaction_is_dropped_whole(make_server: Factory,
                                                         tmp_path: Path) -> None:
    """A crash that cuts the AOF between the XADD to the dead-letter stream and the XACK
    must not leave the entry both dead-lettered and pending: the MULTI is dropped whole."""
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    s = make_server(*lines)
    r = s.client()
    setup(r, n=1, max_deliveries=1)
    r.xreadgroup("workers", "w1", {"jobs": ">"})
    r.xclaim("jobs", "workers", "w2", 0, ["1-0"])
    assert len(dead(r)) == 1
    s.stop()
    aof_dir = tmp_path / "appendonlydir"
    incr = next(p for p in aof_dir.iterdir() if p.name.endswith(".incr.aof"))
    data = incr.read_bytes()
    cut = data.rindex(b"*1\r\n$4\r\nEXEC\r\n")
    assert data.rindex(b"XACK") < cut and data.rindex(b"jobs:dead") < cut
    incr.write_bytes(data[:cut])  # the process died before EXEC reached the disk
    s = make_server(*lines)
    r = s.client()
    assert not r.exists("jobs:dead")
    assert [p["message_id"] for p in r.xpending_range("jobs", "workers", "-", "+", 9)] == \
        [b"1-0"]
