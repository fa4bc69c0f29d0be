"""Keyspace notifications against redis-server 8.6.3: the same commands, the same messages in
the same order (hypothesis sequences over every type Sluice has).

On each server a RESP2 connection is subscribed to ``__key*__:*`` with every class on
(``KEA`` plus ``m n o c``, the classes "A" leaves out), and a writer runs each generated command
on both. After every command the subscriber is pinged: the messages that arrived before the
PONG are the ones that command fired, compared byte for byte with redis-server's (pmessage,
pattern, channel, payload), as are the command's replies (but SPOP's, whose members are
random). Keys come from a small pool in two
databases, so types clash, keys are overwritten, renamed, copied and moved, and lists,
hashes and streams empty out.

Only deterministic commands: TTLs are far in the future or in the past (the key goes when
next touched: the active expiry cycle is off on both servers); stream IDs are explicit. The events of expiry in time are checked by the scenario
tests at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from tests.support import (
    ProcessServer,
    RawClient,
    ThreadedServer,
    require_redis_server,
    wait_until,
)

pytestmark = pytest.mark.differential

CLASSES = "KEAmnoc"
KEYS = st.sampled_from(["a", "b", "c"])
FIELDS = st.sampled_from(["f", "g", "h"])
VALUES = st.sampled_from(["", "v", "1", "-7", "x" * 20, "2.5"])
PAST_MS = st.sampled_from(["1", "1000"])
FAR_S = st.sampled_from(["4102444800", "4102444900"])  # year 2100
COUNTS = st.sampled_from(["1", "2", "5"])


class Events:
    """A writer and a subscriber on one server."""

    def __init__(self, port: int) -> None:
        self.writer = RawClient(port)
        self.sub = RawClient(port)
        self.writer.call("CONFIG", "SET", "notify-keyspace-events", CLASSES)
        # Keys set with a deadline in the past (SET ... PXAT 1) stay until touched: no cycle
        # may take them at a moment of its own choosing.
        self.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        self.sub.call("PSUBSCRIBE", "__key*__:*")

    def run(self, *command: str | bytes) -> tuple[bytes, list[bytes]]:
        """The command's reply and the messages it fired."""
        reply = self.writer.call(*command)
        self.sub.send("PING")
        messages: list[bytes] = []
        while True:
            frame = self.sub.read_reply()
            if frame.startswith(b"*2\r\n$4\r\npong"):
                return reply, messages
            messages.append(frame)

    def close(self) -> None:
        self.writer.close()
        self.sub.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Events, Events]]:
    require_redis_server()
    ours = ThreadedServer(["enable-debug-command yes"]).start()
    theirs = ProcessServer("redis", ["--enable-debug-command", "yes"]).start()
    a, b = Events(ours.port), Events(theirs.port)
    yield a, b
    a.close()
    b.close()
    ours.stop()
    theirs.stop()


class Sequence(RuleBasedStateMachine):
    pair: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.next_id = 1

    @initialize()
    def clean(self) -> None:
        for side in self.pair:
            side.writer.call("SELECT", "0")
            side.writer.call("FLUSHALL")
            side.run("PING")  # nothing left over

    def same(self, *command: str) -> None:
        ours, theirs = (side.run(*command) for side in self.pair)
        assert ours[0] == theirs[0], ("reply", command, ours[0], theirs[0])
        assert ours[1] == theirs[1], ("events", command, ours[1], theirs[1])

    def stream_id(self) -> str:
        self.next_id += 1
        return f"{self.next_id}-1"

    # -- strings ------------------------------------------------------------------------------

    @rule(k=KEYS, v=VALUES, opts=st.sampled_from([[], ["NX"], ["XX"], ["GET"], ["KEEPTTL"],
                                                  ["EX", "100"], ["PX", "100000", "GET"],
                                                  ["PXAT", "1"], ["IFEQ", "v"]]))
    def set(self, k: str, v: str, opts: list[str]) -> None:
        self.same("SET", k, v, *opts)

    @rule(k=KEYS, v=VALUES, cmd=st.sampled_from(["SETNX", "GETSET", "APPEND"]))
    def set_like(self, k: str, v: str, cmd: str) -> None:
        self.same(cmd, k, v)

    @rule(k=KEYS, v=VALUES, cmd=st.sampled_from(["SETEX", "PSETEX"]))
    def setex(self, k: str, v: str, cmd: str) -> None:
        self.same(cmd, k, "100000", v)

    @rule(k=KEYS, k2=KEYS, v=VALUES, cmd=st.sampled_from(["MSET", "MSETNX"]))
    def mset(self, k: str, k2: str, v: str, cmd: str) -> None:
        self.same(cmd, k, v, k2, v)

    @rule(k=KEYS, k2=KEYS, v=VALUES, opts=st.sampled_from([[], ["NX"], ["XX"], ["EX", "50"],
                                                            ["KEEPTTL"]]))
    def msetex(self, k: str, k2: str, v: str, opts: list[str]) -> None:
        self.same("MSETEX", "2", k, v, k2, v, *opts)

    @rule(k=KEYS, cmd=st.sampled_from(["INCR", "DECR", "GETDEL", "DELEX"]))
    def one_key(self, k: str, cmd: str) -> None:
        self.same(cmd, k)

    @rule(k=KEYS, n=st.sampled_from(["3", "-2"]), cmd=st.sampled_from(["INCRBY", "DECRBY",
                                                                        "INCRBYFLOAT"]))
    def incr_by(self, k: str, n: str, cmd: str) -> None:
        self.same(cmd, k, n)

    @rule(k=KEYS, off=st.sampled_from(["0", "3"]), v=VALUES)
    def setrange(self, k: str, off: str, v: str) -> None:
        self.same("SETRANGE", k, off, v)

    @rule(k=KEYS, opts=st.sampled_from([["EX", "100"], ["PERSIST"], ["PXAT", "1"], []]))
    def getex(self, k: str, opts: list[str]) -> None:
        self.same("GETEX", k, *opts)

    # -- reads (keymiss) ------------------------------------------------------------------------

    @rule(k=KEYS, cmd=st.sampled_from(["GET", "STRLEN", "LLEN", "HLEN", "XLEN", "EXISTS",
                                       "TYPE", "TTL"]))
    def read(self, k: str, cmd: str) -> None:
        self.same(cmd, k)

    @rule(k=KEYS, k2=KEYS)
    def mget(self, k: str, k2: str) -> None:
        self.same("MGET", k, k2)

    # -- the keyspace -------------------------------------------------------------------------

    @rule(k=KEYS, k2=KEYS, cmd=st.sampled_from(["DEL", "UNLINK"]))
    def delete(self, k: str, k2: str, cmd: str) -> None:
        self.same(cmd, k, k2)

    @rule(k=KEYS, when=st.one_of(FAR_S, st.just("-1")), flag=st.sampled_from([[], ["NX"],
                                                                             ["GT"]]))
    def expire(self, k: str, when: str, flag: list[str]) -> None:
        self.same("EXPIREAT", k, when, *flag)

    @rule(k=KEYS, when=PAST_MS)
    def pexpireat_past(self, k: str, when: str) -> None:
        self.same("PEXPIREAT", k, when)

    @rule(k=KEYS)
    def persist(self, k: str) -> None:
        self.same("PERSIST", k)

    @rule(k=KEYS, k2=KEYS, cmd=st.sampled_from(["RENAME", "RENAMENX"]))
    def rename(self, k: str, k2: str, cmd: str) -> None:
        self.same(cmd, k, k2)

    @rule(k=KEYS, k2=KEYS, opts=st.sampled_from([[], ["REPLACE"], ["DB", "1"],
                                                 ["DB", "1", "REPLACE"]]))
    def copy(self, k: str, k2: str, opts: list[str]) -> None:
        self.same("COPY", k, k2, *opts)

    @rule(k=KEYS, k2=KEYS, ttl_opts=st.sampled_from([
        ("0", []), ("0", ["REPLACE"]), ("100000", ["REPLACE"]),
        ("1", ["REPLACE", "ABSTTL"]), ("4102444800000", ["REPLACE", "ABSTTL"])]))
    def dump_restore(self, k: str, k2: str, ttl_opts: tuple[str, list[str]]) -> None:
        """RESTORE of each server's own DUMP (payloads may differ in encoding, not events);
        TTLs far away, or absolute and past (a relative 1 ms would race the clock)."""
        ttl, opts = ttl_opts
        dumps = [side.writer.call("DUMP", k) for side in self.pair]
        assert (dumps[0] == b"$-1\r\n") == (dumps[1] == b"$-1\r\n"), ("DUMP", k)
        if dumps[0] == b"$-1\r\n":
            return
        results = []
        for side, raw in zip(self.pair, dumps, strict=True):
            payload = raw[raw.index(b"\r\n") + 2:-2]
            results.append(side.run("RESTORE", k2, ttl, payload, *opts))
        assert results[0] == results[1], ("RESTORE", k2, ttl, opts, results)

    @rule(k=KEYS, db=st.sampled_from(["1", "0"]))
    def move(self, k: str, db: str) -> None:
        self.same("MOVE", k, db)

    @rule(db=st.sampled_from(["0", "1"]))
    def select(self, db: str) -> None:
        self.same("SELECT", db)

    # -- lists --------------------------------------------------------------------------------

    @rule(k=KEYS, v=VALUES, cmd=st.sampled_from(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]))
    def push(self, k: str, v: str, cmd: str) -> None:
        self.same(cmd, k, v, "w")

    @rule(k=KEYS, cmd=st.sampled_from(["LPOP", "RPOP"]), count=st.sampled_from([[], ["2"],
                                                                               ["9"]]))
    def pop(self, k: str, cmd: str, count: list[str]) -> None:
        self.same(cmd, k, *count)

    @rule(k=KEYS, k2=KEYS, ends=st.sampled_from([["LEFT", "RIGHT"], ["RIGHT", "LEFT"]]))
    def lmove(self, k: str, k2: str, ends: list[str]) -> None:
        self.same("LMOVE", k, k2, *ends)

    @rule(k=KEYS, k2=KEYS)
    def lmpop(self, k: str, k2: str) -> None:
        self.same("LMPOP", "2", k, k2, "LEFT", "COUNT", "2")

    @rule(k=KEYS, v=VALUES)
    def list_edits(self, k: str, v: str) -> None:
        self.same("LINSERT", k, "BEFORE", "w", v)
        self.same("LSET", k, "0", v)
        self.same("LREM", k, "1", "w")

    @rule(k=KEYS, start=st.sampled_from(["0", "1", "5"]))
    def ltrim(self, k: str, start: str) -> None:
        self.same("LTRIM", k, start, "-1")

    # -- hashes -------------------------------------------------------------------------------

    @rule(k=KEYS, f=FIELDS, v=VALUES, cmd=st.sampled_from(["HSET", "HSETNX"]))
    def hset(self, k: str, f: str, v: str, cmd: str) -> None:
        self.same(cmd, k, f, v)

    @rule(k=KEYS, f=FIELDS, f2=FIELDS)
    def hdel(self, k: str, f: str, f2: str) -> None:
        self.same("HDEL", k, f, f2)

    @rule(k=KEYS, f=FIELDS, cmd=st.sampled_from(["HINCRBY", "HINCRBYFLOAT"]))
    def hincr(self, k: str, f: str, cmd: str) -> None:
        self.same(cmd, k, f, "2")

    @rule(k=KEYS, f=FIELDS, when=st.sampled_from(["1", "4102444800000"]),
          cond=st.sampled_from([[], ["NX"], ["XX"]]))
    def hexpire(self, k: str, f: str, when: str, cond: list[str]) -> None:
        self.same("HPEXPIREAT", k, when, *cond, "FIELDS", "1", f)

    @rule(k=KEYS, f=FIELDS)
    def hpersist(self, k: str, f: str) -> None:
        self.same("HPERSIST", k, "FIELDS", "1", f)

    @rule(k=KEYS, f=FIELDS, f2=FIELDS)
    def hgetdel(self, k: str, f: str, f2: str) -> None:
        self.same("HGETDEL", k, "FIELDS", "2", f, f2)

    @rule(k=KEYS, f=FIELDS, opts=st.sampled_from([["PERSIST"], ["EX", "100"], ["PXAT", "1"],
                                                  []]))
    def hgetex(self, k: str, f: str, opts: list[str]) -> None:
        self.same("HGETEX", k, *opts, "FIELDS", "1", f)

    @rule(k=KEYS, f=FIELDS, v=VALUES, opts=st.sampled_from([[], ["FNX"], ["FXX"],
                                                            ["EX", "100"], ["PXAT", "1"],
                                                            ["KEEPTTL"]]))
    def hsetex(self, k: str, f: str, v: str, opts: list[str]) -> None:
        self.same("HSETEX", k, *opts, "FIELDS", "1", f, v)

    @rule(k=KEYS, f=FIELDS, f2=FIELDS)
    def hmget(self, k: str, f: str, f2: str) -> None:
        self.same("HMGET", k, f, f2)

    # -- streams ------------------------------------------------------------------------------

    @rule(k=KEYS, trim=st.sampled_from([[], ["MAXLEN", "2"], ["NOMKSTREAM"],
                                        ["NOMKSTREAM", "MAXLEN", "1"]]))
    def xadd(self, k: str, trim: list[str]) -> None:
        self.same("XADD", k, *trim, self.stream_id(), "f", "v")

    @rule(k=KEYS, n=st.sampled_from(["0", "1"]))
    def xtrim(self, k: str, n: str) -> None:
        self.same("XTRIM", k, "MAXLEN", n)

    @rule(k=KEYS)
    def xdel(self, k: str) -> None:
        self.same("XDEL", k, f"{self.next_id}-1", "1-1")

    @rule(k=KEYS)
    def xsetid(self, k: str) -> None:
        self.next_id += 10
        self.same("XSETID", k, f"{self.next_id}-0")

    @rule(k=KEYS, mk=st.booleans())
    def xgroup_create(self, k: str, mk: bool) -> None:
        self.same("XGROUP", "CREATE", k, "g", "0", *(["MKSTREAM"] if mk else []))

    @rule(k=KEYS, sub=st.sampled_from(["SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"]))
    def xgroup(self, k: str, sub: str) -> None:
        extra = {"SETID": ["0"], "DESTROY": [], "CREATECONSUMER": ["c1"],
                 "DELCONSUMER": ["c1"]}[sub]
        self.same("XGROUP", sub, k, "g", *extra)

    @rule(k=KEYS, consumer=st.sampled_from(["c1", "c2"]))
    def xreadgroup(self, k: str, consumer: str) -> None:
        self.same("XREADGROUP", "GROUP", "g", consumer, "COUNT", "1", "STREAMS", k, ">")

    @rule(k=KEYS, cmd=st.sampled_from(["XACK", "XACKDEL"]))
    def xack(self, k: str, cmd: str) -> None:
        ids = [f"{i}-1" for i in range(2, self.next_id + 1)]
        if cmd == "XACK":
            self.same("XACK", k, "g", *ids)
        else:
            self.same("XACKDEL", k, "g", "IDS", str(len(ids)), *ids)

    @rule(k=KEYS, consumer=st.sampled_from(["c2", "c3"]))
    def xclaim(self, k: str, consumer: str) -> None:
        self.same("XCLAIM", k, "g", consumer, "0", f"{self.next_id}-1", "JUSTID")
        self.same("XAUTOCLAIM", k, "g", consumer, "0", "0", "JUSTID")


    # -- sets ---------------------------------------------------------------------------------

    @rule(k=KEYS, m=st.sampled_from(["1", "2", "x"]), cmd=st.sampled_from(["SADD", "SREM"]))
    def set_members(self, k: str, m: str, cmd: str) -> None:
        self.same(cmd, k, m, "y")

    @rule(k=KEYS, m=st.sampled_from(["1", "x", "new"]))
    def sadd_hashtable(self, k: str, m: str) -> None:
        """A set past set-max-listpack-entries, then one member (SADD's hash-table path)."""
        self.same("SADD", k, *(f"member{i}" for i in range(130)))
        self.same("SADD", k, m)

    @rule(k=KEYS, k2=KEYS, m=st.sampled_from(["1", "x"]))
    def smove(self, k: str, k2: str, m: str) -> None:
        self.same("SMOVE", k, k2, m)

    @rule(k=KEYS, count=st.sampled_from([[], ["1"], ["5"]]))
    def spop(self, k: str, count: list[str]) -> None:
        ours, theirs = (side.run("SPOP", k, *count) for side in self.pair)
        assert ours[1] == theirs[1], ("events", "SPOP", ours[1], theirs[1])  # members: random

    @rule(k=KEYS, k2=KEYS, k3=KEYS, cmd=st.sampled_from(["SINTERSTORE", "SUNIONSTORE",
                                                         "SDIFFSTORE"]))
    def set_store(self, k: str, k2: str, k3: str, cmd: str) -> None:
        self.same(cmd, k, k2, k3)

    # -- sorted sets -----------------------------------------------------------------------------

    @rule(k=KEYS, m=st.sampled_from(["p", "q"]), opts=st.sampled_from([[], ["NX"], ["XX"],
                                                                      ["INCR"]]))
    def zadd(self, k: str, m: str, opts: list[str]) -> None:
        self.same("ZADD", k, *opts, "1.5", m)

    @rule(k=KEYS, m=st.sampled_from(["p", "q"]))
    def zincrby_zrem(self, k: str, m: str) -> None:
        self.same("ZINCRBY", k, "2", m)
        self.same("ZREM", k, m)

    @rule(k=KEYS, cmd=st.sampled_from(["ZPOPMIN", "ZPOPMAX"]), count=st.sampled_from([[], ["3"]]))
    def zpop(self, k: str, cmd: str, count: list[str]) -> None:
        self.same(cmd, k, *count)

    @rule(k=KEYS, cmd=st.sampled_from([["ZREMRANGEBYRANK", "0", "0"],
                                       ["ZREMRANGEBYSCORE", "0", "2"],
                                       ["ZREMRANGEBYLEX", "-", "+"]]))
    def zremrange(self, k: str, cmd: list[str]) -> None:
        self.same(cmd[0], k, *cmd[1:])

    @rule(k=KEYS, k2=KEYS, k3=KEYS, cmd=st.sampled_from(["ZUNIONSTORE", "ZINTERSTORE",
                                                         "ZDIFFSTORE"]))
    def zstore(self, k: str, k2: str, k3: str, cmd: str) -> None:
        self.same(cmd, k, "2", k2, k3)

    @rule(k=KEYS, k2=KEYS)
    def zrangestore(self, k: str, k2: str) -> None:
        self.same("ZRANGESTORE", k, k2, "0", "-1")

    # -- bitmaps, HyperLogLog, GEO, SORT -----------------------------------------------------

    @rule(k=KEYS, off=st.sampled_from(["0", "7", "100"]), bit=st.sampled_from(["0", "1"]))
    def setbit(self, k: str, off: str, bit: str) -> None:
        self.same("SETBIT", k, off, bit)

    @rule(k=KEYS, k2=KEYS, k3=KEYS, op=st.sampled_from(["AND", "OR"]))
    def bitop(self, k: str, k2: str, k3: str, op: str) -> None:
        self.same("BITOP", op, k, k2, k3)

    @rule(k=KEYS)
    def bitfield(self, k: str) -> None:
        self.same("BITFIELD", k, "SET", "u8", "0", "255", "GET", "u4", "0")

    @rule(k=KEYS, k2=KEYS, e=st.sampled_from(["e1", "e2"]))
    def hll(self, k: str, k2: str, e: str) -> None:
        self.same("PFADD", k, e)
        self.same("PFCOUNT", k)
        self.same("PFMERGE", k2, k)

    @rule(k=KEYS, k2=KEYS)
    def geo(self, k: str, k2: str) -> None:
        self.same("GEOADD", k, "13.361389", "38.115556", "Palermo")
        self.same("GEOSEARCHSTORE", k2, k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km")
        self.same("GEORADIUS", k, "15", "37", "10", "km", "STORE", k2)

    @rule(k=KEYS, k2=KEYS)
    def sort_store(self, k: str, k2: str) -> None:
        self.same("SORT", k, "ALPHA", "STORE", k2)


    # -- scripts: their commands fire the same events as a client's --------------------------

    @rule(k=KEYS, k2=KEYS, v=VALUES, body=st.sampled_from([
        "redis.call('set', KEYS[1], ARGV[1]); return redis.call('del', KEYS[2])",
        "redis.call('rpush', KEYS[1], ARGV[1]); return redis.pcall('incr', KEYS[2])",
        "redis.call('hset', KEYS[1], 'f', ARGV[1]); return redis.call('expire', KEYS[2], 100)",
        "return redis.pcall('xadd', KEYS[1], '*', 'f', ARGV[1]) and 1",
        "return redis.call('get', KEYS[1])"]))
    def script(self, k: str, k2: str, v: str, body: str) -> None:
        self.same("EVAL", body, "2", k, k2, v)


def test_event_sequences_as_redis(servers: tuple[Events, Events]) -> None:
    Sequence.pair = servers
    run_state_machine_as_test(Sequence, settings=settings(
        max_examples=int(os.environ.get("SLUICE_EXAMPLES", "60")), stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))


# -- scenarios: expiry in time, eviction, the order of a RESP3 client's own events ------------


def _message(channel: bytes, payload: bytes) -> bytes:
    """A pmessage to the ``__key*__:*`` subscriber, as RESP2 encodes it."""
    parts = [b"pmessage", b"__key*__:*", channel, payload]
    return b"*4\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def _until_event(side: Events, name: bytes) -> list[bytes]:
    """The messages that arrive until one says ``name`` (waiting on the server's cycle)."""
    seen: list[bytes] = []

    def arrived() -> bool:
        seen.extend(side.run("PING")[1])
        return any(name in m for m in seen)

    wait_until(arrived, what=f"a {name!r} event")
    return seen


def test_expired_events_from_lazy_and_active_expiry(servers: tuple[Events, Events]) -> None:
    """A key whose TTL passed: "expired" when a read finds it (lazy expiry, then the read's
    "keymiss"), or when the active cycle does."""
    got = []
    for side in servers:
        side.writer.call("SELECT", "0")  # (the sequences may have left it elsewhere)
        side.writer.call("FLUSHALL")
        side.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        _, events = side.run("SET", "lazy", "v", "PX", "1")
        assert [m.split(b"\r\n")[-2] for m in events] == [b"new", b"lazy", b"set", b"lazy",
                                                            b"expire", b"lazy"]
        # KEYS skips an expired key without deleting it: wait for it to be logically gone.
        wait_until(lambda s=side: s.writer.call("KEYS", "*") == b"*0\r\n", what="the TTL")
        lazy = side.run("GET", "lazy")[1]
        side.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        side.run("SET", "active", "v", "PX", "1")
        got.append((lazy, _until_event(side, b"expired")))
        side.writer.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    assert got[0] == got[1]
    lazy, active = got[0]
    assert lazy == [_message(b"__keyspace@0__:lazy", b"expired"),
                    _message(b"__keyevent@0__:expired", b"lazy"),
                    _message(b"__keyspace@0__:lazy", b"keymiss"),
                    _message(b"__keyevent@0__:keymiss", b"lazy")]
    assert [m.split(b"\r\n")[-2] for m in active] == [b"expired", b"active"]


def test_resp3_own_events_follow_the_reply(servers: tuple[Events, Events]) -> None:
    """A RESP3 connection subscribed to its own keyspace events gets them after its reply,
    as Redis 7.2+ queues pushes to the client running the command; in a transaction, after
    EXEC's whole reply."""
    out = []
    for side in servers:
        port = side.writer.sock.getpeername()[1]
        c = RawClient(port, protocol=3)
        c.call("SUBSCRIBE", "__keyevent@0__:set", "__keyevent@0__:del")
        c.read_replies(1)
        c.send("SET", "own", "1")
        first = c.read_replies(2)
        c.send("MULTI")
        c.send("SET", "own", "2")
        c.send("DEL", "own")
        c.send("EXEC")
        rest = c.read_replies(6)
        out.append(first + rest)
        c.close()
    assert out[0] == out[1]
    assert out[0][0] == b"+OK\r\n" and out[0][-3].startswith(b"*2\r\n")  # EXEC's array
