"""Connection commands: byte-for-byte the same replies as redis-server."""

from __future__ import annotations

import pytest

CASES = [
    ["PING"],
    ["PING", "hello"],
    ["PING", "a", "b"],
    ["ECHO", "x"],
    ["ECHO"],
    ["SELECT", "16"],
    ["SELECT", "abc"],
    ["SELECT", "01"],
    ["NOSUCHCOMMAND", "a", "b"],
    ["CLIENT", "NOSUCH"],
    ["CLIENT", "GETNAME"],
    ["CLIENT", "SETNAME", "bad name"],
    ["HELLO", "4"],
    ["HELLO", "x"],
]


@pytest.mark.differential
@pytest.mark.parametrize("cmd", CASES, ids=[" ".join(c) for c in CASES])
def test_same_reply(raw_pair, cmd: list[str]) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = raw_pair
    assert ours.call(*cmd) == theirs.call(*cmd)
