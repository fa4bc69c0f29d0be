"""Stream commands (no consumer-group reads) against a real redis-server, byte for byte.

Scripted cases run in RESP2 and RESP3; a hypothesis sequence test drives XADD / XDEL / XTRIM /
XRANGE / XREVRANGE / XLEN / non-blocking XREAD on small macro nodes (so ``~`` trims and the
radix tree layout are exercised) and compares every reply's bytes, then XINFO STREAM.

The 8.x additions (XDELEX, XACKDEL, KEEPREF / DELREF / ACKED, IDMP, XCFGSET, XREAD ``+``)
are compared in test_streams8_diff.py.
"""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient, replay_same

pytestmark = pytest.mark.differential

# Set up once per test (each case starts from FLUSHALL).
SETUP = [
    ["XADD", "s", "1-1", "a", "b"],
    ["XADD", "s", "1-2", "c", "d", "e", "f"],
    ["XADD", "s", "2-0", "a", "b"],
    ["XADD", "s", "3-0", "x", "y"],
    ["XDEL", "s", "2-0"],
    ["SET", "str", "v"],
]

CASES: list[list[str]] = [
    # XADD: IDs, options and every error in Redis's order
    ["XADD", "s", "4-*", "a", "b"], ["XADD", "s", "3", "a", "b"], ["XADD", "s", "1-*", "a", "b"],
    ["XADD", "s", "0-0", "a", "b"], ["XADD", "str", "0-0", "a", "b"], ["XADD", "str", "*", "a", "b"],
    ["XADD", "str", "foo", "a", "b"], ["XADD", "s", "0-0", "a"], ["XADD", "s", "MAXLEN", "1"],
    ["XADD", "s", "MAXLEN", "1", "*", "a"], ["XADD", "s", "*", "a", "b", "c"],
    ["XADD", "s", "MAXLEN", "x", "*", "a", "b"], ["XADD", "s", "MAXLEN", "-1", "*", "a", "b"],
    ["XADD", "s", "MAXLEN", "1", "MINID", "0", "*", "a", "b"],
    ["XADD", "s", "MINID", "1", "MAXLEN", "1", "*", "a", "b"],
    ["XADD", "s", "MAXLEN", "1", "LIMIT", "10", "*", "a", "b"],
    ["XADD", "s", "LIMIT", "10", "*", "a", "b"], ["XADD", "s", "LIMIT", "0", "*", "a", "b"],
    ["XADD", "s", "LIMIT", "-1", "*", "a", "b"], ["XADD", "s", "MINID", "x", "*", "a", "b"],
    ["XADD", "s", "MINID", "+", "*", "a", "b"], ["XADD", "s", "MAXLEN", "=", "=", "1", "*", "a", "b"],
    ["XADD", "s", "MAXLEN", "~", "*", "a", "b"], ["XADD", "s", "MAXLEN", "~", "1"],
    ["XADD", "s", "MAXLEN", "1", "LIMIT", "10", "LIMIT", "5", "*", "a", "b"],
    ["XADD", "s", "NOMKSTREAM", "5-0", "a"], ["XADD", "nokey", "NOMKSTREAM", "5-0", "a", "b"],
    ["XADD", "s", "NOMKSTREAM", "MAXLEN", "=", "2", "9-*", "a", "b"],
    ["XADD", "s", "MINID", "=", "3", "9-0", "a", "b"], ["XADD", "s", "foo", "a", "b"],
    ["XADD", "s", "MAXLEN", "~", "1", "LIMIT", "0", "9-0", "a", "b"],
    ["XADD", "s", "maxlen", "1", "0-0", "a", "b"], ["XADD", "s", "1-2-3", "a", "b"],
    ["XADD", "s", "18446744073709551616-0", "a", "b"], ["XADD", "s", "-1", "a", "b"],
    ["XADD", "s", "1-18446744073709551616", "a", "b"], ["XADD", "s", "+1-*", "a", "b"],
    ["XADD", "s"], ["XADD", "s", "*"],
    # XRANGE / XREVRANGE
    ["XRANGE", "s", "-", "+"], ["XREVRANGE", "s", "+", "-"], ["XRANGE", "s", "1", "1"],
    ["XRANGE", "s", "(1-1", "+"], ["XRANGE", "s", "-", "(3-0"], ["XREVRANGE", "s", "(3-0", "(1-1"],
    ["XRANGE", "s", "(-", "+"], ["XRANGE", "s", "-", "(+"], ["XRANGE", "s", "(", "+"],
    ["XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"],
    ["XRANGE", "s", "-", "(0-0"], ["XRANGE", "s", "-", "+", "COUNT", "0"],
    ["XRANGE", "s", "-", "+", "COUNT", "-1"], ["XRANGE", "s", "-", "+", "COUNT", "2"],
    ["XREVRANGE", "s", "+", "-", "COUNT", "1"], ["XRANGE", "s", "-", "+", "COUNT"],
    ["XRANGE", "s", "-", "+", "COUNT", "x"], ["XRANGE", "s", "x", "+", "COUNT", "x"],
    ["XRANGE", "s", "-", "+", "FOO", "1"], ["XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2"],
    ["XRANGE", "nokey", "-", "+", "COUNT", "0"], ["XRANGE", "nokey", "x", "+"],
    ["XRANGE", "str", "-", "+"], ["XRANGE", "str", "x", "+"], ["XRANGE", "s", "5", "1"],
    ["XRANGE", "s", "01", "+"], ["XRANGE", "s", " 1", "+"], ["XRANGE", "s", "1-", "+"],
    # XLEN / XDEL
    ["XLEN", "s"], ["XLEN", "nokey"], ["XLEN", "str"], ["XDEL", "s", "1-1", "1-1", "9-9"],
    ["XDEL", "s", "foo"], ["XDEL", "s", "1-2", "foo"], ["XDEL", "nokey", "foo"],
    ["XDEL", "str", "foo"], ["XDEL", "s"], ["XDEL", "s", "-"],
    # XTRIM
    ["XTRIM", "s", "MAXLEN", "1"], ["XTRIM", "s", "MAXLEN", "~", "1"], ["XTRIM", "s", "MINID", "3"],
    ["XTRIM", "s", "MINID", "~", "3"], ["XTRIM", "s"], ["XTRIM", "s", "foo"],
    ["XTRIM", "s", "LIMIT", "1"], ["XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "1"],
    ["XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"], ["XTRIM", "s", "MAXLEN", "~", "1", "foo"],
    ["XTRIM", "str", "MAXLEN", "1"], ["XTRIM", "nokey", "MINID", "0"],
    ["XTRIM", "s", "MAXLEN", "1", "MAXLEN", "1"], ["XTRIM", "s", "MINID", "+"],
    # XSETID
    ["XSETID", "s"], ["XSETID", "nokey", "1"], ["XSETID", "s", "5"], ["XSETID", "s", "2"],
    ["XSETID", "s", "10", "ENTRIESADDED"], ["XSETID", "s", "10", "ENTRIESADDED", "1",
                                            "MAXDELETEDID", "20"],
    ["XSETID", "s", "10", "ENTRIESADDED", "-2", "MAXDELETEDID", "0"],
    ["XSETID", "s", "10", "ENTRIESADDED", "2"], ["XSETID", "s", "10", "MAXDELETEDID", "3"],
    ["XSETID", "s", "10", "ENTRIESADDED", "x", "MAXDELETEDID", "3"],
    ["XSETID", "s", "10", "ENTRIESADDED", "1", "MAXDELETEDID", "x"],
    ["XSETID", "s", "10", "ENTRIESADDED", "9", "MAXDELETEDID", "3", "foo"],
    ["XSETID", "s", "x"], ["XSETID", "s", "+"], ["XSETID", "nokey", "x"], ["XSETID", "str", "1"],
    # XREAD (non-blocking, and BLOCK answered at once)
    ["XREAD", "STREAMS", "s", "0"], ["XREAD", "COUNT", "1", "STREAMS", "s", "nokey", "0", "0"],
    ["XREAD", "STREAMS", "s", "3-0"], ["XREAD", "STREAMS", "s", "$"], ["XREAD", "COUNT", "0",
                                                                      "STREAMS", "s", "1-1"],
    ["XREAD", "COUNT", "-1", "STREAMS", "s", "0"], ["XREAD", "BLOCK", "10", "STREAMS", "s", "0"],
    ["XREAD", "COUNT", "1", "COUNT", "2", "STREAMS", "s", "0"], ["XREAD", "STREAMS", "s"],
    ["XREAD", "STREAMS", "s", "s", "0", "1-1"], ["XREAD", "STREAMS", "nokey", "0"],
    ["XREAD", "STREAMS", "s", ">"], ["XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"],
    ["XREAD", "NOACK", "STREAMS", "s", "0"], ["XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"],
    ["XREAD", "BLOCK", "01", "STREAMS", "s", "0"], ["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"],
    ["XREAD", "COUNT", "01", "STREAMS", "s", "0"], ["XREAD", "FOO", "STREAMS", "s", "0"],
    ["XREAD", "COUNT", "1"], ["XREAD", "STREAMS", "str", "0"], ["XREAD", "STREAMS", "s", "str",
                                                                "0", "x"],
    ["XREAD", "STREAMS", "s", "str", "x", "0"], ["XREAD", "STREAMS", "s", "(1"],
    ["XREAD", "STREAMS", "s", "-"], ["XREAD", "STREAMS", "s", "1-*"],
    ["XREAD", "STREAMS", "s", "18446744073709551615-18446744073709551615"],
    # XINFO
    ["XINFO", "HELP"], ["XINFO", "HELP", "x"], ["XINFO"], ["XINFO", "foo"], ["XINFO", "STREAM"],
    ["XINFO", "STREAM", "nokey"], ["XINFO", "STREAM", "str"], ["XINFO", "STREAM", "s", "foo"],
    ["XINFO", "stream", "s", "FULL", "foo"], ["XINFO", "STREAM", "s", "FULL", "COUNT"],
    ["XINFO", "STREAM", "s", "FULL", "COUNT", "x"], ["XINFO", "STREAM", "nokey", "foo"],
    ["XINFO", "STREAM", "str", "FULL", "COUNT", "x"], ["XINFO", "STREAM", "nokey", "FULL", "x"],
    # streams as keys
    ["TYPE", "s"], ["OBJECT", "ENCODING", "s"], ["EXISTS", "s"],
]


@pytest.mark.parametrize("command", CASES, ids=[" ".join(c) for c in CASES])
def test_same_reply(raw_pair: tuple[RawClient, RawClient], command: list[str]) -> None:
    ours, theirs = raw_pair
    for setup in SETUP:
        assert ours.call(*setup) == theirs.call(*setup), setup
    assert ours.call(*command) == theirs.call(*command)
    # What the command left behind must match as well.
    for check in (["XRANGE", "s", "-", "+"], ["XLEN", "s"], ["EXISTS", "nokey"]):
        assert ours.call(*check) == theirs.call(*check), (command, check)
    assert stream_info(ours, "s") == stream_info(theirs, "s"), command


def test_multi_exec_replies(raw_pair: tuple[RawClient, RawClient]) -> None:
    ours, theirs = raw_pair
    script = [["MULTI"], ["XADD", "s", "1-0", "a", "b"], ["XADD", "s", "1-0", "a", "b"],
              ["XADD", "s", "MAXLEN", "x", "*", "a", "b"], ["XLEN", "s"],
              ["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], ["XRANGE", "s", "-", "+"], ["EXEC"]]
    for command in script:
        assert ours.call(*command) == theirs.call(*command), command


# -- XINFO STREAM, parsed ------------------------------------------------------------------------


def stream_info(client: RawClient, key: str, *extra: str) -> Any:
    """XINFO STREAM parsed into (field, value) pairs (errors compared as bytes)."""
    raw = client.call("XINFO", "STREAM", key, *extra)
    if raw.startswith(b"-"):
        return raw
    reader = hiredis.Reader()
    reader.feed(raw)
    reply = reader.gets()
    return list(reply.items()) if isinstance(reply, dict) else list(
        zip(reply[::2], reply[1::2], strict=True))


# -- random sequences on small macro nodes -------------------------------------------------------


def random_commands(seed: int, n: int = 60) -> list[list[str]]:
    """A command sequence from ``seed``, weighted so that streams grow over several macro nodes
    and reads, deletes and trims hit existing entries (hypothesis draws the seeds; plain
    strategies kept streams tiny: their simplest examples dominate)."""
    import random

    rnd = random.Random(seed)
    last = {"s": 0, "t": 0}  # an ms value near the top of each stream

    def ms(key: str) -> int:
        return max(0, last[key] + rnd.randint(-6, 2))

    def an_id(key: str) -> str:
        return f"{ms(key)}-{rnd.randint(0, 2)}"

    def bound(key: str) -> str:
        kind = rnd.random()
        if kind < 0.15:
            return rnd.choice("-+")
        if kind < 0.4:
            return str(ms(key))
        return ("(" if kind > 0.85 else "") + an_id(key)

    def fields() -> list[str]:
        names = rnd.sample(["a", "b", "c", "longer-field-name"], rnd.randint(1, 3))
        if rnd.random() < 0.6:
            names = ["a", "b"][: len(names)] or ["a"]  # the master entry's fields, usually
        return [x for f in names for x in (f, rnd.choice(["1", "v", "x" * 40, "12345678901"]))]

    def trim(key: str) -> list[str]:
        strategy = rnd.choice(["MAXLEN", "MINID"])
        op = rnd.choice([[], ["="], ["~"], ["~"]])
        threshold = str(rnd.randint(0, 20)) if strategy == "MAXLEN" else f"{ms(key)}-0"
        limit = rnd.choice([[], [], ["LIMIT", "2"], ["LIMIT", "0"]]) if op == ["~"] else []
        return [strategy, *op, threshold, *limit]

    out: list[list[str]] = []
    while len(out) < n:
        key = rnd.choice("st")
        roll = rnd.random()
        if roll < 0.35:
            for _ in range(rnd.randint(1, 8)):
                last[key] += rnd.choice([0, 0, 1])
                opts = trim(key) if rnd.random() < 0.15 else []
                ident = f"{last[key]}-*" if rnd.random() < 0.85 else an_id(key)
                out.append(["XADD", key, *opts, ident, *fields()])
        elif roll < 0.48:
            out.append(["XDEL", key, *(an_id(key) for _ in range(rnd.randint(1, 4)))])
        elif roll < 0.56:
            out.append(["XTRIM", key, *trim(key)])
        elif roll < 0.72:
            count = rnd.choice([[], [], ["COUNT", "2"], ["COUNT", "0"]])
            a, b = bound(key), bound(key)
            out.append(["XRANGE", key, a, b, *count] if rnd.random() < 0.6 else
                       ["XREVRANGE", key, b, a, *count])
        elif roll < 0.78:
            out.append(["XLEN", key])
        else:
            count = rnd.choice([[], ["COUNT", "1"], ["COUNT", "3"]])
            out.append(["XREAD", *count, "STREAMS", "s", "t",
                        rnd.choice([str(ms("s")), an_id("s"), "$"]), an_id("t")])
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32))
def test_random_sequences(small_nodes: tuple[RawClient, RawClient], seed: int) -> None:
    replay_same(small_nodes, random_commands(seed))
    ours, theirs = small_nodes
    for key in ("s", "t"):
        # Same length, node count, radix tree size, first/last entries, max deleted ID.
        assert stream_info(ours, key) == stream_info(theirs, key), key
