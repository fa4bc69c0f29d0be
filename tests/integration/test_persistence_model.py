"""Random command sequences survive every way of restarting: the AOF, an RDB snapshot, and
an AOF rewritten in RDB and in command form. Hypothesis drives the sequences.

The state compared is what a client can observe: every key's type, value and expiry time;
for hashes the fields and their deadlines; for streams the entries, the stream counters (length, last ID, first ID, max deleted ID,
entries added), the groups (last-delivered ID, entries-read), every pending entry (owner,
delivery time, count) and the consumers. Commands run on a virtual clock; when the data is
loaded again the clock has moved on, so anything logged with a relative time or a generated
ID (``XADD *``, XCLAIM without TIME, EXPIRE) would come back different. This catches a command
family that logs less (or more) than its effect.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.storage.keyspace import FakeClock
from tests.support import RawClient, ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(300)

T0 = 1_700_000_000_000
values = st.sampled_from(["", "x", "12", "-3", "hello world", "v" * 30])
key = st.sampled_from(["a", "b", "l", "m", "s", "t", "h"])  # any type (DEL, RENAME ...)
skey = st.sampled_from(["a", "b"])  # mostly strings
lkey = st.sampled_from(["l", "m"])  # mostly lists
xkey = st.sampled_from(["s", "t"])  # mostly streams
count = st.integers(min_value=1, max_value=4)
hkey = st.sampled_from(["h", "a"])  # mostly hashes
hfield = st.sampled_from(["f", "g", "x" * 70, "7"])  # a long one makes a hashtable

OPS = st.one_of(
    st.tuples(st.just("SET"), skey, values),
    st.tuples(st.just("SET"), skey, values, st.just("PX"), st.integers(20_000, 10**7)),
    st.tuples(st.just("APPEND"), skey, values),
    st.tuples(st.just("INCRBY"), skey, st.integers(-5, 5)),
    st.tuples(st.just("INCRBYFLOAT"), skey, st.sampled_from(["1.5", "-0.25"])),
    st.tuples(st.just("DEL"), key),
    st.tuples(st.just("EXPIRE"), key, st.integers(100, 10**5)),
    st.tuples(st.just("PERSIST"), key),
    st.tuples(st.just("RPUSH"), lkey, values, values),
    st.tuples(st.just("LPUSH"), lkey, values),
    st.tuples(st.just("LPOP"), lkey),
    st.tuples(st.just("RPOP"), lkey, count),
    st.tuples(st.just("LMOVE"), lkey, lkey, st.sampled_from(["LEFT", "RIGHT"]),
              st.sampled_from(["LEFT", "RIGHT"])),
    st.tuples(st.just("LTRIM"), lkey, st.integers(-3, 2), st.integers(-3, 3)),
    st.tuples(st.just("XADD"), xkey, st.just("*"), st.just("f"), values),
    st.tuples(st.just("XADD"), xkey, st.just("MAXLEN"), st.just("~"), st.integers(0, 5),
              st.just("*"), st.just("f"), values, st.just("g"), values),
    st.tuples(st.just("XTRIM"), xkey, st.just("MAXLEN"), st.integers(0, 6)),
    st.tuples(st.just("XDEL"), xkey, st.sampled_from(["1700000000000-0", "1700000000000-1"])),
    st.tuples(st.just("XGROUP"), st.just("CREATE"), xkey, st.sampled_from(["g1", "g2"]),
              st.sampled_from(["0", "$"]), st.just("MKSTREAM")),
    st.tuples(st.just("XREADGROUP"), st.just("GROUP"), st.sampled_from(["g1", "g2"]),
              st.sampled_from(["c1", "c2"]), st.just("COUNT"), count, st.just("STREAMS"), xkey,
              st.just(">")),
    st.tuples(st.just("XACK"), xkey, st.sampled_from(["g1", "g2"]),
              st.sampled_from(["1700000000000-0", "1700000000000-1", "1700000000000-2"])),
    st.tuples(st.just("XCLAIM"), xkey, st.sampled_from(["g1", "g2"]), st.sampled_from(["c1", "c3"]),
              st.just("0"), st.sampled_from(["1700000000000-0", "1700000000000-1"])),
    st.tuples(st.just("XAUTOCLAIM"), xkey, st.sampled_from(["g1", "g2"]), st.just("c4"),
              st.just("0"), st.just("0-0"), st.just("COUNT"), count),
    st.tuples(st.just("XGROUP"), st.just("SETID"), xkey, st.sampled_from(["g1", "g2"]),
              st.sampled_from(["0", "$"])),
    st.tuples(st.just("XGROUP"), st.just("DELCONSUMER"), xkey, st.sampled_from(["g1", "g2"]),
              st.sampled_from(["c1", "c2"])),
    st.tuples(st.just("GETEX"), skey, st.just("PX"), st.integers(20_000, 10**6)),
    st.tuples(st.just("GETDEL"), skey),
    st.tuples(st.just("SETRANGE"), skey, st.integers(0, 5), values),
    st.tuples(st.just("LSET"), lkey, st.integers(-2, 1), values),
    st.tuples(st.just("LINSERT"), lkey, st.just("BEFORE"), values, values),
    st.tuples(st.just("BLPOP"), lkey, lkey, st.just("0.01")),
    st.tuples(st.just("BLMOVE"), lkey, lkey, st.just("LEFT"), st.just("RIGHT"), st.just("0.01")),
    st.tuples(st.just("XREADGROUP"), st.just("GROUP"), st.sampled_from(["g1", "g2"]),
              st.just("c5"), st.just("BLOCK"), st.just("10"), st.just("STREAMS"), xkey,
              st.just(">")),
    st.tuples(st.just("XSETID"), xkey, st.just("1800000000000-0")),
    st.tuples(st.just("XGROUP"), st.just("CREATECONSUMER"), xkey, st.sampled_from(["g1", "g2"]),
              st.just("c9")),
    st.tuples(st.just("XGROUP"), st.just("DESTROY"), xkey, st.just("g2")),
    st.tuples(st.just("RENAME"), key, key),
    st.tuples(st.just("COPY"), key, st.sampled_from(["c", "d"])),
    st.tuples(st.just("MOVE"), key, st.just("1")),
    st.tuples(st.just("SWAPDB"), st.just("0"), st.just("1")),
    st.tuples(st.just("SELECT"), st.sampled_from(["0", "1"])),
    st.tuples(st.just("MULTI"),),
    st.tuples(st.just("EXEC"),),
    # hashes, field deadlines included (relative ones must be logged as absolute)
    st.tuples(st.just("HSET"), hkey, hfield, values, hfield, values),
    st.tuples(st.just("HDEL"), hkey, hfield),
    st.tuples(st.just("HINCRBY"), hkey, hfield, st.integers(-5, 5)),
    st.tuples(st.just("HINCRBYFLOAT"), hkey, hfield, st.sampled_from(["1.5", "-0.25"])),
    st.tuples(st.just("HEXPIRE"), hkey, st.integers(100, 10**5), st.just("FIELDS"), st.just("1"),
              hfield),
    st.tuples(st.just("HPEXPIREAT"), hkey, st.integers(T0 + 20_000, T0 + 10**7),
              st.just("FIELDS"), st.just("2"), hfield, hfield),
    st.tuples(st.just("HPERSIST"), hkey, st.just("FIELDS"), st.just("1"), hfield),
    st.tuples(st.just("HGETEX"), hkey, st.just("EX"), st.integers(100, 10**5), st.just("FIELDS"),
              st.just("1"), hfield),
    st.tuples(st.just("HGETDEL"), hkey, st.just("FIELDS"), st.just("1"), hfield),
    st.tuples(st.just("HSETEX"), hkey, st.sampled_from(["KEEPTTL", "FNX", "FXX"]), st.just("PX"),
              st.integers(20_000, 10**6), st.just("FIELDS"), st.just("1"), hfield, values),
)


def _state(port: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for db in (0, 1):
        r = redis.Redis(port=port, db=db, socket_timeout=20)
        for k in sorted(r.keys("*")):  # "c" and "d" are COPY targets of any type
            kind = r.type(k)
            entry: dict[str, Any] = {"type": kind, "expires": r.pexpiretime(k)}
            if kind == b"string":
                entry["value"] = r.get(k)
            elif kind == b"list":
                entry["value"] = r.lrange(k, 0, -1)
            elif kind == b"hash":
                entry["value"] = r.hgetall(k)
                fields = sorted(entry["value"])
                entry["deadlines"] = r.hpexpiretime(k, *fields)
            elif kind == b"stream":
                info = r.execute_command("XINFO", "STREAM", k, "FULL")
                entry["entries"] = r.xrange(k)
                for field in ("length", "last-generated-id", "max-deleted-entry-id",
                              "entries-added", "recorded-first-entry-id"):
                    entry[field] = info[field.encode()]
                entry["groups"] = [
                    {f: g[f.encode()] for f in ("name", "last-delivered-id", "entries-read",
                                                "pending")}
                    | {"consumers": sorted((c[b"name"], c[b"pending"])
                                           for c in g[b"consumers"])}
                    for g in info[b"groups"]]
            out[f"{db}:{k.decode()}"] = entry
        r.close()
    return out


def _run(port: int, ops: list[tuple[Any, ...]]) -> None:
    """Send the commands as they are (a byte-level client: no reply parsing, so QUEUED and
    error replies are just bytes)."""
    c = RawClient(port)
    in_multi = False
    for op in ops:
        if op[0] == "MULTI" and in_multi or op[0] == "EXEC" and not in_multi:
            continue
        in_multi = op[0] == "MULTI" or (in_multi and op[0] != "EXEC")
        c.call(*op)
    if in_multi:
        c.call("EXEC")
    c.close()


def _restart_equal(make_server: Callable[..., ThreadedServer], lines: list[str],
                   before: dict[str, Any]) -> ThreadedServer:
    # The clock has moved on: anything logged with a relative time or a generated ID (XADD *,
    # XCLAIM without TIME, EXPIRE) would come back different.
    s = make_server(*lines, clock=FakeClock(T0 + 5000))
    after = _state(s.port)
    assert after == before
    return s


@settings(max_examples=int(os.environ.get("SLUICE_MODEL_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=10, max_size=60))
def test_every_restart_path_keeps_the_observable_state(
        ops: list[tuple[Any, ...]], make_server: Callable[..., ThreadedServer],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    d: Path = tmp_path_factory.mktemp("model")
    aof = [f"dir {d}", "appendonly yes", "appendfsync always", "auto-aof-rewrite-percentage 0",
           "stream-node-max-entries 3"]
    s = make_server(*aof, clock=FakeClock(T0))
    _run(s.port, [tuple(str(x) for x in op) for op in ops])
    before = _state(s.port)
    s.stop()
    s = _restart_equal(make_server, aof, before)  # 1. the AOF replayed
    r = s.client(socket_timeout=20)
    assert r.save()
    s.stop()
    s = _restart_equal(make_server, [f"dir {d}", "stream-node-max-entries 3"], before)  # 2. RDB
    s.stop()
    for preamble in ("yes", "no"):  # 3. rewritten AOF, RDB and command bases
        lines = [*aof, f"aof-use-rdb-preamble {preamble}"]
        s = make_server(*lines, clock=FakeClock(T0 + 5000))
        r = s.client(socket_timeout=20)
        done = r.info("persistence")["aof_rewrites"]
        r.bgrewriteaof()
        wait_until(lambda r=r, done=done: r.info("persistence")["aof_rewrites"] > done,
                   what="rewrite")
        s.stop()
        s = _restart_equal(make_server, lines, before)
        s.stop()
