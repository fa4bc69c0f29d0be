"""Lists against a real redis-server: the same commands, the exact same reply bytes.

Three kinds of checks, each in RESP2 and RESP3:

* fixed command sequences covering every list command, option and error path;
* blocking scenarios driven identically on both servers (several raw connections, waiting
  on ``INFO clients: blocked_clients`` before each trigger) and compared reply by reply;
* a hypothesis-generated sequence of list commands over a few keys.

Where Redis 7.0.15 (the installed reference) relies on C overflow (huge timeouts, RANK
-2^63) Sluice follows Redis 7.2+; those inputs are left out here and tested in the unit tests.
The table's metadata (arity, flags, key range, ACL categories) is compared with the reference's
``COMMAND INFO`` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hiredis
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.commands import load_table
from sluice.commands.spec import CATEGORY_NAMES, FLAG_NAMES
from tests.integration.test_blocking import Conn
from tests.support import RawClient, wait_blocked

pytestmark = [pytest.mark.differential, pytest.mark.timeout(60)]

LIST_COMMANDS = ("lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "llen", "lrange",
                 "lindex", "lset", "lrem", "ltrim", "linsert", "lpos", "lmove", "rpoplpush",
                 "lmpop", "blpop", "brpop", "blmove", "brpoplpush", "blmpop")

Seq = list[tuple[Any, ...]]

SEQUENCES: dict[str, Seq] = {
    "push_pop": [
        ("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "x", "y"), ("LRANGE", "l", 0, -1),
        ("LLEN", "l"), ("LPOP", "l"), ("RPOP", "l"), ("LPOP", "l", 2), ("RPOP", "l", 10),
        ("EXISTS", "l"), ("LPOP", "l"), ("RPOP", "l"), ("LLEN", "l"), ("TYPE", "l"),
        ("RPUSH", "n", "1", "-2", "3.5", "007", "", "9223372036854775808"),
        ("LRANGE", "n", 0, -1), ("OBJECT", "ENCODING", "n"), ("TYPE", "n"),
    ],
    "pop_count_forms": [
        ("RPUSH", "l", "a", "b"), ("LPOP", "l", 0), ("RPOP", "l", "0"), ("LPOP", "missing", 0),
        ("LPOP", "missing", 1), ("RPOP", "missing", 3), ("LPOP", "missing"),
        ("LPOP", "l", -1), ("LPOP", "l", "abc"), ("LPOP", "l", "01"), ("LPOP", "l", 1, 2),
        ("RPOP", "l", "9223372036854775807"), ("RPOP", "l", "9223372036854775808"),
        ("LPOP", "missing", -1), ("LPOP", "l", " 1"),
    ],
    "pushx": [
        ("LPUSHX", "m", "a"), ("RPUSHX", "m", "a", "b"), ("EXISTS", "m"), ("RPUSH", "m", "z"),
        ("LPUSHX", "m", "a", "b"), ("RPUSHX", "m", "c"), ("LRANGE", "m", 0, -1),
    ],
    "ranges_and_trim": [
        ("RPUSH", "l", *range(10)), ("LRANGE", "l", 0, 0), ("LRANGE", "l", -3, -1),
        ("LRANGE", "l", -100, 100), ("LRANGE", "l", 5, 2), ("LRANGE", "l", 10, 20),
        ("LRANGE", "l", 0, -11), ("LRANGE", "l", -11, -10), ("LRANGE", "l", "a", 1),
        ("LRANGE", "l", 0, "99999999999999999999"), ("LRANGE", "missing", "x", 1),
        ("LRANGE", "missing", 0, -1), ("LTRIM", "l", 1, -2), ("LRANGE", "l", 0, -1),
        ("LTRIM", "l", -3, 100), ("LRANGE", "l", 0, -1), ("LTRIM", "l", "x", 1),
        ("LTRIM", "missing", 0, 1), ("LTRIM", "l", 2, 1), ("EXISTS", "l"),
    ],
    "index_and_set": [
        ("LINDEX", "missing", "abc"), ("LINDEX", "missing", 0), ("RPUSH", "l", "a", "b", "c"),
        ("LINDEX", "l", "abc"), ("LINDEX", "l", 0), ("LINDEX", "l", -1), ("LINDEX", "l", 3),
        ("LINDEX", "l", -4), ("LSET", "missing", 0, "x"), ("LSET", "missing", "abc", "x"),
        ("LSET", "l", "abc", "x"), ("LSET", "l", 3, "x"), ("LSET", "l", -3, "A"),
        ("LSET", "l", 2, "C"), ("LRANGE", "l", 0, -1),
    ],
    "lrem": [
        ("LREM", "missing", "abc", "x"), ("LREM", "missing", 0, "x"),
        ("RPUSH", "l", "a", "b", "a", "c", "a", "b"), ("LREM", "l", "x", "a"),
        ("LREM", "l", -1, "a"), ("LRANGE", "l", 0, -1), ("LREM", "l", 1, "b"),
        ("LRANGE", "l", 0, -1), ("LREM", "l", 0, "a"), ("LREM", "l", 0, "zzz"),
        ("LRANGE", "l", 0, -1), ("LREM", "l", 5, "c"), ("LREM", "l", -5, "b"), ("EXISTS", "l"),
    ],
    "linsert": [
        ("LINSERT", "missing", "BEFORE", "a", "b"), ("LINSERT", "missing", "MIDDLE", "a", "b"),
        ("RPUSH", "l", "a", "p", "b", "p"), ("LINSERT", "l", "MIDDLE", "a", "b"),
        ("LINSERT", "l", "before", "p", "X"), ("LINSERT", "l", "AFTER", "p", "Y"),
        ("LINSERT", "l", "after", "nope", "Z"), ("LRANGE", "l", 0, -1),
    ],
    "lpos": [
        ("LPOS", "missing", "x"), ("LPOS", "missing", "x", "COUNT", 0),
        ("LPOS", "missing", "x", "RANK", 0),
        ("RPUSH", "l", "a", "b", "c", "d", "1", "2", "3", "4", "3", "3", "3"),
        ("LPOS", "l", "3"), ("LPOS", "l", "3", "COUNT", 0, "RANK", 2), ("LPOS", "l", "3", "RANK", -1),
        ("LPOS", "l", "3", "RANK", -2, "COUNT", 2), ("LPOS", "l", "3", "MAXLEN", 6),
        ("LPOS", "l", "3", "MAXLEN", 7, "COUNT", 0), ("LPOS", "l", "3", "RANK", -1, "MAXLEN", 2),
        ("LPOS", "l", "3", "RANK", 5), ("LPOS", "l", "3", "RANK", 5, "COUNT", 1),
        ("LPOS", "l", "zz", "COUNT", 3), ("LPOS", "l", "3", "rank", "2", "count", "1"),
        ("LPOS", "l", "3", "RANK", 0), ("LPOS", "l", "3", "RANK", "x"),
        ("LPOS", "l", "3", "COUNT", -1), ("LPOS", "l", "3", "COUNT", "x"),
        ("LPOS", "l", "3", "MAXLEN", -1), ("LPOS", "l", "3", "MAXLEN", "x"),
        ("LPOS", "l", "3", "RANK"), ("LPOS", "l", "3", "FOO", 1), ("LPOS", "l", "3", "COUNT"),
        ("LPOS", "l", "3", "RANK", 1, "RANK", -1), ("LPOS", "l", "3", "RANK", "9223372036854775807"),
    ],
    "lmove_rpoplpush": [
        ("RPUSH", "l", "one", "two", "three"), ("LMOVE", "l", "d", "RIGHT", "LEFT"),
        ("LMOVE", "l", "d", "left", "right"), ("LMOVE", "l", "d", "UP", "LEFT"),
        ("LMOVE", "missing", "d", "UP", "LEFT"), ("LMOVE", "missing", "d", "LEFT", "LEFT"),
        ("LMOVE", "d", "d", "LEFT", "RIGHT"), ("LRANGE", "d", 0, -1), ("RPOPLPUSH", "d", "d"),
        ("LRANGE", "d", 0, -1), ("RPOPLPUSH", "l", "new"), ("EXISTS", "l"),
        ("RPOPLPUSH", "l", "new"), ("LRANGE", "new", 0, -1),
    ],
    "lmpop": [
        ("LMPOP", 0, "k", "LEFT"), ("LMPOP", "abc", "k", "LEFT"), ("LMPOP", -1, "k", "LEFT"),
        ("LMPOP", 2, "a", "b"), ("LMPOP", 1, "k", "UP"), ("LMPOP", 1, "k", "LEFT", "COUNT", 0),
        ("LMPOP", 1, "k", "LEFT", "COUNT", "x"), ("LMPOP", 1, "k", "LEFT", "COUNT", 1, "COUNT", 2),
        ("LMPOP", 1, "k", "LEFT", "COUNT"), ("LMPOP", 1, "k", "LEFT", "extra"),
        ("LMPOP", "9223372036854775807", "k", "LEFT"), ("LMPOP", 2, "non1", "non2", "LEFT"),
        ("RPUSH", "a", 1, 2, 3), ("RPUSH", "b", 4, 5), ("LMPOP", 2, "x", "b", "LEFT"),
        ("LMPOP", 3, "x", "a", "b", "RIGHT", "COUNT", 2), ("LMPOP", 2, "a", "b", "left", "count", 9),
        ("LMPOP", 2, "a", "b", "LEFT"), ("LMPOP", 2, "a", "b", "LEFT"),
    ],
    "blocking_with_data_and_errors": [
        ("RPUSH", "l", "a", "b", "c", "d", "e"), ("BLPOP", "none", "l", 0), ("BRPOP", "l", "0.5"),
        ("BLMOVE", "l", "d", "LEFT", "RIGHT", 0), ("BRPOPLPUSH", "l", "d", 0),
        ("BLMPOP", 0, 2, "none", "l", "LEFT", "COUNT", 5), ("EXISTS", "l"), ("LRANGE", "d", 0, -1),
        ("BLPOP", "k", "abc"), ("BLPOP", "k", -1), ("BLPOP", "k", " 1"), ("BLPOP", "k", "1e"),
        ("BLPOP", "k", "nan"), ("BLPOP", "k", ""), ("BLPOP", "k", "-0.002"),
        ("BRPOPLPUSH", "a", "b", -1), ("BLMOVE", "a", "b", "LEFT", "UP", "abc"),
        ("BLMOVE", "a", "b", "LEFT", "LEFT", "abc"), ("BLMPOP", "abc", 1, "k", "LEFT"),
        ("BLMPOP", "abc", 0, "k", "LEFT"), ("BLMPOP", 0, 1, "k", "UP"),
        ("BLMPOP", "-1", 1, "k", "LEFT", "COUNT", 0), ("BLMPOP", "-1", 1, "k", "LEFT"),
    ],
    "wrong_type": [
        ("SET", "s", "x"), ("LPUSH", "s", "a"), ("RPUSHX", "s", "a"), ("LPOP", "s"),
        ("RPOP", "s", 2), ("LLEN", "s"), ("LRANGE", "s", 0, 1), ("LRANGE", "s", "x", 1),
        ("LINDEX", "s", "x"), ("LSET", "s", "x", "y"), ("LREM", "s", 0, "x"), ("LTRIM", "s", 0, 1),
        ("LINSERT", "s", "BEFORE", "a", "b"), ("LPOS", "s", "x"), ("LPOS", "s", "x", "RANK", 0),
        ("LMOVE", "s", "d", "LEFT", "LEFT"), ("RPUSH", "l", "v"), ("LMOVE", "l", "s", "LEFT", "LEFT"),
        ("LRANGE", "l", 0, -1), ("LMPOP", 2, "none", "s", "LEFT"), ("BLPOP", "none", "s", 0),
        ("BLPOP", "l", "s", 0), ("BRPOPLPUSH", "s", "d", 0), ("BLMPOP", 0, 1, "s", "LEFT"),
        ("RPUSH", "l", "v"), ("BLMOVE", "l", "s", "LEFT", "LEFT", 0), ("LLEN", "l"),
    ],
    "arity": [
        ("LPUSH", "k"), ("RPUSHX", "k"), ("LPOP",), ("LLEN",), ("LLEN", "a", "b"),
        ("LRANGE", "k", 0), ("LINDEX", "k"), ("LSET", "k", 0), ("LREM", "k", 0),
        ("LTRIM", "k", 0), ("LINSERT", "k", "BEFORE", "a"), ("LPOS", "k"), ("LMOVE", "a", "b", "LEFT"),
        ("RPOPLPUSH", "a"), ("LMPOP", 1, "k"), ("BLPOP", "k"), ("BRPOP",), ("BLMOVE", "a", "b", "LEFT", "LEFT"),
        ("BRPOPLPUSH", "a", "b"), ("BLMPOP", 0, 1, "k"),
    ],
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_sequence(raw_pair: tuple[Any, Any], name: str) -> None:
    ours, theirs = raw_pair
    for argv in SEQUENCES[name]:
        assert ours.call(*argv) == theirs.call(*argv), argv


def test_command_info_matches(reference: Any) -> None:
    """Arity, flags, first/last/step and ACL categories as redis-server's COMMAND INFO."""
    table = load_table()
    raw = RawClient(reference.port)
    reader = hiredis.Reader()
    reader.feed(raw.call("COMMAND", "INFO", *LIST_COMMANDS))
    raw.close()
    for name, arity, flags, first, last, step, categories, *_ in reader.gets():
        ours = table[name]
        assert ours.arity == arity, name
        assert sorted(n for f, n in FLAG_NAMES if ours.flags & f) == sorted(flags), name
        assert ours.legacy_range() == (first, last, step), name
        ours_categories = sorted(b"@" + n for c, n in CATEGORY_NAMES if ours.categories & c)
        assert ours_categories == sorted(categories), name


# -- blocking scenarios, driven the same way on both servers -------------------------------

Scenario = Callable[[Callable[[], Conn], redis.Redis], list[bytes]]


def _pipeline_llen(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    waiter, pusher = conn(), conn()
    waiter.send(("BLPOP", "k", 0), ("LLEN", "k2"), ("PING",))
    wait_blocked(ctl, 1)
    pusher.send(("LPUSH", "k", "a"), ("LLEN", "k"), ("LPUSH", "k", "b"), ("LLEN", "k"))
    return pusher.read_many(4) + waiter.read_many(3) + [pusher.call("LRANGE", "k", 0, -1)]


def _three_waiters(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    waiters = [conn() for _ in range(3)]
    for i, w in enumerate(waiters):
        w.send(("BLPOP", "q", 0))
        wait_blocked(ctl, i + 1)
    out = [conn().call("LPUSH", "q", "a", "b", "c")]
    return out + [w.read() for w in waiters]


def _multi(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    c, waiter = conn(), conn()
    c.send(("MULTI",), ("BLPOP", "none", 0), ("BRPOP", "none", 0), ("BRPOPLPUSH", "none", "x", 0),
           ("BLMPOP", 0, 1, "none", "LEFT"), ("BLMOVE", "none", "x", "LEFT", "LEFT", 0), ("EXEC",))
    out = c.read_many(7)
    waiter.send(("BLPOP", "m", 0))
    wait_blocked(ctl, 1)
    c.send(("MULTI",), ("LPUSH", "m", "x"), ("LLEN", "m"), ("EXEC",), ("LLEN", "m"))
    return out + c.read_many(5) + [waiter.read()]


def _type_changes(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    first, second, other = conn(), conn(), conn()
    first.send(("BLPOP", "k", 0))
    wait_blocked(ctl, 1)
    out = [other.call(*argv) for argv in (("SET", "k", "s"), ("DEL", "k"), ("SET", "k", "t"),
                                          ("FLUSHALL",), ("MULTI",), ("RPUSH", "k", "gone"),
                                          ("DEL", "k"), ("EXEC",))]
    wait_blocked(ctl, 1)
    second.send(("BLPOP", "k", 0))
    wait_blocked(ctl, 2)
    out.append(other.call("RPUSH", "k", "one", "two"))
    return out + [first.read(), second.read()]


def _blmove_chain(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    mover, popper, bad = conn(), conn(), conn()
    mover.send(("BLMOVE", "src", "dst", "RIGHT", "LEFT", 0))
    wait_blocked(ctl, 1)
    popper.send(("BLPOP", "dst", 0))
    wait_blocked(ctl, 2)
    other = conn()
    out = [other.call("RPUSH", "src", "v"), mover.read(), popper.read(),
           other.call("EXISTS", "src", "dst"), other.call("SET", "str", "x")]
    bad.send(("BRPOPLPUSH", "src", "str", 0))
    wait_blocked(ctl, 1)
    return out + [other.call("RPUSH", "src", "w"), bad.read(), other.call("LRANGE", "src", 0, -1)]


def _unblock(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    out = []
    control = conn()
    for argv in (("BLPOP", "k", 0), ("BRPOP", "k", "k2", 0), ("BLMOVE", "k", "d", "LEFT", "LEFT", 0),
                 ("BRPOPLPUSH", "k", "d", 0), ("BLMPOP", 0, 1, "k", "LEFT", "COUNT", 3)):
        for mode in ("TIMEOUT", "ERROR", None):
            c = conn()
            cid = c.client_id()
            c.send(argv, ("ECHO", "next"))
            wait_blocked(ctl, 1)
            unblock = ("CLIENT", "UNBLOCK", cid) + ((mode,) if mode else ())
            out += [control.call(*unblock), *c.read_many(2), control.call(*unblock)]
            wait_blocked(ctl, 0)
    out.append(control.call("CLIENT", "UNBLOCK", cid, "SOMETIMES"))
    return out


def _timeouts(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    c = conn()
    return [c.call(*argv) for argv in (
        ("BLPOP", "k", "0.01"), ("BRPOP", "k", "0.001"), ("BLMOVE", "k", "d", "LEFT", "LEFT", "0.01"),
        ("BRPOPLPUSH", "k", "d", ".01"), ("BLMPOP", "0.01", 1, "k", "LEFT"), ("BLPOP", "k", "1e-9"),
    )]


def _served_forms(conn: Callable[[], Conn], ctl: redis.Redis) -> list[bytes]:
    waiters = [conn() for _ in range(3)]
    for i, argv in enumerate((("BLMPOP", 0, 2, "a", "b", "RIGHT", "COUNT", 2),
                              ("BRPOP", "a", "b", 0), ("BLMPOP", 0, 1, "b", "LEFT"))):
        waiters[i].send(argv)
        wait_blocked(ctl, i + 1)
    other = conn()
    return [other.call("RPUSH", "b", 1, 2, 3, 4), *[w.read() for w in waiters],
            other.call("EXISTS", "b")]


SCENARIOS: dict[str, Scenario] = {
    "pipeline_llen": _pipeline_llen, "three_waiters": _three_waiters, "multi": _multi,
    "type_changes": _type_changes, "blmove_chain": _blmove_chain, "unblock": _unblock,
    "timeouts": _timeouts, "served_forms": _served_forms,
}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_blocking_scenario(sluice: Any, reference: Any, name: str, protocol: int) -> None:
    results = []
    for port in (sluice.port, reference.port):
        ctl = redis.Redis(port=port, socket_timeout=15)
        ctl.flushall()
        made: list[Conn] = []

        def conn(port: int = port, made: list[Conn] = made) -> Conn:
            c = Conn(port, protocol)
            made.append(c)
            return c

        try:
            results.append(SCENARIOS[name](conn, ctl))
        finally:
            for c in made:
                c.close()
            wait_blocked(ctl, 0)
            ctl.flushall()
            ctl.close()
    ours, theirs = results
    assert ours == theirs


# -- random sequences ----------------------------------------------------------------------

_keys = st.sampled_from(["a", "b", "s"])
_vals = st.sampled_from(["x", "y", "z", "1", ""])
_idx = st.integers(-4, 4).map(str)
_where = st.sampled_from(["LEFT", "RIGHT"])
_command = st.one_of(
    st.tuples(st.sampled_from(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), _keys, _vals, _vals),
    st.tuples(st.sampled_from(["LPOP", "RPOP"]), _keys),
    st.tuples(st.sampled_from(["LPOP", "RPOP"]), _keys, st.integers(0, 3).map(str)),
    st.tuples(st.just("LRANGE"), _keys, _idx, _idx),
    st.tuples(st.just("LTRIM"), _keys, _idx, _idx),
    st.tuples(st.just("LINDEX"), _keys, _idx),
    st.tuples(st.just("LSET"), _keys, _idx, _vals),
    st.tuples(st.just("LREM"), _keys, _idx, _vals),
    st.tuples(st.just("LINSERT"), _keys, st.sampled_from(["BEFORE", "AFTER"]), _vals, _vals),
    st.tuples(st.just("LPOS"), _keys, _vals, st.just("RANK"), st.sampled_from(["1", "2", "-1"]),
              st.just("COUNT"), st.sampled_from(["0", "1", "2"])),
    st.tuples(st.just("LMOVE"), _keys, _keys, _where, _where),
    st.tuples(st.just("LMPOP"), st.just("2"), _keys, _keys, _where, st.just("COUNT"),
              st.sampled_from(["1", "3"])),
    st.tuples(st.just("BLPOP"), _keys, _keys, st.just("0.001")),
    st.tuples(st.just("LLEN"), _keys),
    st.tuples(st.just("SET"), st.just("s"), _vals),
)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_command, min_size=5, max_size=25))
def test_random_sequences(raw_pair: tuple[Any, Any], commands: list[tuple[str, ...]]) -> None:
    ours, theirs = raw_pair
    for c in (ours, theirs):
        c.call("FLUSHALL")
    for argv in commands:
        assert ours.call(*argv) == theirs.call(*argv), argv
    for key in ("a", "b"):
        assert ours.call("LRANGE", key, 0, -1) == theirs.call("LRANGE", key, 0, -1)
