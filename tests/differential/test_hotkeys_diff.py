"""HOTKEYS against the reference redis-server 8.6.3, RESP2 and RESP3.

Byte for byte: every error (START's parsing in Redis's order, the session's states, arity,
NOSCRIPT), HELP, the null and OK replies, INFO hotkeys. GET's reply: the same fields in the
same order with the same types, and the same values for everything that does not depend on
time; the NET metric is deterministic, so ``by-net-bytes``, ``total-net-bytes`` and
``net-bytes-all-commands-all-slots`` must be equal, including inside transactions (Redis's
cumulative per-command counters), scripts, blocked commands and CLIENT REPLY OFF/SKIP, and
over generated command sequences. CPU values are timing: compared by shape and order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient, command_counts, wait_until

pytestmark = pytest.mark.differential

START_ERRORS = [
    [], ["METRICS"], ["FOO", "1"], ["COUNT", "1", "METRICS", "1", "CPU"], ["METRICS", "x"],
    ["METRICS", "0"], ["METRICS", "-1"], ["METRICS", "01", "CPU"], ["METRICS", "3", "CPU"],
    ["METRICS", "1"], ["METRICS", "2", "CPU"], ["METRICS", "1", "CPU", "NET"],
    ["METRICS", "1", "GPU"], ["METRICS", "2", "GPU", "NYET"], ["METRICS", "2", "CPU", "CPU"],
    ["METRICS", "2", "net", "NET"], ["METRICS", "2", "NET", "CPU", "CPU"],
    ["METRICS", "1", "CPU", "FOO"], ["METRICS", "1", "CPU", "FOO", "BAR"],
    ["METRICS", "1", "CPU", "COUNT"], ["METRICS", "1", "CPU", "COUNT", "0"],
    ["METRICS", "1", "CPU", "COUNT", "65"], ["METRICS", "1", "CPU", "COUNT", "x"],
    ["METRICS", "1", "CPU", "COUNT", "99999999999999999999"],
    ["METRICS", "1", "CPU", "COUNT", "5", "COUNT", "0"],
    ["METRICS", "1", "CPU", "DURATION", "0"], ["METRICS", "1", "CPU", "DURATION", "-1"],
    ["METRICS", "1", "CPU", "DURATION", "1000001"], ["METRICS", "1", "CPU", "SAMPLE", "0"],
    ["METRICS", "1", "CPU", "SAMPLE", "-1"], ["METRICS", "1", "CPU", "SAMPLE", "x"],
    ["METRICS", "1", "CPU", "SAMPLE", "2147483648"], ["METRICS", "1", "CPU", "SLOTS"],
    ["METRICS", "1", "CPU", "SLOTS", "x"], ["METRICS", "1", "CPU", "SLOTS", "2", "0", "5"],
    ["METRICS", "1", "CPU", "COUNT", "0", "SLOTS", "1", "0"],
    ["METRICS", "1", "CPU", "SLOTS", "1", "0", "COUNT", "0"],
]

SAME_REPLY = [
    ["HOTKEYS"], ["HOTKEYS", "FOO"], ["HOTKEYS", "HELP"], ["hotkeys", "help"],
    ["HOTKEYS", "HELP", "x"], ["HOTKEYS", "GET"], ["HOTKEYS", "GET", "x"], ["HOTKEYS", "STOP"],
    ["HOTKEYS", "STOP", "x"], ["HOTKEYS", "RESET"], ["HOTKEYS", "RESET", "x"],
    ["INFO", "hotkeys"],
    *(["HOTKEYS", "START", *args] for args in START_ERRORS),
    # the session's states
    ["HOTKEYS", "START", "METRICS", "2", "GPU", "CPU"], ["INFO", "hotkeys"],
    ["HOTKEYS", "START", "METRICS", "1", "NET"], ["HOTKEYS", "RESET"],
    ["HOTKEYS", "START", "METRICS", "1", "CPU", "COUNT", "0"],  # "in progress" comes first
    ["HOTKEYS", "STOP"], ["HOTKEYS", "STOP"], ["INFO", "hotkeys"],
    ["HOTKEYS", "START", "metrics", "1", "cpu", "count", "3", "duration", "5", "sample", "1"],
    ["HOTKEYS", "STOP"], ["HOTKEYS", "RESET"], ["HOTKEYS", "RESET"], ["HOTKEYS", "GET"],
    ["INFO", "hotkeys"],
    # not from scripts; queued in MULTI
    ["EVAL", "return redis.call('hotkeys', 'help')", "0"],
    ["EVAL", "return redis.pcall('hotkeys', 'get')", "0"],
    ["MULTI"], ["HOTKEYS", "START", "METRICS", "1", "NET"], ["HOTKEYS", "GET", "x"],
    ["HOTKEYS", "STOP"], ["EXEC"],
    ["MULTI"], ["HOTKEYS", "RESET"], ["HOTKEYS", "HELP"], ["EXEC"], ["HOTKEYS", "GET"],
]


def test_same_replies(hk_pair: tuple[RawClient, RawClient]) -> None:
    ours, theirs = hk_pair
    for command in SAME_REPLY:
        assert ours.call(*command) == theirs.call(*command), command


def test_command_stats(hk_pair: tuple[RawClient, RawClient]) -> None:
    """Rejected (arity) and failed calls per subcommand, as INFO commandstats counts them."""
    ours, theirs = hk_pair
    for c in (ours, theirs):
        c.call("CONFIG", "RESETSTAT")
        for command in SAME_REPLY[:30]:
            c.call(*command)
    a, b = (command_counts(c.sock.getpeername()[1]) for c in (ours, theirs))
    assert {k: v for k, v in a.items() if "hotkeys" in k} == \
        {k: v for k, v in b.items() if "hotkeys" in k}


# -- GET's reply -------------------------------------------------------------------------------


def _parse(buf: bytes, pos: int = 0) -> tuple[Any, int]:
    """One RESP2/RESP3 frame as a tree of (type, value) pairs; returns it and the end."""
    end = buf.index(b"\r\n", pos)
    kind, head = buf[pos:pos + 1], buf[pos + 1:end]
    pos = end + 2
    if kind == b"$":
        n = int(head)
        if n < 0:
            return ("null", None), pos
        return ("$", buf[pos:pos + n]), pos + n + 2
    if kind in (b"*", b"%"):
        n = int(head) * (2 if kind == b"%" else 1)
        items = []
        for _ in range(max(n, 0)):
            item, pos = _parse(buf, pos)
            items.append(item)
        return (kind.decode(), items), pos
    if kind == b"_":
        return ("null", None), pos
    return (kind.decode(), head), pos


TIMING = {b"all-commands-all-slots-us", b"collection-start-time-unix-ms",
          b"collection-duration-ms", b"total-cpu-time-user-ms", b"total-cpu-time-sys-ms"}


def get_fields(client: RawClient) -> list[tuple[bytes, Any]]:
    """HOTKEYS GET's one map: its (name, parsed value) pairs in order (the map's own type,
    ``%`` or a flat ``*``, is checked by the caller through ``_outer``)."""
    tree, _ = _parse(client.call("HOTKEYS", "GET"))
    kind, items = tree
    assert kind == "*" and len(items) == 1
    _, flat = items[0]
    names = [value for kind, value in flat[::2]]
    return list(zip(names, flat[1::2], strict=True))


def _outer(client: RawClient) -> bytes:
    raw = client.call("HOTKEYS", "GET")
    return raw[:raw.index(b"\r\n", 4) + 2]  # "*1\r\n" and the map's header


def _skeleton(value: Any) -> Any:
    """A parsed value with every integer's digits dropped: its shape only."""
    kind, inner = value
    if kind in ("*", "%"):
        return kind, [_skeleton(v) for v in inner]
    return (kind, None) if kind == ":" else value


def compare_get(ours: RawClient, theirs: RawClient) -> dict[bytes, Any]:
    """Same fields, order, types; same values but for time and CPU; returns ours, parsed."""
    a, b = get_fields(ours), get_fields(theirs)
    assert [n for n, _ in a] == [n for n, _ in b]
    assert _outer(ours)[:5] == _outer(theirs)[:5]  # "*1\r\n%" or "*1\r\n*"
    for (name, va), (_, vb) in zip(a, b, strict=True):
        if name in TIMING:
            assert va[0] == vb[0] == ":", name
        elif name == b"by-cpu-time-us":
            assert va[0] == vb[0] == "*"
            assert all(k[0] == "$" and v[0] == ":" for k, v in zip(va[1][::2], va[1][1::2],
                                                                   strict=True))
            counts = [int(v[1]) for v in va[1][1::2]]
            assert counts == sorted(counts, reverse=True)
        elif name == b"by-net-bytes":  # ties may come in either order
            assert _pairs(va) == _pairs(vb)
        else:
            assert va == vb, name
    return dict(a)


def _pairs(value: Any) -> dict[bytes, int]:
    kind, flat = value
    assert kind == "*"
    return {k[1]: int(v[1]) for k, v in zip(flat[::2], flat[1::2], strict=True)}


@pytest.fixture
def hk_pair(raw_pair: tuple[RawClient, RawClient]) -> Iterator[tuple[RawClient, RawClient]]:
    yield raw_pair
    for c in raw_pair:
        c.call("HOTKEYS", "STOP")
        c.call("HOTKEYS", "RESET")


def both(pair: tuple[RawClient, RawClient], *command: Any) -> bytes:
    a, b = (c.call(*command) for c in pair)
    assert a == b, command
    return a


@pytest.mark.parametrize("metrics", [["1", "CPU"], ["1", "NET"], ["2", "NET", "CPU"]])
@pytest.mark.parametrize("sample", [[], ["SAMPLE", "1"]])
def test_get_shape(hk_pair: tuple[RawClient, RawClient], metrics: list[str],
                   sample: list[str]) -> None:
    both(hk_pair, "HOTKEYS", "START", "METRICS", *metrics, *sample, "COUNT", "5")
    for i in range(8):
        both(hk_pair, "SET", f"key:{i}", "v" * (i + 1))  # distinct sizes: no ties at the cut
    both(hk_pair, "GET", "key:7")
    compare_get(*hk_pair)  # while active
    both(hk_pair, "HOTKEYS", "STOP")
    fields = compare_get(*hk_pair)
    assert fields[b"tracking-active"] == (":", b"0")


def test_cpu_ranks_alike(hk_pair: tuple[RawClient, RawClient]) -> None:
    both(hk_pair, "RPUSH", "big", *range(3000))
    both(hk_pair, "SET", "small", "v")
    both(hk_pair, "HOTKEYS", "START", "METRICS", "1", "CPU")
    for _ in range(5):
        for c in hk_pair:
            c.call("LRANGE", "big", "0", "-1")
        both(hk_pair, "GET", "small")
    both(hk_pair, "HOTKEYS", "STOP")
    for c in hk_pair:
        fields = dict(get_fields(c))
        first = fields[b"by-cpu-time-us"][1][0]
        assert first == ("$", b"big")


def test_net_in_special_places(hk_pair: tuple[RawClient, RawClient]) -> None:
    """Blocked commands (served or timed out), CLIENT REPLY OFF/SKIP, STOP and START inside
    a transaction, scripts at the top level and inside EXEC."""
    ours, theirs = hk_pair
    waiters = [RawClient(c.sock.getpeername()[1]) for c in hk_pair]
    try:
        both(hk_pair, "HOTKEYS", "START", "METRICS", "1", "NET", "COUNT", "64")
        for w in waiters:
            w.send("BLPOP", "bl", "0")
        for c in hk_pair:
            port = c.sock.getpeername()[1]
            wait_until(lambda p=port: b"blocked_clients:1" in RawClient(p).call("INFO", "clients"))
        both(hk_pair, "LPUSH", "bl", "hello")
        assert waiters[0].read_reply() == waiters[1].read_reply()
        assert waiters[0].call("BLPOP", "bl2", "0.01") == waiters[1].call("BLPOP", "bl2", "0.01")
        for c in hk_pair:
            c.send("CLIENT", "REPLY", "OFF")
            c.send("SET", "quiet", "1")
            c.send("CLIENT", "REPLY", "ON")
            assert c.read_reply() == b"+OK\r\n"
            c.send("CLIENT", "REPLY", "SKIP")
            c.send("SET", "skipped", "1")
        both(hk_pair, "PING")
        both(hk_pair, "EVAL", "redis.call('set', KEYS[1], 'v'); return redis.call('get', 'x')",
             "1", "script")
        both(hk_pair, "MULTI")
        both(hk_pair, "SET", "m1", "x")
        both(hk_pair, "EVAL", "redis.call('set', KEYS[1], 'value2'); return redis.call('get', "
             "KEYS[1])", "1", "evk")
        both(hk_pair, "HOTKEYS", "STOP")
        both(hk_pair, "SET", "m2", "y")
        both(hk_pair, "EXEC")
        compare_get(ours, theirs)
        both(hk_pair, "HOTKEYS", "RESET")
        both(hk_pair, "MULTI")
        both(hk_pair, "SET", "m1", "x")
        both(hk_pair, "HOTKEYS", "START", "METRICS", "1", "NET")
        both(hk_pair, "SET", "m2", "y")
        both(hk_pair, "GET", "m2")
        both(hk_pair, "EXEC")
        fields = compare_get(ours, theirs)
        assert set(_pairs(fields[b"by-net-bytes"])) == {b"m2"}
    finally:
        for w in waiters:
            w.close()


# -- generated sequences: the NET metric must agree exactly ---------------------------------

KEYS = st.sampled_from(["a", "b", "c", "h", "l", "s", "{t}x", "{t}y"])
VALUES = st.sampled_from(["1", "22", "hello", "x" * 40, "-5"])
SIMPLE = st.one_of(
    st.tuples(st.just("SET"), KEYS, VALUES),
    st.tuples(st.just("GET"), KEYS),
    st.tuples(st.just("INCR"), KEYS),
    st.tuples(st.just("APPEND"), KEYS, VALUES),
    st.tuples(st.just("DEL"), KEYS, KEYS),
    st.tuples(st.just("EXISTS"), KEYS, KEYS, KEYS),
    st.tuples(st.just("MSET"), KEYS, VALUES, KEYS, VALUES),
    st.tuples(st.just("MGET"), KEYS, KEYS),
    st.tuples(st.just("RPUSH"), KEYS, VALUES, VALUES),
    st.tuples(st.just("LRANGE"), KEYS, st.just("0"), st.just("-1")),
    st.tuples(st.just("HSET"), KEYS, VALUES, VALUES),
    st.tuples(st.just("HGETALL"), KEYS),
    st.tuples(st.just("SADD"), KEYS, VALUES),
    st.tuples(st.just("SMEMBERS"), KEYS),
    st.tuples(st.just("TYPE"), KEYS),
    st.tuples(st.just("PING")),
    st.tuples(st.just("EVAL"), st.just("return redis.call('get', KEYS[1])"), st.just("1"),
              KEYS),
    st.tuples(st.just("EVAL"), st.just("redis.call('set', KEYS[1], ARGV[1]) return 1"),
              st.just("1"), KEYS, VALUES),
)
STEP = st.one_of(SIMPLE.map(lambda c: [c]),
                 st.lists(SIMPLE, min_size=1, max_size=4).map(
                     lambda cs: [("MULTI",), *cs, ("EXEC",)]))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(STEP, min_size=1, max_size=8))
def test_generated_sequences_count_the_same_bytes(hk_pair: tuple[RawClient, RawClient],
                                                  steps: list[list[tuple[str, ...]]]) -> None:
    ours, theirs = hk_pair
    both(hk_pair, "FLUSHALL")
    both(hk_pair, "HOTKEYS", "START", "METRICS", "2", "CPU", "NET", "COUNT", "64")
    for step in steps:
        for command in step:
            both(hk_pair, *command)
    both(hk_pair, "HOTKEYS", "STOP")
    compare_get(ours, theirs)
    both(hk_pair, "HOTKEYS", "RESET")
