"""COMMAND and its subcommands over a real socket, RESP2 and RESP3."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hiredis
import pytest
import redis

from sluice.commands.errors import (
    INVALID_ARGUMENTS,
    INVALID_COMMAND,
    INVALID_NUMBER_OF_ARGUMENTS,
    NO_KEY_ARGUMENTS,
)
from tests.support import RawClient


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def raw(request: pytest.FixtureRequest, sluice: Any) -> Iterator[RawClient]:
    client = RawClient(sluice.port, request.param)
    client.protocol = request.param  # type: ignore[attr-defined]
    yield client
    client.close()


def call(r: redis.Redis, *args: Any) -> Any:
    """A command without redis-py's reply callbacks (its COMMAND parser expects COMMAND INFO)."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        reply = conn.read_response()
    finally:
        r.connection_pool.release(conn)
    if isinstance(reply, redis.ResponseError):
        raise reply
    return reply


def parsed(data: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(data)
    return reader.gets()


def test_command_info_record_bytes(raw: RawClient) -> None:
    # Exactly what redis-server 7.0.15 sends for this row.
    got = raw.call("COMMAND", "INFO", "client|id")
    if raw.protocol == 2:  # type: ignore[attr-defined]
        assert got == (b"*1\r\n*10\r\n$9\r\nclient|id\r\n:2\r\n*3\r\n+noscript\r\n+loading\r\n"
                       b"+stale\r\n:0\r\n:0\r\n:0\r\n*2\r\n+@slow\r\n+@connection\r\n*0\r\n*0\r\n*0\r\n")
    else:
        assert got == (b"*1\r\n*10\r\n$9\r\nclient|id\r\n:2\r\n~3\r\n+noscript\r\n+loading\r\n"
                       b"+stale\r\n:0\r\n:0\r\n:0\r\n~2\r\n+@slow\r\n+@connection\r\n~0\r\n~0\r\n~0\r\n")


def test_command_info_unknown_and_mixed(raw: RawClient) -> None:
    reply = parsed(raw.call("COMMAND", "INFO", "nosuch", "CLIENT|ID", "client|nosuch"))
    assert reply[0] is None and reply[2] is None
    assert reply[1][0] == b"client|id"


def test_command_info_container_lists_subcommands(raw: RawClient) -> None:
    (record,) = parsed(raw.call("COMMAND", "INFO", "client"))
    assert record[0] == b"client" and record[1] == -2
    names = {sub[0] for sub in record[9]}
    assert {b"client|kill", b"client|pause", b"client|reply"} <= names


def test_key_specs_of_a_keynum_command(raw: RawClient) -> None:
    (record,) = parsed(raw.call("COMMAND", "INFO", "eval"))
    assert record[2] == [b"noscript", b"stale", b"skip_monitor", b"no_mandatory_keys",
                         b"movablekeys"]
    assert record[3:6] == [0, 0, 0]
    (spec,) = record[8]
    if isinstance(spec, dict):  # RESP3 maps
        assert spec[b"find_keys"][b"spec"] == {b"keynumidx": 0, b"firstkey": 1, b"keystep": 1}
        return
    assert spec == [b"flags", [b"RW", b"access", b"update"],
                    b"begin_search", [b"type", b"index", b"spec", [b"index", 2]],
                    b"find_keys", [b"type", b"keynum", b"spec",
                                   [b"keynumidx", 0, b"firstkey", 1, b"keystep", 1]]]


def test_command_all_matches_count_and_list(rr: redis.Redis, raw: RawClient) -> None:
    everything = parsed(raw.call("COMMAND"))
    count = call(rr, "COMMAND", "COUNT")
    listed = call(rr, "COMMAND", "LIST")
    assert len(everything) == count
    top = {n for n in listed if b"|" not in n}
    assert {r[0] for r in everything} == top
    subs = {s[0] for r in everything for s in r[9]}
    assert subs == {n for n in listed if b"|" in n}


def test_command_docs_bytes(raw: RawClient) -> None:
    got = raw.call("COMMAND", "DOCS", "client|setname")
    head = b"*2\r\n" if raw.protocol == 2 else b"%1\r\n"  # type: ignore[attr-defined]
    inner = b"*10\r\n" if raw.protocol == 2 else b"%5\r\n"  # type: ignore[attr-defined]
    arg = b"*4\r\n" if raw.protocol == 2 else b"%2\r\n"  # type: ignore[attr-defined]
    assert got.startswith(head + b"$14\r\nclient|setname\r\n" + inner + b"$7\r\nsummary\r\n")
    assert got.endswith(b"$9\r\narguments\r\n*1\r\n" + arg + b"$4\r\nname\r\n$15\r\n"
                        b"connection-name\r\n$4\r\ntype\r\n$6\r\nstring\r\n")


def test_command_docs_fields(r3: redis.Redis) -> None:
    docs = call(r3, "COMMAND", "DOCS", "client", "nosuch")
    assert list(docs) == [b"client"]
    client = docs[b"client"]
    assert client[b"group"] == b"connection"
    kill = client[b"subcommands"][b"client|kill"]
    assert list(kill)[:4] == [b"summary", b"since", b"group", b"complexity"]
    (filter_arg,) = kill[b"arguments"]
    assert filter_arg[b"type"] == b"oneof"
    flags = call(r3, "COMMAND", "DOCS", "client|list")[b"client|list"][b"arguments"][1]
    assert flags[b"token"] == b"ID"
    assert set(flags[b"flags"]) == {b"optional", b"multiple"}


def test_command_docs_all_covers_every_command(rr: redis.Redis) -> None:
    docs = call(rr, "COMMAND", "DOCS")
    names = docs if isinstance(docs, dict) else dict(zip(docs[::2], docs[1::2], strict=True))
    assert len(names) == call(rr, "COMMAND", "COUNT")


def test_command_list_filters(rr: redis.Redis) -> None:
    connection = call(rr, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection")
    assert b"client|id" in connection and b"config|get" not in connection
    assert call(rr, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch") == []
    assert call(rr, "COMMAND", "LIST", "FILTERBY", "MODULE", "x") == []
    pattern = call(rr, "COMMAND", "LIST", "FILTERBY", "PATTERN", "COMMAND|*")
    assert sorted(pattern) == [b"command|count", b"command|docs", b"command|getkeys",
                               b"command|getkeysandflags", b"command|help", b"command|info",
                               b"command|list"]
    for bad in (["FILTERBY"], ["FILTERBY", "bogus", "x"], ["x", "y", "z"]):
        with pytest.raises(redis.ResponseError, match="syntax error"):
            call(rr, "COMMAND", "LIST", *bad)


def test_getkeys(rr: redis.Redis) -> None:
    assert call(rr, "COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b",
                              "x") == [b"a", b"b"]
    assert call(rr, "COMMAND", "GETKEYS", "eval", "s", "0") == []  # no_mandatory_keys
    assert call(rr, "COMMAND", "GETKEYS", "eval", "s", "5", "a") == []
    flags = call(rr, "COMMAND", "GETKEYSANDFLAGS", "EVAL_RO", "s", "1", "k")
    assert [[k, set(f)] for k, f in flags] == [[b"k", {b"RO", b"access"}]]
    for argv, error in ((["nosuch", "a"], INVALID_COMMAND),
                        (["client", "kill", "x"], NO_KEY_ARGUMENTS),
                        (["client", "nosuch", "x"], INVALID_COMMAND),
                        (["client", "id", "x"], NO_KEY_ARGUMENTS),
                        (["eval", "s"], INVALID_NUMBER_OF_ARGUMENTS)):
        with pytest.raises(redis.ResponseError) as e:
            call(rr, "COMMAND", "GETKEYS", *argv)
        assert str(e.value) == error.removeprefix("ERR "), argv


def test_getkeys_invalid_key_count(rr: redis.Redis) -> None:
    # FCALL's key count must be a number; a spec that does not fit is an error unless the
    # command may have no keys (FCALL may: no_mandatory_keys), as for EVAL above.
    assert call(rr, "COMMAND", "GETKEYS", "fcall", "f", "x") == []
    rows = [r for r in call(rr, "COMMAND", "LIST") if r == b"lmpop"]
    if rows:  # LMPOP has mandatory keys (lists family)
        with pytest.raises(redis.ResponseError, match=INVALID_ARGUMENTS.removeprefix("ERR ")):
            call(rr, "COMMAND", "GETKEYS", "lmpop", "0", "a", "left")


def test_command_help(rr: redis.Redis) -> None:
    lines = call(rr, "COMMAND", "HELP")
    assert lines[0].startswith(b"COMMAND <subcommand>")
    assert b"GETKEYSANDFLAGS <full-command>" in lines and lines[-2] == b"HELP"
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'NOSUCH'. Try COMMAND HELP."):
        call(rr, "COMMAND", "NOSUCH")
