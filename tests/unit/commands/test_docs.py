"""The syntax parser behind COMMAND DOCS (``sluice.commands.docs``)."""

from __future__ import annotations

import pytest

from sluice.commands import load_table
from sluice.commands.docs import Arg, SyntaxParseError, arg_reply, display, parse_syntax
from sluice.commands.introspection import doc_args, every_command
from sluice.protocol import Map, Set, SimpleString

XADD = ("key [NOMKSTREAM] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id> "
        "field value [field value ...]")
CLIENT_KILL = (
    "<ip:port | <[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | "
    "[USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME <YES | NO>] "
    "[[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | [USER username] | "
    "[ADDR ip:port] | [LADDR ip:port] | [SKIPME <YES | NO>] ...]>>"
)


@pytest.mark.parametrize(("syntax", "hint"), [
    # What redis-cli 7.0 shows for these commands against redis-server 7.0.15.
    (XADD, "key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value "
           "[field value ...]"),
    ("key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] "
     "[STORE destination]",
     "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA] "
     "[STORE destination]"),
    ("GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] "
     "id [id ...]",
     "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] "
     "id [id ...]"),
    ("key <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> "
     "| BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [WITHCOORD]",
     "key FROMMEMBER member|FROMLONLAT longitude latitude BYRADIUS radius M|KM|FT|MI|BYBOX "
     "width height M|KM|FT|MI [ASC|DESC] [COUNT count [ANY]] [WITHCOORD]"),
    ("key [FULL [COUNT count]]", "key [FULL [COUNT count]]"),
    ("script numkeys [key [key ...]] [arg [arg ...]]",
     "script numkeys [key [key ...]] [arg [arg ...]]"),
    ("[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]",
     "[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id [client-id ...]]"),
    ("key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | "
     "PXAT unix-time-milliseconds | KEEPTTL]",
     "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT "
     "unix-time-milliseconds|KEEPTTL]"),
    (CLIENT_KILL,
     "ip:port|[ID client-id]|[TYPE NORMAL|MASTER|SLAVE|REPLICA|PUBSUB]|[USER username]|"
     "[ADDR ip:port]|[LADDR ip:port]|[SKIPME YES|NO] [[ID client-id]|[TYPE NORMAL|MASTER|SLAVE|"
     "REPLICA|PUBSUB]|[USER username]|[ADDR ip:port]|[LADDR ip:port]|[SKIPME YES|NO] ...]"),
    ("", ""),
])
def test_hint_text(syntax: str, hint: str) -> None:
    assert display(parse_syntax(syntax, key_specs=2)) == hint


def test_xadd_structure() -> None:
    key, nomkstream, trim, id_, pairs = parse_syntax(XADD, key_specs=1)
    assert key == Arg("key", "key", key_spec_index=0)
    assert nomkstream == Arg("nomkstream", "pure-token", token="NOMKSTREAM", optional=True)
    assert trim.type == "block" and trim.optional and trim.token is None
    strategy, operator, threshold, limit = trim.args
    assert strategy.type == "oneof" and [a.token for a in strategy.args] == ["MAXLEN", "MINID"]
    assert operator.optional and [a.name for a in operator.args] == ["equal", "approximately"]
    assert threshold == Arg("threshold", "string")
    assert limit == Arg("count", "integer", token="LIMIT", optional=True)
    assert id_.type == "oneof" and id_.args[0] == Arg("auto_id", "pure-token", token="*")
    assert pairs == Arg("field_value", "block", multiple=True,
                        args=(Arg("field", "string"), Arg("value", "string")))


def test_tokens_own_their_values() -> None:
    count, block, streams = parse_syntax("[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] "
                                         "id [id ...]", key_specs=1)
    assert count == Arg("count", "integer", token="COUNT", optional=True)
    assert block == Arg("milliseconds", "integer", token="BLOCK", optional=True)
    assert streams.type == "block" and streams.token == "STREAMS"
    assert [(a.name, a.type, a.multiple) for a in streams.args] == [
        ("key", "key", True), ("id", "string", True)]


def test_multiple_token() -> None:
    (get,) = parse_syntax("[GET pattern [GET pattern ...]]")
    assert get == Arg("pattern", "pattern", token="GET", optional=True, multiple=True,
                      multiple_token=True)
    (keys,) = parse_syntax("[KEYS key [key ...]]", key_specs=1)
    assert keys.token == "KEYS" and keys.multiple and not keys.multiple_token


def test_repeated_oneof_folds_into_multiple() -> None:
    (kill,) = parse_syntax(CLIENT_KILL)
    old, new = kill.args
    assert old == Arg("ip:port", "string")
    assert new.type == "oneof" and new.multiple and not new.optional
    assert [a.token for a in new.args] == ["ID", "TYPE", "USER", "ADDR", "LADDR", "SKIPME"]
    assert all(a.optional for a in new.args)


def test_key_arguments_are_numbered_against_the_key_specs() -> None:
    args = parse_syntax("source destination member", key_specs=2)
    assert [(a.type, a.key_spec_index) for a in args] == [("key", 0), ("key", 1), ("string", -1)]
    # Without key specs nothing is a key (CLIENT KILL's "key" would not be one).
    assert parse_syntax("key", key_specs=0)[0].type == "string"


def test_timeout_type_follows_blocking() -> None:
    assert parse_syntax("timeout", blocking=True)[0].type == "double"
    assert parse_syntax("timeout", blocking=False)[0].type == "integer"


@pytest.mark.parametrize("bad", ["[a", "a]", "<a | b", "a | b", "[a | ]", "..."])
def test_malformed_syntax_is_refused(bad: str) -> None:
    with pytest.raises(SyntaxParseError):
        parse_syntax(bad)


def test_reply_shape() -> None:
    (arg,) = parse_syntax("[GET pattern [GET pattern ...]]")
    reply = arg_reply(arg)
    assert isinstance(reply, Map)
    assert list(reply) == [b"name", b"type", b"token", b"flags"]
    flags = reply[b"flags"]
    # redis-cli asserts these are status replies inside a set (or an array in RESP2)
    assert isinstance(flags, Set) and all(type(f) is SimpleString for f in flags)
    assert list(flags) == [b"optional", b"multiple", b"multiple_token"]
    (key,) = parse_syntax("key", key_specs=1)
    assert list(arg_reply(key)) == [b"name", b"type", b"key_spec_index"]
    (choice,) = parse_syntax("<ON | OFF>")
    assert [a[b"token"] for a in arg_reply(choice)[b"arguments"]] == [b"ON", b"OFF"]


@pytest.mark.parametrize("row", [c for c in every_command(load_table()) if c.syntax],
                         ids=lambda c: c.name)
def test_every_table_syntax_parses(row) -> None:  # type: ignore[no-untyped-def]
    args = doc_args(row)
    assert args, row.syntax

    def walk(a: Arg) -> None:
        assert a.name and a.type in ("string", "integer", "double", "key", "pattern",
                                     "unix-time", "pure-token", "oneof", "block")
        assert (a.type == "pure-token") <= (a.token is not None)
        assert bool(a.args) == (a.type in ("oneof", "block"))
        for sub in a.args:
            walk(sub)

    for a in args:
        walk(a)
