"""Which blocked clients a write serves, and with what: Sluice against redis-server.

Two generated tests drive the ready-keys machinery (blocking.py) the same way on both
servers. The first lines up blocked stream readers on one or two streams: XREADGROUP
readers of two groups (some with COUNT 1, some with a CLAIM that never finds anything idle
enough) and XREAD readers of new entries; then it runs writes: XADDs (several in one
MULTI), XDEL, XDELEX, XTRIM, PEXPIRE, PERSIST, XGROUP SETID / DESTROY / CREATE, DEL and SET.
The second does the same for BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP on two lists, with
pushes, LMOVE, transactions, DEL, SET and a key turned into a stream. After each write both
servers must agree on which clients are still blocked and on the exact bytes each served
client got; every client that is not blocked then sends its request again, in order, as a
consumer loop does, and joins the back of the queue if it blocks.

What this pins where it is easiest to get subtly wrong: FIFO order across groups and
readers of new entries, re-blocked readers going last on all their keys, keys deleted or
retyped under blocked clients, a push of several values serving several clients, BLMOVE
feeding the next key's waiters in the same pass, and which writes wake readers at all: a
write that leaves a stream in place without a new entry (XDEL, XTRIM, PEXPIRE, XGROUP
SETID) wakes no one, so a group moved back by SETID is read from only at the next XADD.

A client's request is settled (blocked, or answered) before the next one is sent, so the
queue order is the order of the list on both servers; whether it blocked is read from
CLIENT LIST, and a write's reply comes after the replies of the clients it served (both
servers write them in the same loop iteration).
"""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, RawClient, wait_until

pytestmark = pytest.mark.differential

KEYS = ("s", "t")
GROUPS = ("g1", "g2")

# A reader: (kind, keys). Kinds: a group reader, one with COUNT 1, one with CLAIM, or XREAD.
_READER = st.tuples(st.sampled_from(["g1", "g2", "g1-count1", "g1-claim", "g2-claim", "xread"]),
                    st.sampled_from([("s",), ("s", "t")]))
_WRITE = st.one_of(
    st.tuples(st.just("xadd"), st.sampled_from(KEYS), st.integers(1, 3)),
    st.tuples(st.sampled_from(["xdel", "xdelex", "xtrim", "expire", "persist"]),
              st.sampled_from(KEYS)),
    st.tuples(st.just("setid"), st.sampled_from(KEYS), st.sampled_from(GROUPS),
              st.sampled_from(["0", "$"])),
    st.tuples(st.just("destroy"), st.sampled_from(KEYS), st.sampled_from(GROUPS)),
    st.tuples(st.just("create"), st.sampled_from(KEYS), st.sampled_from(GROUPS)),
    st.tuples(st.just("delconsumer"), st.sampled_from(KEYS), st.sampled_from(GROUPS),
              st.integers(0, 5)),
    st.tuples(st.just("del"), st.sampled_from(KEYS)),
    st.tuples(st.just("set"), st.sampled_from(KEYS)),
)


def _request(index: int, kind: str, keys: tuple[str, ...]) -> list[str]:
    ids = [">"] * len(keys)
    if kind == "xread":
        return ["XREAD", "BLOCK", "0", "STREAMS", *keys, *(["$"] * len(keys))]
    group = kind.split("-")[0]
    argv = ["XREADGROUP", "GROUP", group, f"c{index}"]
    if kind.endswith("count1"):
        argv += ["COUNT", "1"]
    if kind.endswith("claim"):
        argv += ["CLAIM", "100000000"]  # nothing gets that idle: only new entries
    return argv + ["BLOCK", "0", "STREAMS", *keys, *ids]


class Side:
    """One server's control connection and its readers' connections."""

    def __init__(self, port: int, protocol: int, n_readers: int) -> None:
        self.control = RawClient(port)
        self.readers = [RawClient(port, protocol) for _ in range(n_readers)]
        self.ids = [int(r.call("CLIENT", "ID")[1:-2]) for r in self.readers]

    def blocked(self) -> set[int]:
        """Indexes of the readers CLIENT LIST shows blocked."""
        listing = self.control.call("CLIENT", "LIST", "ID", *self.ids).decode()
        by_id = {}
        for line in listing.split("\n")[1:]:
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "id" in fields:
                by_id[int(fields["id"])] = "b" in fields["flags"]
        return {i for i, cid in enumerate(self.ids) if by_id.get(cid)}

    def settle(self, i: int) -> bytes | None:
        """Reader ``i`` has sent its request: its reply, or None once it is blocked."""
        state = wait_until(lambda: ("reply" if self.readers[i].has_reply() else
                                    "blocked" if i in self.blocked() else None),
                           what=f"reader {i} to block or be answered")
        return self.readers[i].read_reply() if state == "reply" else None

    def close(self) -> None:
        self.control.call("FLUSHALL")
        for c in (*self.readers, self.control):
            c.close()


def _write(op: tuple[Any, ...], next_ms: list[int]) -> list[list[str]]:
    """The commands of one write (explicit IDs, so both servers store the same)."""
    kind, key = op[0], op[1]
    if kind == "xadd":
        cmds = []
        for _ in range(op[2]):
            next_ms[0] += 1
            cmds.append(["XADD", key, f"{next_ms[0]}-0", "f", str(next_ms[0])])
        return [["MULTI"], *cmds, ["EXEC"]] if len(cmds) > 1 else cmds
    if kind == "xdel":
        return [["XDEL", key, f"{next_ms[0]}-0"]]
    if kind == "xdelex":
        return [["XDELEX", key, "IDS", "1", f"{next_ms[0]}-0"]]
    if kind == "xtrim":
        return [["XTRIM", key, "MAXLEN", "1"]]
    if kind == "expire":
        return [["PEXPIRE", key, "100000000"]]
    if kind == "persist":
        return [["PERSIST", key]]
    if kind == "setid":
        return [["XGROUP", "SETID", key, op[2], op[3]]]
    if kind == "destroy":
        return [["XGROUP", "DESTROY", key, op[2]]]
    if kind == "create":
        return [["XGROUP", "CREATE", key, op[2], "$", "MKSTREAM"]]
    if kind == "delconsumer":  # a blocked reader's consumer, maybe: its re-run makes it again
        return [["XGROUP", "DELCONSUMER", key, op[2], f"c{op[3]}"]]
    if kind == "del":
        return [["DEL", key]]
    return [["SET", key, "x"]]


def _drive(ports: tuple[int, int], protocol: int, setup: list[list[str]],
           requests: list[list[str]], steps: list[list[list[str]]],
           observe: Any = None) -> None:
    """Block the clients of ``requests`` in order, then after each step (the control
    client's commands) compare who is still blocked and what the others got; those not
    blocked ask again, in order. The same on both servers, compared as it goes.
    ``observe(control)``, if given, returns what else must be the same after each step."""
    sides = tuple(Side(port, protocol, len(requests)) for port in ports)
    try:
        for side in sides:
            for argv in setup:
                side.control.call(*argv)
        waiting: set[int] = set()
        for step, commands in enumerate([[], *steps]):
            if commands:
                for argv in commands:
                    ours, theirs = (side.control.call(*argv) for side in sides)
                    assert ours == theirs, f"step {step} {argv}: {ours!r} != {theirs!r}"
                blocked = [side.blocked() for side in sides]
                assert blocked[0] == blocked[1], f"step {step} {commands}: still blocked"
                for i in sorted(waiting - blocked[0]):
                    ours, theirs = (side.readers[i].read_reply() for side in sides)
                    assert ours == theirs, f"step {step} {commands}: client {i} {requests[i]}"
                waiting = blocked[0]
            # Everyone not blocked asks again, in order (the back of the queue).
            for i, request in enumerate(requests):
                if i in waiting:
                    continue
                outcome = []
                for side in sides:
                    side.readers[i].send(*request)
                    outcome.append(side.settle(i))
                assert outcome[0] == outcome[1], f"step {step}: client {i} {request} asked"
                if outcome[0] is None:
                    waiting.add(i)
            if observe is not None:
                ours, theirs = (observe(side.control) for side in sides)
                assert ours == theirs, f"step {step} {commands}: state"
    finally:
        for side in sides:
            side.close()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(readers=st.lists(_READER, min_size=2, max_size=6),
       writes=st.lists(_WRITE, min_size=1, max_size=6),
       protocol=st.sampled_from([2, 3]))
# A waiting reader's consumer deleted: the next XADD's re-run makes it again (the first
# reader takes the entry, so the second is not served).
@example(readers=[("g1", ("s",)), ("g1", ("s",))],
         writes=[("delconsumer", "s", "g1", 1), ("xadd", "s", 1)], protocol=2)
def test_blocked_readers_are_served_as_redis_serves_them(
        sluice: Any, reference: ProcessServer, readers: list[tuple[str, tuple[str, ...]]],
        writes: list[tuple[Any, ...]], protocol: int) -> None:
    setup = [["XGROUP", "CREATE", key, group, "$", "MKSTREAM"]
             for key in KEYS for group in GROUPS]
    next_ms = [0]
    _drive((sluice.port, reference.port), protocol, setup,
           [_request(i, kind, keys) for i, (kind, keys) in enumerate(readers)],
           [_write(op, next_ms) for op in writes], _groups)


def _groups(control: RawClient) -> list[Any]:
    """XINFO GROUPS of both streams (or their errors), and each group's consumers with their
    pending counts (not their times: each server has its own clock). RESP2 replies."""
    out: list[Any] = []
    for key in KEYS:
        groups = _decoded(control.call("XINFO", "GROUPS", key))
        out.append(groups)
        for group in groups if isinstance(groups, list) else ():
            consumers = _decoded(control.call("XINFO", "CONSUMERS", key, group[1]))
            out.append([consumer[:4] for consumer in consumers])  # name, pending
    return out


def _decoded(raw: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(raw)
    reply = reader.gets()
    return str(reply) if isinstance(reply, hiredis.ReplyError) else reply


# -- blocking list pops: the same machinery ----------------------------------------------------

_POPPER = st.sampled_from([
    ["BLPOP", "a", "0"], ["BLPOP", "b", "a", "0"], ["BRPOP", "a", "0"],
    ["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"], ["BRPOPLPUSH", "b", "a", "0"],
    ["BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2"], ["BLPOP", "s", "a", "0"],
    ["XREAD", "BLOCK", "0", "STREAMS", "a", "$"],
])
_PUSH = st.one_of(
    st.tuples(st.sampled_from(["LPUSH", "RPUSH"]), st.sampled_from(["a", "b"]),
              st.integers(1, 3)),
    st.tuples(st.just("both"), st.just(""), st.integers(1, 2)),
    st.tuples(st.just("retyped"), st.sampled_from(["a", "b"]), st.just(1)),
    st.tuples(st.sampled_from(["DEL", "SET", "XADD", "LMOVE"]), st.sampled_from(["a", "b"]),
              st.just(0)),
)


def _push(op: tuple[str, str, int], counter: list[int]) -> list[list[str]]:
    kind, key, n = op
    counter[0] += 1
    values = [f"v{counter[0]}.{i}" for i in range(n)]
    if kind == "both":  # one transaction, both keys: served after EXEC, in signal order
        return [["MULTI"], ["RPUSH", "b", *values], ["LPUSH", "a", *values], ["EXEC"]]
    if kind == "retyped":  # a string set and deleted first: only the pushes make keys ready
        other = "b" if key == "a" else "a"
        return [["MULTI"], ["SET", key, "x"], ["DEL", key], ["RPUSH", other, *values],
                ["RPUSH", key, *values], ["EXEC"]]
    if kind == "DEL":
        return [["DEL", key]]
    if kind == "SET":
        return [["SET", key, f"v{counter[0]}"]]
    if kind == "XADD":
        return [["DEL", key], ["XADD", key, f"{counter[0]}-0", "f", "v"]]
    if kind == "LMOVE":
        return [["LMOVE", key, "b" if key == "a" else "a", "LEFT", "LEFT"]]
    return [[kind, key, *values]]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(poppers=st.lists(_POPPER, min_size=2, max_size=6),
       pushes=st.lists(_PUSH, min_size=1, max_size=6),
       protocol=st.sampled_from([2, 3]))
# SET and DEL of a key a BLMOVE waits on make nothing ready: b is served before a.
@example(poppers=[["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"], ["BLPOP", "b", "a", "0"]],
         pushes=[("retyped", "a", 1)], protocol=2)
def test_blocked_pops_are_served_as_redis_serves_them(
        sluice: Any, reference: ProcessServer, poppers: list[list[str]],
        pushes: list[tuple[str, str, int]], protocol: int) -> None:
    """BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP on two lists (and an XREAD waiting on a
    key that may become a stream): FIFO order, a push of several values serving several
    clients, BLMOVE feeding the next key's waiters in the same pass, transactions, and
    waiters of another type keeping their places when the key is set or retyped."""
    counter = [0]
    _drive((sluice.port, reference.port), protocol, [["SET", "s", "x"]], poppers,
           [_push(op, counter) for op in pushes])


# -- blocking sorted-set pops: the same machinery ----------------------------------------------

_ZPOPPER = st.sampled_from([
    ["BZPOPMIN", "a", "0"], ["BZPOPMAX", "b", "a", "0"], ["BZPOPMIN", "s", "a", "0"],
    ["BZMPOP", "0", "2", "a", "b", "MIN", "COUNT", "2"], ["BZMPOP", "0", "1", "b", "MAX"],
    ["BLPOP", "a", "0"], ["BZPOPMAX", "a", "b", "0"],
])
_ZWRITE = st.one_of(
    st.tuples(st.just("ZADD"), st.sampled_from(["a", "b"]), st.integers(1, 3)),
    st.tuples(st.sampled_from(["both", "store", "rangestore", "incr", "retyped", "DEL", "SET",
                               "RPUSH", "ZREM"]),
              st.sampled_from(["a", "b"]), st.integers(1, 2)),
)


def _zwrite(op: tuple[str, str, int], counter: list[int]) -> list[list[str]]:
    kind, key, n = op
    counter[0] += 1
    pairs = [x for i in range(n) for x in (str(counter[0] * 10 + i), f"m{counter[0]}.{i}")]
    other = "b" if key == "a" else "a"
    if kind == "ZADD":
        return [["ZADD", key, *pairs]]
    if kind == "both":  # one transaction, both keys: served after EXEC, in signal order
        return [["MULTI"], ["ZADD", "b", *pairs], ["ZADD", "a", *pairs], ["EXEC"]]
    if kind == "store":  # a STORE command creates the key: ready as any write
        return [["ZUNIONSTORE", key, "2", "src", key]]
    if kind == "rangestore":
        return [["ZRANGESTORE", key, "src", "0", str(n - 1)]]
    if kind == "incr":
        return [["ZINCRBY", key, "1", f"m{counter[0]}"]]
    if kind == "retyped":  # a string set and deleted first: only the ZADDs make keys ready
        return [["MULTI"], ["SET", key, "x"], ["DEL", key], ["ZADD", other, *pairs],
                ["ZADD", key, *pairs], ["EXEC"]]
    if kind == "RPUSH":  # a list under the key: a BLPOP waiter is served, the others wait on
        return [["DEL", key], ["RPUSH", key, f"v{counter[0]}"]]
    if kind == "ZREM":  # nothing to remove from a missing key: no write, no wake-up
        return [["ZREM", key, "nope"]]
    if kind == "DEL":
        return [["DEL", key]]
    return [["SET", key, f"v{counter[0]}"]]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(poppers=st.lists(_ZPOPPER, min_size=2, max_size=6),
       writes=st.lists(_ZWRITE, min_size=1, max_size=6),
       protocol=st.sampled_from([2, 3]))
# A ZADD of three members to a key two BZPOPMIN-style clients wait on serves both, in order.
@example(poppers=[["BZPOPMIN", "a", "0"], ["BZPOPMAX", "b", "a", "0"]],
         writes=[("ZADD", "a", 3)], protocol=3)
def test_blocked_zset_pops_are_served_as_redis_serves_them(
        sluice: Any, reference: ProcessServer, poppers: list[list[str]],
        writes: list[tuple[str, str, int]], protocol: int) -> None:
    """BZPOPMIN, BZPOPMAX and BZMPOP (with a BLPOP waiting on a key that may become a list or
    a sorted set): FIFO per key, one write serving several clients, STORE commands and
    ZINCRBY creating keys, transactions, and waiters of another type keeping their places."""
    counter = [0]
    _drive((sluice.port, reference.port), protocol,
           [["SET", "s", "x"], ["ZADD", "src", "1", "p", "2", "q", "3", "r"]], poppers,
           [_zwrite(op, counter) for op in writes])
