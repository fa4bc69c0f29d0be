"""Which blocked stream readers a write serves, and with what: Sluice against redis-server.

Hypothesis lines up blocked readers on one or two streams: XREADGROUP readers of two groups
(some with COUNT 1, some with a CLAIM that never finds anything idle enough), and XREAD
readers of new entries. Then it runs writes: XADDs (several in one MULTI), XDEL, XDELEX,
XTRIM, PEXPIRE, PERSIST, XGROUP SETID / DESTROY / CREATE, DEL and SET. After each write both servers must agree on
which readers are still blocked and on the exact bytes each served reader got; every reader
that is not blocked then sends its request again, in order, as a consumer loop does, and
joins the back of the queue if it blocks.

This checks the ready-keys machinery (blocking.py) where it is easiest to get subtly wrong:
FIFO order across groups and readers of new entries, a group's readers sharing one "nothing
new", re-blocked readers going last, keys deleted or retyped under blocked readers, and
which writes wake readers at all: a write that leaves the stream in place without a new
entry (XDEL, XTRIM, PEXPIRE, XGROUP SETID) wakes no one, so a group moved back by SETID is
read from only at the next XADD.

A reader's request is settled (blocked, or answered) before the next one is sent, so the
queue order is the order of the list on both servers; whether it blocked is read from
CLIENT LIST, and a write's reply comes after the replies of the readers it served (both
servers write them in the same loop iteration).
"""

from __future__ import annotations

import select
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
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

    def has_reply(self, i: int) -> bool:
        reader = self.readers[i]
        return bool(reader._pending) or bool(select.select([reader.sock], [], [], 0)[0])

    def settle(self, i: int) -> bytes | None:
        """Reader ``i`` has sent its request: its reply, or None once it is blocked."""
        state = wait_until(lambda: ("reply" if self.has_reply(i) else
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
    if kind == "del":
        return [["DEL", key]]
    return [["SET", key, "x"]]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(readers=st.lists(_READER, min_size=2, max_size=6),
       writes=st.lists(_WRITE, min_size=1, max_size=6),
       protocol=st.sampled_from([2, 3]))
def test_blocked_readers_are_served_as_redis_serves_them(
        sluice: Any, reference: ProcessServer, readers: list[tuple[str, tuple[str, ...]]],
        writes: list[tuple[Any, ...]], protocol: int) -> None:
    sides = (Side(sluice.port, protocol, len(readers)),
             Side(reference.port, protocol, len(readers)))
    try:
        for side in sides:
            for key in KEYS:
                for group in GROUPS:
                    side.control.call("XGROUP", "CREATE", key, group, "$", "MKSTREAM")
        requests = [_request(i, kind, keys) for i, (kind, keys) in enumerate(readers)]
        waiting: set[int] = set()
        next_ms = [0]
        for step, op in enumerate([None, *writes]):
            if op is not None:
                for argv in _write(op, next_ms):
                    ours, theirs = (side.control.call(*argv) for side in sides)
                    assert ours == theirs, f"step {step} {argv}: {ours!r} != {theirs!r}"
                blocked = [side.blocked() for side in sides]
                assert blocked[0] == blocked[1], f"step {step} {op}: still blocked"
                for i in sorted(waiting - blocked[0]):
                    ours, theirs = (side.readers[i].read_reply() for side in sides)
                    assert ours == theirs, f"step {step} {op}: reader {i} {readers[i]}"
                waiting = blocked[0]
            # Everyone not blocked asks again, in order (the back of the queue).
            for i in range(len(readers)):
                if i in waiting:
                    continue
                outcome = []
                for side in sides:
                    side.readers[i].send(*requests[i])
                    outcome.append(side.settle(i))
                assert outcome[0] == outcome[1], f"step {step}: reader {i} {readers[i]} asked"
                if outcome[0] is None:
                    waiting.add(i)
    finally:
        for side in sides:
            side.close()
