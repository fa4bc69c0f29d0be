"""WAIT, WAITAOF, min-replicas-to-write and the replication settings against redis-server 8.6.3,
which here is what Sluice always is: a master with no replicas.

Byte-for-byte replies (RESP2 and RESP3): the argument errors in Redis's order, the immediate
answers, timeouts, scripts and transactions (which never block), NOREPLICAS in commands,
MULTI and scripts, COMMAND INFO / DOCS of both commands; with the AOF on under ``always`` and
``no``, WAITAOF's local count and how far ``master_repl_offset`` moves for plain writes,
transactions and scripts (Redis counts one per propagated command, MULTI and EXEC included,
and logs a transaction of one write bare).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hiredis
import pytest

from tests.support import ProcessServer, RawClient, require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(60)]

CASES = [
    ["WAIT", "0", "0"],
    ["WAIT", "-1", "0"],
    ["WAIT", "1", "-1"],
    ["WAIT", "x", "0"],
    ["WAIT", "1", "x"],
    ["WAIT", "1", "1.5"],
    ["WAIT", "2", "9223372036854775808"],
    ["WAIT", "2", "9223372036854775807"],
    ["WAIT", "1", "20"],
    ["WAIT", "1"],
    ["WAITAOF", "0", "0", "0"],
    ["WAITAOF", "1", "0", "0"],
    ["WAITAOF", "2", "0", "0"],
    ["WAITAOF", "-1", "0", "0"],
    ["WAITAOF", "x", "0", "0"],
    ["WAITAOF", "0", "-1", "0"],
    ["WAITAOF", "0", "x", "0"],
    ["WAITAOF", "0", "0", "-1"],
    ["WAITAOF", "1", "0", "-1"],
    ["WAITAOF", "0", "1", "20"],
    ["WAITAOF", "0", "0"],
    ["EVAL", "return redis.pcall('wait', '1', '0')", "0"],
    ["EVAL", "return redis.pcall('waitaof', '0', '1', '0')", "0"],
    ["EVAL", "return redis.pcall('waitaof', '1', '0', '0')", "0"],
    ["COMMAND", "INFO", "wait", "waitaof"],
    ["CONFIG", "SET", "repl-backlog-size", "0"],
    ["CONFIG", "SET", "min-replicas-to-write", "-1"],
]


@pytest.mark.parametrize("cmd", CASES, ids=[" ".join(c) for c in CASES])
def test_same_reply(raw_pair: tuple[RawClient, RawClient], cmd: list[str]) -> None:
    ours, theirs = raw_pair
    assert ours.call(*cmd) == theirs.call(*cmd)


def _pairs(reply: bytes) -> list[tuple[Any, Any]]:
    reader = hiredis.Reader()
    reader.feed(reply)
    value = reader.gets()
    flat = [x for kv in value.items() for x in kv] if isinstance(value, dict) else value
    return sorted(zip(flat[::2], flat[1::2], strict=True))


@pytest.mark.parametrize("pattern", ["min-*", "repl-backlog-*", "min-slaves-*"])
def test_config_get(raw_pair: tuple[RawClient, RawClient], pattern: str) -> None:
    """The same settings and aliases (Redis lists them in its dict's order: compared sorted)."""
    ours, theirs = (c.call("CONFIG", "GET", pattern) for c in raw_pair)
    assert _pairs(ours) == _pairs(theirs)


def _no_display_text(value: Any) -> Any:
    """COMMAND DOCS without the arguments' display_text, which Sluice does not generate for
    any command (docs.py)."""
    if isinstance(value, list):
        if b"display_text" in value[::2]:
            i = value.index(b"display_text")
            value = value[:i] + value[i + 2:]
        return [_no_display_text(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_display_text(v) for k, v in value.items() if k != b"display_text"}
    return value


def test_command_docs(raw_pair: tuple[RawClient, RawClient]) -> None:
    docs = []
    for c in raw_pair:
        reader = hiredis.Reader()
        reader.feed(c.call("COMMAND", "DOCS", "wait", "waitaof"))
        docs.append(_no_display_text(reader.gets()))
    assert docs[0] == docs[1]


def test_transactions_do_not_block(raw_pair: tuple[RawClient, RawClient]) -> None:
    for c in raw_pair:
        c.send("MULTI")
        c.send("WAIT", "1", "0")
        c.send("WAITAOF", "0", "1", "0")
        c.send("WAITAOF", "1", "0", "0")  # an error inside EXEC, not a queueing error
        c.send("EXEC")
    ours, theirs = (c.read_replies(5) for c in raw_pair)
    assert ours == theirs


def _replication(client: RawClient) -> dict[str, str]:
    text = client.call("INFO", "replication").decode()
    text = text[text.index("\n") + 1:] if text.startswith(("$", "=")) else text
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    for volatile in ("master_replid", "txt"):  # a random id; RESP3's verbatim prefix
        fields.pop(volatile, None)
    return fields


def test_min_replicas_to_write(raw_pair: tuple[RawClient, RawClient]) -> None:
    script_ro = "#!lua flags=no-writes\nreturn redis.call('get', 'x')"
    steps: list[list[str]] = [
        ["SET", "x", "v"],
        ["CONFIG", "SET", "min-replicas-to-write", "1"],
        ["SET", "x", "w"],
        ["GET", "x"],
        ["INCR", "n"],
        ["EVAL", script_ro, "1", "x"],
        ["EVAL", "return redis.call('get', 'x')", "1", "x"],
        ["EVAL", "#!lua\nreturn redis.call('get', 'x')", "1", "x"],
        ["EVAL", "return redis.call('set', 'x', 1)", "1", "x"],
        ["EVAL", "return redis.pcall('set', 'x', 1)", "1", "x"],
        ["MULTI"], ["GET", "x"], ["SET", "x", "1"], ["EXEC"],
        ["MULTI"], ["GET", "x"], ["EXEC"],
        ["CONFIG", "SET", "min-replicas-max-lag", "0"],
        ["SET", "x", "y"],
    ]
    try:
        for argv in steps:
            ours, theirs = (c.call(*argv) for c in raw_pair)
            assert ours == theirs, argv
            if argv[:3] == ["CONFIG", "SET", "min-replicas-to-write"]:
                assert _replication(raw_pair[0]) == _replication(raw_pair[1])
    finally:
        for c in raw_pair:
            c.call("CONFIG", "SET", "min-replicas-to-write", "0", "min-replicas-max-lag", "10")
    assert _replication(raw_pair[0]) == _replication(raw_pair[1])


@pytest.fixture(scope="module")
def aof_pair() -> Iterator[tuple[RawClient, RawClient]]:
    """Sluice and redis-server with the AOF on (``always``), each in its own directory."""
    require_redis_server()
    args = ["--appendonly", "yes", "--appendfsync", "always"]
    ours = ProcessServer("sluice", args).start()
    theirs = ProcessServer("redis", args).start()
    a, b = RawClient(ours.port), RawClient(theirs.port)
    yield a, b
    for c in (a, b):
        c.close()
    ours.stop()
    theirs.stop()


def _offset(c: RawClient) -> int:
    return int(_replication(c)["master_repl_offset"])


def _both(pair: tuple[RawClient, RawClient], *argv: str) -> list[Any]:
    ours, theirs = (c.call(*argv) for c in pair)
    assert ours == theirs, argv
    return [ours]


def test_waitaof_and_the_offset_with_the_aof_on(aof_pair: tuple[RawClient, RawClient]) -> None:
    base = [_offset(c) for c in aof_pair]
    sequence: list[list[str]] = [
        ["WAITAOF", "1", "0", "0"],
        ["INCR", "n"],
        ["WAITAOF", "1", "0", "0"],
        ["GET", "n"],
        ["WAITAOF", "1", "1", "20"],
        ["EVAL", "redis.call('incr', 'a'); redis.call('incr', 'b')", "0"],
        ["EVAL", "redis.call('incr', 'a')", "0"],
        ["EVAL", "return redis.pcall('waitaof', '1', '0', '0')", "0"],
        ["SETNX", "n", "1"],  # changes nothing: not logged
        ["WAITAOF", "1", "0", "0"],
        ["CONFIG", "SET", "appendfsync", "no"],
        ["INCR", "n"],
        ["WAITAOF", "1", "0", "30"],  # no fsync comes: the timeout, 0 local copies
        ["WAITAOF", "0", "0", "0"],
        ["CONFIG", "SET", "appendfsync", "always"],
    ]
    for argv in sequence:
        _both(aof_pair, *argv)
    for multi in (["INCR", "a"], ["INCR", "a", "INCR", "b"], ["GET", "a"]):
        for c in aof_pair:
            c.send("MULTI")
            for i in range(0, len(multi), 2):
                c.send(*multi[i:i + 2])
            c.send("WAITAOF", "1", "0", "0")
            c.send("EXEC")
        n = 3 + len(multi) // 2
        ours, theirs = (c.read_replies(n) for c in aof_pair)
        assert ours == theirs, multi
    moved = [_offset(c) - b for c, b in zip(aof_pair, base, strict=True)]
    assert moved[0] == moved[1] > 0
