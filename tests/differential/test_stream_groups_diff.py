"""Consumer groups, Sluice against redis-server 7.0.15, reply bytes compared.

Everything 7.0 knows is compared: XGROUP, XREADGROUP (history, NOACK, BLOCK, CLIENT UNBLOCK,
MULTI), XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS, WATCH around group changes, the
command table rows, and a hypothesis run of random group operations.

Left out on purpose, because current Redis (which we follow) changed them after 7.0; the
integration tests assert the documented behaviour instead:
- consumers created by XREADGROUP that blocks or reads nothing, and by XCLAIM / XAUTOCLAIM
  that claim nothing (7.2+ always creates them) - so XINFO CONSUMERS and the "consumers"
  count of XINFO GROUPS are not compared after such commands;
- XINFO CONSUMERS "inactive" and "idle" (7.2 added one and redefined the other);
- "entries-read" / "lag" after deletions (7.2 changed the tombstone check) and after
  XGROUP CREATE/SETID ... ENTRIESREAD (FIELD_NOTES);
- the texts of XREADGROUP's "+" ID and unbalanced STREAMS errors, XGROUP HELP's last line,
  BLOCK overflow ("timeout is out of range"), and a blocked XREADGROUP whose group is
  destroyed (7.2's reprocessing gives the command's own NOGROUP);
- XREADGROUP CLAIM and XACKDEL (8.x).
Idle times are masked (XPENDING's third field) since the two servers' clocks differ.
"""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.commands import load_table
from sluice.commands.spec import CATEGORY_NAMES, FLAG_NAMES, KEY_FLAG_NAMES
from tests.support import ProcessServer, RawClient, wait_until

pytestmark = pytest.mark.differential


def same(pair: tuple[RawClient, RawClient], *args: Any) -> bytes:
    """Run on both; the reply bytes must be identical. Returns them."""
    ours, theirs = pair[0].call(*args), pair[1].call(*args)
    assert ours == theirs, f"{args}: sluice {ours!r} != redis {theirs!r}"
    return ours


def decoded(raw: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(raw)
    return reader.gets()


def same_masked(pair: tuple[RawClient, RawClient], *args: Any) -> Any:
    """Same reply once XPENDING rows' idle times are zeroed (clocks differ)."""
    ours, theirs = decoded(pair[0].call(*args)), decoded(pair[1].call(*args))
    ours, theirs = _mask(ours), _mask(theirs)
    assert ours == theirs, f"{args}: sluice {ours!r} != redis {theirs!r}"
    return ours


def _mask(reply: Any) -> Any:
    if isinstance(reply, list) and reply and all(
            isinstance(row, list) and len(row) == 4 and isinstance(row[2], int) for row in reply):
        return [[row[0], row[1], 0, row[3]] for row in reply]
    return reply


def both(pair: tuple[RawClient, RawClient], *args: Any) -> None:
    """Run on both, replies not compared (setup)."""
    pair[0].call(*args)
    pair[1].call(*args)


def setup_stream(pair: tuple[RawClient, RawClient], key: str = "s", n: int = 5) -> None:
    for i in range(1, n + 1):
        both(pair, "XADD", key, f"{i}-0", "f", str(i))


# -- errors and argument checks ---------------------------------------------------------------

ERROR_CASES = [
    ("XGROUP", "CREATE", "nokey", "g", "0"),
    ("XGROUP", "CREATE", "s", "g", "0"),  # BUSYGROUP
    ("XGROUP", "CREATE", "s", "g2", "bad"),
    ("XGROUP", "CREATE", "s", "g2", "-"),
    ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-5"),
    ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x"),
    ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD"),
    ("XGROUP", "CREATE", "s", "g2", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"),
    ("XGROUP", "cReAtE", "s", "g2", "0", "NOPE"),
    ("XGROUP", "CREATE", "str", "g", "0"),
    ("XGROUP", "CREATE", "s"),
    ("XGROUP", "SETID", "s", "nog", "0"),
    ("XGROUP", "SETID", "s", "g", "0", "MKSTREAM"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD"),
    ("XGROUP", "SETID", "s", "g", "bad"),
    ("XGROUP", "SETID", "nokey", "g", "0"),
    ("XGROUP", "DESTROY", "nokey", "g"),
    ("XGROUP", "DESTROY", "s", "nog"),
    ("XGROUP", "CREATECONSUMER", "s", "nog", "c"),
    ("XGROUP", "DELCONSUMER", "s", "nog", "c"),
    ("XGROUP", "DELCONSUMER", "s", "g", "nobody"),
    ("XGROUP", "FOO"),
    ("XGROUP", "FOO", "bar", "baz", "qux"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"),
    ("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "bad"),
    ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "NOPE", "STREAMS", "s", ">"),
    ("XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "NOACK", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">"),
    ("XREADGROUP", "GROUP", "g"),
    ("XACK", "s", "g", "bad"),
    ("XACK", "str", "g", "1-0"),
    ("XACK", "nokey", "g", "bad"),
    ("XPENDING", "s", "g", "-"),
    ("XPENDING", "s", "g", "-", "+"),
    ("XPENDING", "s", "g", "IDLE", "x", "-", "+", "1"),
    ("XPENDING", "s", "g", "IDLE", "1", "-", "+"),
    ("XPENDING", "s", "g", "-", "+", "x"),
    ("XPENDING", "s", "g", "bad", "+", "1"),
    ("XPENDING", "s", "g", "-", "bad", "1"),
    ("XPENDING", "s", "g", "(18446744073709551615-18446744073709551615", "+", "1"),
    ("XPENDING", "s", "g", "-", "(0-0", "1"),
    ("XPENDING", "s", "nog"),
    ("XPENDING", "nokey", "g", "-", "+", "1"),
    ("XPENDING", "str", "g"),
    ("XPENDING", "s", "g", "-", "+", "1", "c", "extra", "args", "more"),
    ("XCLAIM", "s", "nog", "c", "0", "1-0"),
    ("XCLAIM", "str", "g", "c", "0", "1-0"),
    ("XCLAIM", "s", "g", "c", "x", "1-0"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "FORCE", "2-0"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "bogus"),
    ("XAUTOCLAIM", "s", "g", "c", "x", "0"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "bad"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "x"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "576460752303423488"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "NOPE"),
    ("XAUTOCLAIM", "s", "nog", "c", "0", "0"),
    ("XAUTOCLAIM", "str", "g", "c", "0", "0"),
    ("XAUTOCLAIM", "nokey", "g", "c", "x", "0"),
    ("XINFO", "GROUPS", "nokey"),
    ("XINFO", "GROUPS", "str"),
    ("XINFO", "CONSUMERS", "s", "nog"),
    ("XINFO", "CONSUMERS", "nokey", "g"),
    ("XINFO", "GROUPS"),
    ("XINFO", "CONSUMERS", "s"),
]


@pytest.mark.parametrize("args", ERROR_CASES, ids=lambda a: " ".join(a)[:60])
def test_errors_and_edge_replies(raw_pair: tuple[RawClient, RawClient], args: tuple[str, ...]
                                 ) -> None:
    setup_stream(raw_pair, "s", 3)
    both(raw_pair, "XGROUP", "CREATE", "s", "g", "0")
    both(raw_pair, "SET", "str", "x")
    same(raw_pair, *args)


# -- scripted scenarios -------------------------------------------------------------------------


def test_read_ack_pending_claim_walkthrough(raw_pair: tuple[RawClient, RawClient]) -> None:
    p = raw_pair
    setup_stream(p, "s", 10)
    same(p, "XGROUP", "CREATE", "s", "g", "0")
    same(p, "XGROUP", "CREATE", "s", "g2", "$")
    same(p, "XGROUP", "CREATE", "new", "g", "$", "MKSTREAM")
    same(p, "XGROUP", "CREATECONSUMER", "s", "g", "zed")
    same(p, "XGROUP", "CREATECONSUMER", "s", "g", "zed")
    same(p, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "4", "STREAMS", "s", ">")
    same(p, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "-1", "STREAMS", "s", ">")
    same(p, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")  # null array
    same(p, "XPENDING", "s", "g")
    same_masked(p, "XPENDING", "s", "g", "-", "+", "100")
    same_masked(p, "XPENDING", "s", "g", "(3-0", "(9", "2", "bob")
    same(p, "XPENDING", "s", "g", "-", "+", "-3")
    same(p, "XPENDING", "s", "g", "-", "+", "10", "nobody")
    same(p, "XPENDING", "s", "g2")
    same(p, "XDEL", "s", "2-0", "6-0")
    same(p, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")  # [id, nil] entries
    same(p, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", "1")
    same(p, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "18446744073709551615-18446744073709551615")
    same_masked(p, "XPENDING", "s", "g", "-", "+", "100")
    same(p, "XACK", "s", "g", "1-0", "1-0", "4", "99-0")
    same(p, "XACK", "s", "nog", "3-0")
    same(p, "XCLAIM", "s", "g", "carol", "0", "3-0", "5-0", "6-0", "99-0")
    same(p, "XCLAIM", "s", "g", "carol", "0", "7-0", "JUSTID", "RETRYCOUNT", "9")
    same(p, "XCLAIM", "s", "g", "dave", "0", "9-0", "IDLE", "500", "FORCE", "JUSTID")
    same(p, "XCLAIM", "s", "g", "dave", "0", "8-0", "8-0", "TIME", "1")
    same(p, "XCLAIM", "s", "g", "dave", "3600000", "8-0")
    same(p, "XCLAIM", "s", "g2", "dave", "0", "10-0", "FORCE")
    same(p, "XCLAIM", "s", "g2", "erin", "0", "10-0", "LASTID", "10-0", "JUSTID")
    same_masked(p, "XPENDING", "s", "g", "-", "+", "100")
    same_masked(p, "XPENDING", "s", "g2", "-", "+", "100")
    same(p, "XAUTOCLAIM", "s", "g", "frank", "0", "0", "COUNT", "2")
    same(p, "XDEL", "s", "7-0", "8-0")
    same(p, "XAUTOCLAIM", "s", "g", "frank", "0", "0", "COUNT", "3", "JUSTID")
    same(p, "XAUTOCLAIM", "s", "g", "frank", "0", "(5-0")
    same(p, "XAUTOCLAIM", "s", "g", "frank", "3600000", "0")
    same_masked(p, "XPENDING", "s", "g", "-", "+", "100")
    same(p, "XPENDING", "s", "g")
    same(p, "XGROUP", "DELCONSUMER", "s", "g", "frank")
    same(p, "XGROUP", "SETID", "s", "g", "0")
    same(p, "XREADGROUP", "GROUP", "g", "gina", "NOACK", "COUNT", "3", "STREAMS", "s", ">")
    same(p, "XREADGROUP", "GROUP", "g", "gina", "STREAMS", "s", "0")
    same(p, "XGROUP", "SETID", "s", "g", "$")
    same(p, "XINFO", "GROUPS", "s")  # no deletions after the groups' positions, no ENTRIESREAD
    same(p, "XGROUP", "DESTROY", "s", "g2")
    same(p, "XINFO", "GROUPS", "s")
    same(p, "XINFO", "GROUPS", "new")


def test_multi_stream_reads(raw_pair: tuple[RawClient, RawClient]) -> None:
    p = raw_pair
    setup_stream(p, "a", 3)
    setup_stream(p, "b", 2)
    same(p, "XGROUP", "CREATE", "a", "g", "0")
    same(p, "XGROUP", "CREATE", "b", "g", "$")
    same(p, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "a", "b", ">", ">")
    same(p, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "b", "a", ">", "0")
    both(p, "XADD", "b", "3-0", "x", "y")
    same(p, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">")
    same(p, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "a", "0", "0")


def test_watch_is_not_touched_by_group_changes(raw_pair: tuple[RawClient, RawClient],
                                               reference: ProcessServer) -> None:
    """Redis does not treat consumer-group changes as key modifications (by design)."""
    p = raw_pair
    setup_stream(p, "s", 3)
    both(p, "XGROUP", "CREATE", "s", "g", "0")
    ports = [p[0].sock.getpeername()[1], p[1].sock.getpeername()[1]]
    others = [RawClient(port, 2) for port in ports]
    try:
        for change in (("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"),
                       ("XACK", "s", "g", "1-0"), ("XGROUP", "SETID", "s", "g", "0"),
                       ("XGROUP", "CREATECONSUMER", "s", "g", "d"),
                       ("XCLAIM", "s", "g", "d", "0", "2-0"),
                       ("XGROUP", "DELCONSUMER", "s", "g", "d"),
                       ("XGROUP", "DESTROY", "s", "g"), ("XGROUP", "CREATE", "s", "g", "0"),
                       ("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")):
            same(p, "WATCH", "s", "t")
            for o in others:
                o.call(*change)
            same(p, "MULTI")
            same(p, "PING")
            same(p, "EXEC")
    finally:
        for o in others:
            o.close()


# -- blocking -----------------------------------------------------------------------------------


def _blocked_count(client: RawClient) -> int:
    info = decoded(client.call("INFO", "clients"))
    text = info.decode() if isinstance(info, bytes) else str(info)
    for line in text.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    return -1


@pytest.mark.timeout(30)
def test_blocking_served_unblocked_and_timed_out(raw_pair: tuple[RawClient, RawClient],
                                                 request: pytest.FixtureRequest) -> None:
    p = raw_pair
    setup_stream(p, "s", 1)
    same(p, "XGROUP", "CREATE", "s", "g", "$")
    ports = [c.sock.getpeername()[1] for c in p]
    proto = request.node.callspec.params["raw_pair"]
    waiters = [RawClient(port, proto) for port in ports]
    try:
        # Served by XADD (the reply names only the stream that got data).
        for w in waiters:
            w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        for c in p:
            wait_until(lambda c=c: _blocked_count(c) == 1, what="a blocked reader")
        same(p, "XADD", "s", "2-0", "k", "v")
        assert waiters[0].read_reply() == waiters[1].read_reply()
        # Timeout: a null array.
        for w in waiters:
            w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "1", "STREAMS", "s", ">")
        assert waiters[0].read_reply() == waiters[1].read_reply()
        # CLIENT UNBLOCK ... TIMEOUT and ERROR.
        for how in ("TIMEOUT", "ERROR"):
            ids = []
            for w in waiters:
                ids.append(decoded(w.call("CLIENT", "ID")))
                w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
            for c in p:
                wait_until(lambda c=c: _blocked_count(c) == 1, what="a blocked reader")
            assert p[0].call("CLIENT", "UNBLOCK", ids[0], how) == \
                p[1].call("CLIENT", "UNBLOCK", ids[1], how)
            assert waiters[0].read_reply() == waiters[1].read_reply()
        # The key deleted, retyped or flushed under a blocked reader: since 7.2 (blocked.c
        # reprocesses the command) the reader gets the command's own NOGROUP / WRONGTYPE,
        # where 7.0 answered "UNBLOCKED the stream key no longer exists".
        expected = {
            "DEL": b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n",
            "SET": b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            "FLUSHALL": b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n",
        }
        for change in (("DEL", "s"), ("SET", "s", "x"), ("FLUSHALL",)):
            both(p, "DEL", "s")
            both(p, "XADD", "s", "9-0", "f", "v")
            both(p, "XGROUP", "CREATE", "s", "g", "$")
            for w in waiters:
                w.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
            for c in p:
                wait_until(lambda c=c: _blocked_count(c) == 1, what="a blocked reader")
            same(p, *change)
            assert waiters[0].read_reply() == waiters[1].read_reply() == expected[change[0]]
        both(p, "DEL", "s")
        setup_stream(p, "s", 1)
        same(p, "XGROUP", "CREATE", "s", "g", "$")
        # History reads never block; MULTI never blocks.
        same(p, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0")
        same(p, "MULTI")
        same(p, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
        same(p, "EXEC")
        # SETID while blocked does not wake the reader; the next XADD serves from the new ID.
        for w in waiters:
            w.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
        for c in p:
            wait_until(lambda c=c: _blocked_count(c) == 1, what="a blocked reader")
        same(p, "XGROUP", "SETID", "s", "g", "0")
        same(p, "XGROUP", "CREATECONSUMER", "s", "g", "other")
        assert _blocked_count(p[0]) == _blocked_count(p[1]) == 1
        same(p, "XADD", "s", "3-0", "k", "w")
        assert waiters[0].read_reply() == waiters[1].read_reply()
    finally:
        for w in waiters:
            w.close()


# -- the command table --------------------------------------------------------------------------

_OURS = ("xreadgroup", "xack", "xpending", "xclaim", "xautoclaim", "xgroup|create",
         "xgroup|setid", "xgroup|destroy", "xgroup|createconsumer", "xgroup|delconsumer",
         "xgroup|help")


def _row(table: dict[bytes, Any], name: str) -> Any:
    parent, _, sub = name.partition("|")
    row = table[parent.encode()]
    return row.subcommands[sub.encode()] if sub else row


def test_table_rows_match_command_info(reference: ProcessServer) -> None:
    """Arity, flags, ACL categories and key specs of our rows, as redis-server reports them."""
    table = load_table()
    r = RawClient(reference.port, 2)
    try:
        for name in _OURS:
            parent, _, sub = name.partition("|")
            theirs = decoded(r.call("COMMAND", "INFO", parent))[0]
            if sub:
                theirs = next(s for s in theirs[9] if s[0] == name.encode())
            arity, flags, cats, specs = theirs[1], theirs[2], theirs[6], theirs[8]
            row = _row(table, name)
            assert row.arity == arity, name
            assert {n for f, n in FLAG_NAMES if row.flags & f} == set(flags), name
            assert {b"@" + n for c, n in CATEGORY_NAMES if row.categories & c} == set(cats), name
            assert len(row.keys) == len(specs), name
            for ks, spec in zip(row.keys, specs, strict=True):
                fields = dict(zip(spec[::2], spec[1::2], strict=True))
                ours = {n.lower() for k, n in KEY_FLAG_NAMES if ks.flags & k}
                assert ours == {f.lower() for f in fields[b"flags"]}, name
                begin = dict(zip(fields[b"begin_search"][::2], fields[b"begin_search"][1::2],
                                 strict=True))
                spec_args = dict(zip(begin[b"spec"][::2], begin[b"spec"][1::2], strict=True))
                if begin[b"type"] == b"index":
                    assert ks.index == spec_args[b"index"], name
                else:
                    assert (ks.keyword.upper(), ks.startfrom) == (
                        spec_args[b"keyword"], spec_args[b"startfrom"]), name
                find = dict(zip(fields[b"find_keys"][::2], fields[b"find_keys"][1::2],
                                strict=True))
                rng = dict(zip(find[b"spec"][::2], find[b"spec"][1::2], strict=True))
                assert (ks.lastkey, ks.step, ks.limit) == (
                    rng[b"lastkey"], rng[b"keystep"], rng[b"limit"]), name
    finally:
        r.close()


# -- random operations --------------------------------------------------------------------------

_CONSUMERS = ("a", "b", "c")
_OPS = st.one_of(
    st.tuples(st.just("XADD"), st.integers(1, 40)),
    st.tuples(st.just("READ"), st.sampled_from(_CONSUMERS), st.integers(-1, 4), st.booleans()),
    st.tuples(st.just("HIST"), st.sampled_from(_CONSUMERS), st.integers(0, 40),
              st.integers(0, 3)),
    st.tuples(st.just("ACK"), st.lists(st.integers(1, 40), min_size=1, max_size=3)),
    st.tuples(st.just("DEL"), st.lists(st.integers(1, 40), min_size=1, max_size=2)),
    st.tuples(st.just("CLAIM"), st.sampled_from(_CONSUMERS),
              st.lists(st.integers(1, 40), min_size=1, max_size=3), st.booleans(),
              st.booleans()),
    st.tuples(st.just("AUTO"), st.sampled_from(_CONSUMERS), st.integers(0, 40),
              st.integers(1, 4), st.booleans()),
    st.tuples(st.just("SETID"), st.integers(0, 40)),
    st.tuples(st.just("DELC"), st.sampled_from(_CONSUMERS)),
    st.tuples(st.just("PEND"),),
)


def _command(op: tuple[Any, ...]) -> tuple[list[str], bool]:
    """(argv, mask idle times) for one random operation."""
    kind = op[0]
    if kind == "XADD":
        return ["XADD", "s", f"{op[1]}-0", "f", str(op[1])], False
    if kind == "READ":
        argv = ["XREADGROUP", "GROUP", "g", op[1], "COUNT", str(op[2])]
        return argv + (["NOACK"] if op[3] else []) + ["STREAMS", "s", ">"], False
    if kind == "HIST":
        return ["XREADGROUP", "GROUP", "g", op[1], "COUNT", str(op[3]), "STREAMS", "s",
                f"{op[2]}-0"], False
    if kind == "ACK":
        return ["XACK", "s", "g", *(f"{i}-0" for i in op[1])], False
    if kind == "DEL":
        return ["XDEL", "s", *(f"{i}-0" for i in op[1])], False
    if kind == "CLAIM":
        argv = ["XCLAIM", "s", "g", op[1], "0", *(f"{i}-0" for i in op[2])]
        return argv + (["FORCE"] if op[3] else []) + (["JUSTID"] if op[4] else []), False
    if kind == "AUTO":
        argv = ["XAUTOCLAIM", "s", "g", op[1], "0", f"{op[2]}-0", "COUNT", str(op[3])]
        return argv + (["JUSTID"] if op[4] else []), False
    if kind == "SETID":
        return ["XGROUP", "SETID", "s", "g", f"{op[1]}-0"], False
    if kind == "DELC":
        return ["XGROUP", "DELCONSUMER", "s", "g", op[1]], False
    return ["XPENDING", "s", "g", "-", "+", "100"], True


@pytest.fixture(scope="module")
def raw_pair_module(sluice: Any, reference: ProcessServer) -> Any:
    a, b = RawClient(sluice.port, 2), RawClient(reference.port, 2)
    yield a, b
    for c in (a, b):
        c.call("FLUSHALL")
        c.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=40))
def test_random_group_operations(raw_pair_module: tuple[RawClient, RawClient],
                                 ops: list[tuple[Any, ...]]) -> None:
    p = raw_pair_module
    both(p, "FLUSHALL")
    both(p, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
    for op in ops:
        argv, mask = _command(op)
        if mask:
            same_masked(p, *argv)
        else:
            same(p, *argv)
    same(p, "XPENDING", "s", "g")
    groups = [decoded(c.call("XINFO", "GROUPS", "s")) for c in p]
    # name, pending, last-delivered-id (entries-read, lag, consumers: see the docstring)
    assert [g[:2] + g[4:8] for g in groups[0]] == [g[:2] + g[4:8] for g in groups[1]]

