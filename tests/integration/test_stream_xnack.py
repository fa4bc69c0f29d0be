"""XNACK (Redis 8.8) over real sockets, RESP2 and RESP3, and through the AOF and RDB.

No reference server here has XNACK (the reference is 8.6.3), so the expected replies are the
redis.io XNACK page's examples and sentences, quoted next to each check. Error texts other
than the mode's are not documented: the tests pin ours (``errors.py`` says which are known).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.commands import errors
from sluice.storage.aof import Manifest, parse_commands
from tests.support import ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]
LLONG_MAX = 2**63 - 1


def _raw(r: redis.Redis, *args: Any) -> Any:
    """A command with no redis-py reply parsing (XPENDING, XINFO ... as sent)."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def error_of(r: redis.Redis, *args: Any) -> str:
    with pytest.raises(redis.ResponseError) as e:
        _raw(r, *args)
    return str(e.value)


def doc_setup(r: redis.Redis) -> tuple[bytes, bytes]:
    """The page's example: two entries, a group, both read by consumer1."""
    a = r.xadd("mystream", {"field": "value1"}, id="1526569498055-0")
    b = r.xadd("mystream", {"field": "value2"}, id="1526569498056-0")
    r.xgroup_create("mystream", "mygroup", "0")
    got = r.xreadgroup("mygroup", "consumer1", {"mystream": ">"})
    assert got  # both entries
    return a, b


def test_fail_mode_example_from_the_page(rr: redis.Redis) -> None:
    a, b = doc_setup(rr)
    # > XNACK mystream mygroup FAIL IDS 2 1526569498055-0 1526569498056-0 -> (integer) 2
    assert _raw(rr, "XNACK", "mystream", "mygroup", "FAIL", "IDS", "2", a, b) == 2
    # "After NACKing, the messages appear with empty consumer in XPENDING":
    # 1) "1526569498055-0" 2) "" 3) (integer) -1 4) (integer) 1 (for both)
    assert _raw(rr, "XPENDING", "mystream", "mygroup", "-", "+", "10") == [
        [a, b"", -1, 1], [b, b"", -1, 1]]
    # the summary counts them, under no consumer
    assert _raw(rr, "XPENDING", "mystream", "mygroup")[:3] == [2, a, b]


def test_silent_fatal_and_retrycount_examples(rr: redis.Redis) -> None:
    a, b = doc_setup(rr)
    rr.xclaim("mystream", "mygroup", "consumer1", 0, [a])  # delivery count 2
    # SILENT: "the delivery counter is decremented, effectively undoing the delivery"
    assert _raw(rr, "XNACK", "mystream", "mygroup", "SILENT", "IDS", "1", a) == 1
    assert _raw(rr, "XPENDING", "mystream", "mygroup", "-", "+", "10")[0][3] == 1
    # FATAL: "setting the delivery counter to maximum value"
    assert _raw(rr, "XNACK", "mystream", "mygroup", "FATAL", "IDS", "1", a) == 1
    assert _raw(rr, "XPENDING", "mystream", "mygroup", "-", "+", "10")[0][3] == LLONG_MAX
    # RETRYCOUNT: "Explicitly sets the delivery counter to 5, regardless of the mode"
    assert _raw(rr, "XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", a,
                "RETRYCOUNT", "5") == 1
    assert _raw(rr, "XPENDING", "mystream", "mygroup", "-", "+", "10")[0][3] == 5


def test_not_pending_ids_are_not_counted_and_force_creates(rr: redis.Redis) -> None:
    rr.xadd("s", {"f": "v"}, id="1-0")
    rr.xadd("s", {"f": "v"}, id="2-0")
    rr.xgroup_create("s", "g", "$")
    # "Messages that are not pending will be ignored and not counted in the return value."
    assert _raw(rr, "XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "9-0") == 0
    # FORCE: "Creates new unowned PEL entries for IDs that are not already in the group PEL.
    # The entry must exist in the stream ... the delivery counter is set to 0"
    assert _raw(rr, "XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "9-0", "FORCE") == 1
    assert _raw(rr, "XPENDING", "s", "g", "-", "+", "10") == [[b"1-0", b"", -1, 0]]
    assert _raw(rr, "XNACK", "s", "g", "FATAL", "FORCE", "IDS", "1", "2-0") == 1
    assert _raw(rr, "XPENDING", "s", "g", "-", "+", "10")[1] == [b"2-0", b"", -1, LLONG_MAX]


def test_released_entries_go_first_to_xreadgroup_claim(rr: redis.Redis) -> None:
    """XREADGROUP page: 'Among pending entries, messages released via XNACK are prioritized
    and reported first'; and XNACK page: 'immediately claimable with any min-idle-time'."""
    for i in range(1, 5):
        rr.xadd("s", {"n": str(i)}, id=f"{i}-0")
    rr.xgroup_create("s", "g", "0")
    rr.xreadgroup("g", "a", {"s": ">"})
    _raw(rr, "XNACK", "s", "g", "FAIL", "IDS", "2", "3-0", "1-0")
    got = _raw(rr, "XREADGROUP", "GROUP", "g", "b", "CLAIM", "3600000", "STREAMS", "s", ">")
    entries = got[0][1] if isinstance(got, list) else got[b"s"]
    assert [e[0] for e in entries] == [b"3-0", b"1-0"]  # release order; 2-0, 4-0 not idle
    assert [e[3] for e in entries] == [1, 1]  # earlier deliveries (FAIL kept the count)
    # without CLAIM, '>' serves only new entries (the page lists CLAIM, XCLAIM, XAUTOCLAIM)
    _raw(rr, "XNACK", "s", "g", "FAIL", "IDS", "1", "4-0")
    assert not rr.xreadgroup("g", "c", {"s": ">"})
    assert _raw(rr, "XPENDING", "s", "g", "-", "+", "10")[3][1] == b""
    claimed = _raw(rr, "XAUTOCLAIM", "s", "g", "c", "3600000", "0-0", "JUSTID")
    assert claimed[1] == [b"4-0"]


def _as_map(reply: Any) -> dict[bytes, Any]:
    """A RESP3 map, or RESP2's flat key-value array, as a dict."""
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


def _full_group(r: redis.Redis) -> dict[bytes, Any]:
    return _as_map(_as_map(_raw(r, "XINFO", "STREAM", "mystream", "FULL"))[b"groups"][0])


def test_xinfo_stream_full_shows_the_nack_zone_only_once_used(rr: redis.Redis) -> None:
    a, b = doc_setup(rr)
    assert b"nacked-count" not in _full_group(rr)  # as 8.6 shows a group without NACKs
    _raw(rr, "XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", b)
    group = _full_group(rr)
    assert group[b"nacked-count"] == 1  # "nacked-count ... Added in Redis 8.8"
    # "For messages that have been released back to the group using XNACK, this field
    # will be an empty string."
    assert [p[1] for p in group[b"pending"]] == [b"consumer1", b""]
    assert _as_map(group[b"consumers"][0])[b"pel-count"] == 1


def test_errors(rr: redis.Redis) -> None:
    rr.xadd("s", {"f": "v"}, id="1-0")
    rr.xgroup_create("s", "g", "0")
    assert error_of(rr, "XNACK", "s", "g", "MAYBE", "IDS", "1", "1-0") == \
        errors.XNACK_MODE.split(" ", 1)[1]
    assert "IDS" in error_of(rr, "XNACK", "s", "g", "FAIL", "FORCE", "RETRYCOUNT", "1")
    assert "numids" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "3", "1-0", "2-0")
    assert "positive" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "0", "1-0", "2-0")
    assert "RETRYCOUNT" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0",
                                    "RETRYCOUNT", "-1")
    assert "syntax" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "BOGUS")
    assert "Invalid stream ID" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "1", "x")
    assert error_of(rr, "XNACK", "s", "nogroup", "FAIL", "IDS", "1", "1-0") == \
        "NOGROUP No such key 's' or consumer group 'nogroup'"  # as XCLAIM's (not documented)
    rr.set("str", "x")
    assert "WRONGTYPE" in error_of(rr, "XNACK", "str", "g", "FAIL", "IDS", "1", "1-0")
    assert "wrong number of arguments" in error_of(rr, "XNACK", "s", "g", "FAIL", "IDS", "1")


def test_command_info_and_docs(r: redis.Redis) -> None:
    info = _raw(r, "COMMAND", "INFO", "XNACK")[0]
    assert info[:3] == [b"xnack", -7, [b"write", b"fast"]]
    assert set(info[6]) == {b"@write", b"@stream", b"@fast"}
    docs = _raw(r, "COMMAND", "DOCS", "XNACK")
    text = repr(docs)
    assert "8.8.0" in text and "RETRYCOUNT" in text and "FORCE" in text and "SILENT" in text


def _incr_commands(dir_: Path) -> list[list[bytes]]:
    m = Manifest.parse((dir_ / "appendonlydir" / "appendonly.aof.manifest").read_text())
    out: list[list[bytes]] = []
    for info in m.incrs:
        out += [a for a, _ in parse_commands((dir_ / "appendonlydir" / info.name).read_bytes())]
    return out


def _state(r: redis.Redis) -> Any:
    rows = _raw(r, "XPENDING", "s", "g", "-", "+", "100")
    return ([(sid, owner, idle if idle < 0 else "idle", n) for sid, owner, idle, n in rows],
            r.xinfo_stream("s", full=True)["groups"][0].get("nacked-count"))


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_nacked_entries_survive_aof_rdb_and_rewrite(make_server: Factory, tmp_path: Path,
                                                    preamble: str) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always",
             f"aof-use-rdb-preamble {preamble}", "enable-debug-command yes"]
    s = make_server(*lines)
    r = s.client()
    for i in range(1, 7):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "a", {"s": ">"})
    _raw(r, "XNACK", "s", "g", "FATAL", "IDS", "2", "5-0", "2-0")
    _raw(r, "XNACK", "s", "g", "SILENT", "IDS", "1", "3-0")
    before = _state(r)
    assert before[1] == 3
    assert [b"XNACK", b"s", b"g", b"FATAL", b"IDS", b"2", b"5-0", b"2-0"] in \
        _incr_commands(tmp_path)  # logged as given: XNACK reads no clock
    s.stop()
    s = make_server(*lines)  # AOF replay
    r = s.client()
    assert _state(r) == before
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"  # through an RDB
    assert _state(r) == before
    r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    s.stop()
    s = make_server(*lines)  # from the rewritten base
    r = s.client()
    assert _state(r) == before
    # the NACK zone kept its release order: CLAIM serves 5-0, 2-0, 3-0
    got = _raw(r, "XREADGROUP", "GROUP", "g", "b", "CLAIM", "0", "COUNT", "3", "STREAMS",
               "s", ">")
    entries = got[0][1] if isinstance(got, list) else got[b"s"]
    assert [e[0] for e in entries] == [b"5-0", b"2-0", b"3-0"]
